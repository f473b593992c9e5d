#!/usr/bin/env bash
# Configures and builds mcinfer (Release) in build/. Extra arguments go to CMake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MCINFER_BUILD_DIR:-$root/build}"
# MCINFER_CMAKE_ARGS: extra CMake options, e.g. "-DMCINFER_SANITIZE=address,undefined".
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${MCINFER_CMAKE_ARGS:-} "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
