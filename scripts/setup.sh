#!/usr/bin/env bash
# Installs the Debian packages mcinfer needs to build, test and fuzz (Debian 12).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev ocl-icd-opencl-dev libsentencepiece-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  googletest libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin  # optional to build; rank 0 of an mpirun job merges, tested here
  clang libclang-rt-dev
  python3 python3-pip python3-venv python3-dev unzip ca-certificates  # dev, venv: the wheel
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
