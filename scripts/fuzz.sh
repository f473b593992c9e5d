#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for N seconds (default 30)
# on its committed seed corpus. Usage: scripts/fuzz.sh [seconds] [target-name-filter]
# MCINFER_FUZZ_BUILD_DIR may name a tree already configured with -DMCINFER_FUZZ=ON (CI's ASan
# tree, tests included): it is used as it is, only the fuzz targets are brought up to date.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds="${1:-30}"
filter="${2:-}"
build="${MCINFER_FUZZ_BUILD_DIR:-$root/build-fuzz}"
if ! grep -qx 'MCINFER_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  CXX=clang++ CC=clang cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMCINFER_FUZZ=ON -DMCINFER_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target fuzzers
# One target per core at a time: each is a single process, so on CI's 2 cores this halves the wall
# time of the runs (8 targets: about 2 min instead of 4) with the same seconds per target.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run_one() { # TARGET NAME
  local work
  work=$(mktemp -d)
  cp -r "$root/tests/fuzz/corpus/$2/." "$work/" 2>/dev/null || true
  if (cd "$root" && "$1" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 "$work" >"$logs/$2.log" 2>&1); then
    echo 0 >"$logs/$2.rc"
  else
    echo $? >"$logs/$2.rc"
  fi
  rm -rf "$work"
}
names=()
for target in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  [[ -z "$filter" || "$name" == *"$filter"* ]] || continue
  names+=("$name")
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  run_one "$target" "$name" &
done
wait
status=0
for name in "${names[@]}"; do
  echo "== $name for ${seconds}s"
  tail -n 12 "$logs/$name.log"
  if [ "$(cat "$logs/$name.rc" 2>/dev/null)" != 0 ]; then
    echo "FUZZ FAILURE in $name (exit status $(cat "$logs/$name.rc" 2>/dev/null || echo unknown))"
    status=1
  fi
done
exit $status
