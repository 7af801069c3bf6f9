#!/usr/bin/env bash
# Run one libFuzzer harness of fuzz/ (issue 14) for SECONDS under ASan+UBSan:
#   scripts/fuzz.sh NAME SECONDS      NAME: strategy sweep merge workload trace cluster devices
#                                     chakra et
# Builds build-fuzz/ (clang, -Dfuzz=true) when needed. The seed corpus is the bundled examples
# and tests/data (fuzz/seeds.txt), read in place; what the fuzzer adds lives in
# build-fuzz/corpus/NAME. A crash, hang (10 s) or leak exits non-zero and leaves its input in
# fuzz/regressions/NAME/, which `meson test --suite fuzz` replays from then on (commit it).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/fuzz.sh NAME SECONDS}
seconds=${2:?usage: scripts/fuzz.sh NAME SECONDS}
seeds=$(awk -v n="$name" '$1 == n { $1 = ""; print }' fuzz/seeds.txt)
if [ -z "$seeds" ]; then
    echo "fuzz.sh: unknown harness '$name' ($(cut -d' ' -f1 fuzz/seeds.txt | tr '\n' ' '))" >&2
    exit 2
fi
if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
        -Db_lundef=false >/dev/null
fi
ninja -C build-fuzz "fuzz/fuzz_$name" >/dev/null
regressions=fuzz/regressions/$name
mkdir -p "build-fuzz/corpus/$name" "$regressions"
export PROTOSIM_DATA_DIR="$PWD"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "build-fuzz/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$regressions/" \
    "build-fuzz/corpus/$name" "$regressions" $seeds
