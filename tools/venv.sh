#!/usr/bin/env bash
# Creates (once) the Python environment that tools/ and bench/ scripts use.
# Usage: tools/venv.sh [--legacy] [extra requirements file]...; prints the venv's python path.
#   (default)  .venv/         the current stack, tools/requirements.txt
#   --legacy   .venv-legacy/  the pinned legacy stack, tools/requirements-legacy.txt (the
#              versions that saved the older fixtures; see each fixture's README)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
requirements="$root/tools/requirements.txt"
if [ "${1:-}" = "--legacy" ]; then
  shift
  venv="$root/.venv-legacy"
  requirements="$root/tools/requirements-legacy.txt"
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >&2
fi
stamp="$venv/.installed"
want=$(cat "$requirements" "$@" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/pip" install -q -r "$requirements" $(for f in "$@"; do echo -r "$f"; done) >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
