#!/usr/bin/env bash
# Build (if needed) and run every test: Check unit tests per module and end-to-end CLI tests.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build >/dev/null
ninja -C build
meson test -C build --print-errorlogs "$@"
