# SPDX-License-Identifier: MIT
# What a shell test needs, sourced by the tests that need more than the
# build (tests/alerts.sh, the dashboard tests, the storm lab's tests):
#
#   . "$top/tests/require.sh"
#   ms_require NAME TOOL...       every TOOL a command on the PATH
#   ms_require_root NAME WHY      running as root, WHY it is needed
#   ms_skip NAME WHY              cannot run here, WHY in one line
#
# A test that lacks something is skipped outside CI: one line saying what
# is missing and how to get it, exit 77 (automake's SKIP).  With
# MS_REQUIRE_ALL=1 in the environment (.ci/run and scripts/test.sh, which
# install everything first) nothing may be left out: exit 99 (automake's
# ERROR).  tests/harness.py does the same for the Python tests.

# Debian keeps daemons (collectd, php-fpm, haproxy, nginx) in /usr/sbin,
# which a normal user's PATH lacks.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin ;; esac
case ":$PATH:" in *:/sbin:*) ;; *) PATH=$PATH:/sbin ;; esac
export PATH

ms_skip() {
  if [ "${MS_REQUIRE_ALL:-}" = 1 ]; then
    echo "$1: ERROR: $2 (MS_REQUIRE_ALL=1: every test must run)"
    exit 99
  fi
  echo "$1: SKIP: $2"
  exit 77
}

ms_require() {
  ms_name=$1
  shift
  for ms_tool in "$@"; do
    command -v "$ms_tool" >/dev/null 2>&1 ||
      ms_skip "$ms_name" "$ms_tool not found: scripts/install-deps.sh --test installs it"
  done
}

ms_require_root() {
  [ "$(id -u)" -eq 0 ] || ms_skip "$1" "needs root: $2"
}
