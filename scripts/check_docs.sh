#!/usr/bin/env bash
# Docs and code agree (run by ctest as check_docs; usage: check_docs.sh REPO_ROOT MCINFER_BINARY):
#  - every flag README's "Commands" block shows for a subcommand is one that `mcinfer <cmd> --help`
#    lists, and every subcommand it names exists;
#  - the fp32 attention crossover docs/ARCHITECTURE.md states is kOwnAttentionMaxLen in the code;
#  - every layer docs/CONTRIBUTING.md names in its dependency rule is a folder of the tree;
#  - every MCINFER_* CMake option or cache variable is used somewhere besides its declaration, and
#    every MCINFER_* CMake name the docs mention is declared.
set -euo pipefail
root=${1:?repository root}
mcinfer=${2:?mcinfer binary}
failures=0
complain() {
  echo "check_docs: $*" >&2
  failures=$((failures + 1))
}

# README: the fenced block after "## Commands", lines "mcinfer CMD ..." and their continuations.
block=$(awk '/^## Commands/{f=1; next} f && /^```/{n++; if (n==2) exit; next} f && n==1' "$root/README.md")
[ -n "$block" ] || complain "README.md: no Commands block"
cmd=""
while IFS= read -r line; do
  if [[ $line =~ ^mcinfer\ ([a-z]+) ]]; then
    cmd=${BASH_REMATCH[1]}
    help=$("$mcinfer" "$cmd" --help 2>&1) || complain "README.md: 'mcinfer $cmd' is not a subcommand"
  fi
  [ -n "$cmd" ] || continue
  for flag in $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$line" | sort -u); do
    grep -qE -- "(^|[ ,!}])$flag([ ,={]|$)" <<<"$help" ||
      complain "README.md: 'mcinfer $cmd' shows $flag, which its --help does not list"
  done
done <<<"$block"

# ARCHITECTURE: "up to N tokens our fused kernel" against the constant.
stated=$(grep -oE 'up to [0-9]+ tokens our fused kernel' "$root/docs/ARCHITECTURE.md" | grep -oE '[0-9]+' | head -1 || true)
actual=$(grep -oE 'kOwnAttentionMaxLen = [0-9]+' "$root/src/backends/cpu/attention.h" | grep -oE '[0-9]+$' || true)
[ -n "$stated" ] && [ -n "$actual" ] ||
  complain "could not find the attention crossover in docs/ARCHITECTURE.md or src/backends/cpu/attention.h"
[ "$stated" = "$actual" ] ||
  complain "docs/ARCHITECTURE.md says our fused attention runs up to $stated tokens; attention.h says $actual"

# CONTRIBUTING: the layers of the dependency rule exist.
rule=$(grep -m1 'Layers point one way' "$root/docs/CONTRIBUTING.md" || true)
[ -n "$rule" ] || complain "docs/CONTRIBUTING.md: no 'Layers point one way' rule"
for layer in $(grep -oE '`[a-z/]+`' <<<"$rule" | tr -d '`'); do
  if [ ! -d "$root/src/$layer" ] && [ ! -d "$root/$layer" ]; then
    complain "docs/CONTRIBUTING.md names layer '$layer', which is no folder of src/ or the tree"
  fi
done

# CMake: MCINFER_* options declared and used; those the docs name exist.
cmake_files=$(find "$root" \( -name .git -o -name '.venv*' -o -name 'build*' -o -name models -o -name work \) -prune \
  -o -name CMakeLists.txt -print)
declared=$(grep -hoE '(option|set)\((MCINFER_[A-Z_]+)' $cmake_files | grep -oE 'MCINFER_[A-Z_]+' | sort -u)
for name in $declared; do
  uses=$(grep -hoE "\\\$\\{$name\\}|if\\((NOT )?$name\\b|\\b$name\\)" $cmake_files | wc -l)
  [ "$uses" -gt 0 ] || complain "CMake declares $name but nothing uses it"
done
for name in $(grep -hoE -- '-DMCINFER_[A-Z_]+' "$root/README.md" "$root"/docs/*.md "$root"/scripts/*.sh "$root/.ci/run" 2>/dev/null | sed 's/^-D//' | sort -u); do
  grep -qx "$name" <<<"$declared" || complain "$name is passed to CMake by docs or scripts but not declared"
done

if [ "$failures" -gt 0 ]; then
  echo "check_docs: $failures disagreement(s) between docs and code" >&2
  exit 1
fi
echo "check_docs: README commands, attention crossover, layers and CMake options agree"
