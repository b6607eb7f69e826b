#!/bin/sh
# The main job on the bundled default.  Until the plugin lands this runs the
# model's unit tests, which print the accuracy against the references and the
# tipping and recovery loads of the test services.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh
scripts/build.sh build
make -C build tests/check_model >/dev/null
build/tests/check_model
