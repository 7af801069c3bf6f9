#!/usr/bin/env bash
# Install protosim's Debian packages (needs root or sudo) and build it into build/.
# Packages: SimGrid 3.32 (network/compute engine), cJSON (reports, traces), zlib (gzip traces),
# libyaml (strategy files), hwloc (topology import), libxml2 (platform files checked before
# SimGrid reads them), protobuf-c and its compiler (Chakra execution traces), Check (unit
# tests), meson + ninja (build), a C/C++ compiler, and clang with libclang-rt-dev (libFuzzer
# and the sanitizer runtimes: scripts/fuzz.sh), and python3 for the validation and calibration
# scripts (scripts/validate, scripts/fit_*).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
packages="build-essential g++ pkg-config meson ninja-build libsimgrid-dev libcjson-dev libyaml-dev zlib1g-dev
          libhwloc-dev libxml2-dev libprotobuf-c-dev protobuf-c-compiler check clang libclang-rt-dev
          python3"
if [ "${1:-}" = "--packages" ]; then     # the list alone, for .ci/run
    echo $packages
    exit 0
fi
missing=$(for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
# Configure once. A build/ without build.ninja is what a configure that failed leaves: start it
# again. meson's own output is shown when configuring fails, kept out of the way when it works.
if [ ! -f build/build.ninja ]; then
    rm -rf build
    log=$(mktemp)
    if ! meson setup build >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "setup.sh: meson setup failed (its output above); fix it and run setup.sh again" >&2
        exit 1
    fi
    rm -f "$log"
fi
ninja -C build
