#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what the storm lab needs on Debian 12: the build's packages and
# the lab's (scripts/install-deps.sh --lab, which lists them: HAProxy 2.6,
# nginx-light, php8.2-fpm, gunicorn, httperf, socat, curl and the libraries of
# collectd's curl_json and nginx plugins).  Their Debian services are not
# started: the lab starts its own.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
exec "$top/scripts/install-deps.sh" --lab
