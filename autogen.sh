#!/bin/sh
# autogen.sh - generate ./configure and Makefile.in from configure.ac and
# Makefile.am. Needs autoconf and automake (Debian: autoconf automake).
set -e
cd "$(dirname "$0")"
autoreconf --install --force
