#!/usr/bin/env bash
# ThreadSanitizer pass over the concurrent parts: the schedules and queues (sched_test) and whole
# multi-replica runs, resumes and kills through the CLI (run_cli_test, resume_cli_test), and
# chunked runs whose windows of one row meet in the shared WindowMerger (chunk_cli_test).
# Replicas run one thread each here: libgomp is not instrumented, so multi-threaded replicas
# would only produce false reports. Assertions stay on (MCINFER_ASSERTIONS defaults to ON in
# sanitizer builds; build_config_test checks it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MCINFER_TSAN_BUILD_DIR:-$root/build-tsan}"
minilm=$("$root/scripts/get_minilm.sh")
export MCINFER_MINILM_DIR="$minilm"
export MCINFER_REQUIRE_MINILM=1
# The CLI tests only spawn the binary under test: they come from the Release tree (built there if
# missing), and only the library, its scheduler test and the CLI are built with TSan.
tests="${MCINFER_BUILD_DIR:-$root/build}"
# -O2 with line tables only (-g1): TSan's reports name functions and lines, and the build skips
# full debug info (RelWithDebInfo's -g), a fifth of its compile time.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -g1" \
  -DMCINFER_SANITIZE=thread -DMCINFER_CLI_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target build_config_test sched_test mcinfer
MCINFER_BUILD_TARGETS="run_cli_test resume_cli_test chunk_cli_test" "$root/scripts/build.sh"
export TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}"
export MCINFER_CLI="$build/tools/mcinfer/mcinfer"
"$MCINFER_CLI" --version | grep -q "sanitizers: thread" || {
  echo "scripts/tsan.sh: $MCINFER_CLI is not a ThreadSanitizer build" >&2
  exit 1
}
# Two gtest shards of each binary at once: a test mostly waits on one instrumented CLI process,
# so on 2 cores the shards halve the wall time (run_cli_test 92 s, resume_cli_test 126 s and
# chunk_cli_test 51 s one after the other on an AMD EPYC, 2026-12-02).
sharded() { # BINARY
  local logs status=0
  logs=$(mktemp -d)
  for shard in 0 1; do
    GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard "$1" >"$logs/$shard.log" 2>&1 &
  done
  for job in $(jobs -p); do wait "$job" || status=1; done
  cat "$logs/0.log" "$logs/1.log"
  rm -rf "$logs"
  return "$status"
}
"$build/tests/build_config_test"
"$build/src/sched/sched_test"
sharded "$tests/tests/e2e/run_cli_test"
sharded "$tests/tests/e2e/resume_cli_test"
sharded "$tests/tests/e2e/chunk_cli_test"
