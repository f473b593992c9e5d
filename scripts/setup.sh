#!/usr/bin/env bash
# Installs the Debian packages mcinfer needs to build, test and fuzz (Debian 12), and the Arrow
# C++ libraries for Parquet (from the pyarrow wheel, in .venv-arrow: Debian 12 has no Arrow C++).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev ocl-icd-opencl-dev libsentencepiece-dev libpcre2-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  googletest libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin  # optional to build; rank 0 of an mpirun job merges, tested here
  clang libclang-rt-dev
  default-jre-headless  # Spark's tests: pyspark (from PyPI) runs on a JVM
  python3 python3-pip python3-venv python3-dev unzip ca-certificates  # dev, venv: the wheel
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Parquet (optional to build, as Open MPI is; CMake's MCINFER_ARROW finds it here): the Arrow C++
# headers and libraries the pyarrow wheel ships, used as pyarrow documents (CMake asks this Python
# for get_include and get_library_dirs and runs create_library_symlinks). The binaries find them
# by RPATH.
arrow_version=26.0.1
arrow_env="$root/.venv-arrow"
if ! "$arrow_env/bin/python" -c "import pyarrow, sys; sys.exit(pyarrow.__version__ != '$arrow_version')" \
  2>/dev/null; then
  python3 -m venv "$arrow_env"
  "$arrow_env/bin/pip" install -q --disable-pip-version-check "pyarrow==$arrow_version"
fi
