#!/bin/sh
# Installs wrk, the HTTP load generator that drives compare's W10 (an HTTP
# service under load), from the Debian/Ubuntu package, when it is missing.
# W10 is skipped with a message where wrk is absent; CI's smoke run
# (`compare --quick`) never needs it.
#
#   sh bench/scripts/install-wrk.sh        # as root, or with sudo available
set -eu

if command -v wrk >/dev/null 2>&1; then
    echo "wrk already installed: $(command -v wrk)"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "no apt-get here: install wrk with your system's package manager" >&2
    echo "(https://github.com/wg/wrk), then run compare with --workloads w10" >&2
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

# A fresh container has no package lists: fetch them once, then install.
if ! $SUDO apt-get install -y wrk; then
    $SUDO apt-get update
    $SUDO apt-get install -y wrk
fi
command -v wrk >/dev/null 2>&1 || { echo "wrk did not install" >&2; exit 1; }
echo "wrk installed: $(command -v wrk)"
