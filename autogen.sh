#!/bin/sh
# SPDX-License-Identifier: MIT
# Generate configure and Makefile.in (needs autoconf, automake, libtool,
# pkg-config: Debian packages of the same names).
set -e
cd "$(dirname "$0")"
mkdir -p m4
autoreconf --install --force
