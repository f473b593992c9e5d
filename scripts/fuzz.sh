#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for N seconds (default 30)
# on its committed seed corpus. Usage: scripts/fuzz.sh [seconds] [target-name-filter]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds="${1:-30}"
filter="${2:-}"
build="${MCINFER_FUZZ_BUILD_DIR:-$root/build-fuzz}"
CXX=clang++ CC=clang cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMCINFER_FUZZ=ON -DMCINFER_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)"
status=0
for target in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  [[ -z "$filter" || "$name" == *"$filter"* ]] || continue
  work=$(mktemp -d)
  cp -r "$root/tests/fuzz/corpus/$name/." "$work/" 2>/dev/null || true
  echo "== $name for ${seconds}s"
  if ! (cd "$root" && "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -print_final_stats=1 "$work" 2>&1 | tail -n 12); then
    echo "FUZZ FAILURE in $name"
    status=1
  fi
  rm -rf "$work"
done
exit $status
