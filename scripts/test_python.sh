#!/usr/bin/env bash
# The Python package's tests, as a user meets the package: the repaired wheel (scripts/wheel.sh)
# installed with `pip install --no-index` (its one dependency, numpy, from a local download)
# into a fresh virtual environment of each Python given, then python/tests run from an empty
# directory, so that the package imported is the installed one, never the source tree.
#   scripts/test_python.sh [PYTHON_OR_VERSION...]   default: python3; "3.12" finds python3.12 on
#   PATH or pyenv's newest 3.12.x
# The engines' tests (Ray's two-node cluster, Spark) run with the first Python only: they test
# mcinfer.ray and mcinfer.spark, pure Python over Model, and take a minute and a half a pass; the
# others test the same abi3 wheel. pyspark (450 MB of Spark's jars) is installed there only, with
# MCINFER_REQUIRE_SPARK=1 so that Spark's tests fail rather than skip; MCINFER_SPARK_TESTS=0
# leaves them out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
find_python() { # NAME: a path, a command, or X.Y (python X.Y on PATH, else pyenv's newest X.Y.z)
  local name=$1 candidate
  local candidates=("$name")
  if [[ $name =~ ^[0-9]+\.[0-9]+$ ]]; then
    candidates=("python$name")
    if command -v pyenv >/dev/null; then
      candidates+=("$(ls -d "$(pyenv root)/versions/$name".* 2>/dev/null | sort -V | tail -1)/bin/python$name")
    fi
  fi
  # pyenv's shims exist for versions that are not selected, and fail when run: try each.
  for candidate in "${candidates[@]}"; do
    if "$candidate" -c 'import sys' >/dev/null 2>&1; then
      command -v "$candidate"
      return
    fi
  done
  echo "scripts/test_python.sh: no Python '$name' on this machine (tried ${candidates[*]})" >&2
  exit 1
}
minilm=$("$root/scripts/get_minilm.sh")
[ $# -gt 0 ] || set -- python3
abi3_wheel=""
for name in "$@"; do
  python=$(find_python "$name")
  version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  echo "== Python $version ($python)"
  # One abi3 wheel serves every CPython from 3.12 on: built once per invocation.
  if [ "$(printf '%s\n3.12\n' "$version" | sort -V | head -1)" = 3.12 ]; then
    [ -n "$abi3_wheel" ] || abi3_wheel=$("$root/scripts/wheel.sh" "$python")
    wheel=$abi3_wheel
  else
    wheel=$("$root/scripts/wheel.sh" "$python")
  fi
  echo "wheel: $(basename "$wheel")"
  env="$root/build/python/venv-test-$version"
  deps="$root/build/python/deps-$version"
  rm -rf "$env"
  "$python" -m venv "$env"
  "$env/bin/pip" download -q --only-binary=:all: -d "$deps" numpy
  "$env/bin/pip" install -q --no-index --find-links "$deps" "$wheel"
  "$env/bin/pip" install -q -r "$root/python/requirements-test.txt"
  engines=(--ignore "$root/python/tests/test_spark.py" --ignore "$root/python/tests/test_ray.py")
  spark=0
  if [ -z "${engines_python:-}" ]; then
    engines_python=$version
    engines=()
    if [ "${MCINFER_SPARK_TESTS:-1}" = 1 ]; then
      "$env/bin/pip" install -q -r "$root/python/requirements-spark.txt"
      spark=1
    else
      engines=(--ignore "$root/python/tests/test_spark.py")
    fi
  fi
  empty=$(mktemp -d)
  # The CLI tests that write Parquet need a CLI built with Arrow (the wheel's console script is
  # not): the build tree's, when it has one that says so (MCINFER_CLI given wins).
  cli="${MCINFER_CLI:-}"
  tree_cli="${MCINFER_BUILD_DIR:-$root/build}/tools/mcinfer/mcinfer"
  if [ -z "$cli" ] && [ -x "$tree_cli" ] && "$tree_cli" --version | grep -q "Arrow"; then
    cli=$tree_cli
  fi
  (cd "$empty" && MCINFER_MINILM_DIR="$minilm" MCINFER_SOURCE_TREE="$root" MCINFER_CLI="$cli" \
    MCINFER_REQUIRE_SPARK=$spark \
    "$env/bin/python" -m pytest -q -p no:cacheprovider "${engines[@]}" "$root/python/tests")
  rm -rf "$empty"
done
