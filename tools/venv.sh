#!/usr/bin/env bash
# Creates (once) the Python environment that tools/ and bench/ scripts use: .venv at the repo root.
# Usage: tools/venv.sh [extra requirements file]...; prints the venv's python path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >&2
fi
stamp="$venv/.installed"
want=$(cat "$root/tools/requirements.txt" "$@" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/pip" install -q -r "$root/tools/requirements.txt" $(for f in "$@"; do echo -r "$f"; done) >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
