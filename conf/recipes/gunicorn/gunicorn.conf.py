# SPDX-License-Identifier: MIT
# collectd-metastable recipe: a gunicorn pool's settings and its statsd
# output into collectd's statsd plugin (doc/recipes.md, "gunicorn").
#   gunicorn -c /etc/gunicorn/app.conf.py app:application
# The same file on every instance of the pool: the same statsd_prefix sums
# their counters and merges their timers in collectd.
bind = "0.0.0.0:8000"
worker_class = "sync"  # one request at a time per worker
workers = 4            # x instances: the service's servers
backlog = 2048         # the accept queue, waiting for a free worker
timeout = 30           # a worker this long on one request is restarted
statsd_host = "127.0.0.1:8125"  # collectd's statsd plugin
statsd_prefix = "app"
