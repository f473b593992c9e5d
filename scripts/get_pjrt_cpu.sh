#!/usr/bin/env bash
# Obtains XLA's CPU PJRT plugin from PyPI (package xla-cpu-pjrt, pinned by version and sha256):
# the plugin the PJRT backend's tests run on (`--backend pjrt --plugin cpu`). Only the plugin's
# .so is kept, under $MCINFER_CACHE (default models/.cache); nothing is installed into Python.
# Prints the plugin's path on stdout; everything else goes to stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=0.0.1
sha256=55837b6b7b47daa717f2d9a5a03563ea0ceaa338d06a81a1e2d3f060d960decc
cache="${MCINFER_CACHE:-$root/models/.cache}"
dest="$cache/pjrt/xla_cpu_pjrt-$version"
plugin="$dest/xla_cpu_pjrt.so"
die() {
  echo "get_pjrt_cpu.sh: $*" >&2
  exit 1
}

if [ -f "$plugin" ] && [ -f "$dest/.from-$sha256" ]; then
  echo "$plugin"
  exit 0
fi
mkdir -p "$cache/pjrt"
wheel="$cache/pjrt/xla_cpu_pjrt-$version-py3-none-manylinux_2_27_x86_64.whl"
if [ ! -f "$wheel" ] || ! echo "$sha256  $wheel" | sha256sum -c --status; then
  python3 -m pip download -q --no-deps --no-cache-dir --only-binary=:all: \
    --platform manylinux_2_27_x86_64 "xla-cpu-pjrt==$version" -d "$cache/pjrt" >&2 ||
    die "could not download xla-cpu-pjrt==$version from PyPI into $cache/pjrt (pip failed, see above)"
fi
echo "$sha256  $wheel" | sha256sum -c --status || die "sha256 mismatch for $wheel (expected $sha256)"
tmp=$(mktemp -d "$cache/pjrt/.unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unzip -q "$wheel" 'xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so' -d "$tmp" || die "could not unpack $wheel"
mkdir -p "$tmp/out"
mv "$tmp/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so" "$tmp/out/"
touch "$tmp/out/.from-$sha256"
rm -rf "$dest"
mv "$tmp/out" "$dest"
echo "$plugin"
