#!/usr/bin/env bash
# Configures and builds mcinfer (Release) in build/. Extra arguments go to CMake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MCINFER_BUILD_DIR:-$root/build}"
# MCINFER_CMAKE_ARGS: extra CMake options, e.g. "-DMCINFER_SANITIZE=address,undefined".
# MCINFER_BUILD_TARGETS: build only these targets (e.g. "mcinfer"); default: everything.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${MCINFER_CMAKE_ARGS:-} "$@" >/dev/null
targets=()
for t in ${MCINFER_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j"$(nproc)" "${targets[@]}"
