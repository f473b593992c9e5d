#!/usr/bin/env bash
# Creates (once) the Python environment that tools/ and bench/ scripts use.
# Usage: tools/venv.sh [--legacy|--st53] [extra requirements file]...; prints the venv's python
# path.
#   (default)  .venv/         the current stack, tools/requirements.txt
#   --legacy   .venv-legacy/  the pinned legacy stack, tools/requirements-legacy.txt (the
#              versions that saved the older fixtures; see each fixture's README)
#   --st53     .venv-st53/    sentence-transformers 5.3, tools/requirements-st53.txt (the last
#              plain-transformers cross-encoder layout; tools/gen_ce_fixtures.py)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
requirements="$root/tools/requirements.txt"
if [ "${1:-}" = "--legacy" ]; then
  shift
  venv="$root/.venv-legacy"
  requirements="$root/tools/requirements-legacy.txt"
elif [ "${1:-}" = "--st53" ]; then
  shift
  venv="$root/.venv-st53"
  requirements="$root/tools/requirements-st53.txt"
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
