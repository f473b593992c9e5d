#!/usr/bin/env bash
# Nothing committed may point outside the repository (issue 11: a committed .venv was a symlink to
# a folder of the build machine). Checks the files git tracks (the index):
#  1. every symlink resolves inside the repository (no absolute target, no way out through ..);
#  2. no text file names an absolute path of a build machine: a path below the top-level folders
#     work, home, root or Users, a folder below tmp (a file directly in tmp, as in an example
#     command, is generic), or this checkout's own absolute path.
# Usage: scripts/check_tree.sh [REPO]   (default: the checkout holding this script)
# Exit 0 when clean, 1 with one line per offence, 77 when REPO is not a git checkout.
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
if ! top=$(git -C "$repo" rev-parse --show-toplevel 2>/dev/null); then
  echo "check_tree.sh: $repo is not a git checkout; nothing is committed to check" >&2
  exit 77
fi
top=$(realpath "$top")
cd "$top"
bad=0
offence() {
  echo "check_tree.sh: $*" >&2
  bad=1
}

links=0
while IFS= read -r -d '' entry; do
  meta=${entry%%$'\t'*}
  path=${entry#*$'\t'}
  [ "${meta%% *}" = 120000 ] || continue
  links=$((links + 1))
  read -r _ sha _ <<<"$meta"
  target=$(git cat-file blob "$sha")
  if [[ "$target" == /* ]]; then
    offence "$path: symlink to the absolute path $target"
    continue
  fi
  resolved=$(realpath -m -- "$top/$(dirname -- "$path")/$target")
  [[ "$resolved" == "$top" || "$resolved" == "$top"/* ]] ||
    offence "$path: symlink to $target, which resolves outside the repository ($resolved)"
done < <(git ls-files -s -z)

# A path starts after a line start, a blank, a quote, a bracket or one of =:,;|<> (or file://):
# bench/work/x or $HOME/x are not absolute paths.
start='(?:^|(?<=[\s"'"'"'`(\[{=:,;|<>])|(?<=file://))'
machine="$start(?:/(?:work|home|root|Users)/[\w.@+-]+|/tmp/[\w.@+-]+/)"
while IFS= read -r hit; do
  offence "$hit: names an absolute path of a build machine"
done < <(git grep -I -n -o -P -e "$machine" || true)
for own in "$top" "$(cd "$repo" && pwd)"; do
  [ "$own" != / ] || continue
  while IFS= read -r hit; do
    offence "$hit: names this checkout's absolute path"
  done < <(git grep -I -n -o -P -e "$start\\Q$own\\E(?![\\w.@+-])" || true)
done

files=$(git ls-files | wc -l)
if [ "$bad" -ne 0 ]; then
  echo "check_tree.sh: committed files must not point outside the repository (see above)" >&2
  exit 1
fi
echo "check_tree.sh: $files files, $links symlinks: nothing points outside the repository"
