#!/usr/bin/env bash
# scripts/check_tree.sh against throw-away git repositories: a clean tree passes; each way of
# pointing outside the repository (the .venv symlink of issue 11 among them) fails and is named.
# The bad paths are assembled at run time so that this file itself passes the check.
set -euo pipefail
source "$(dirname "$0")/common.sh"
check="$root/scripts/check_tree.sh"
commit_all() {
  git -C "$1" add -A
  git -C "$1" -c user.name=test -c user.email=test@example.invalid commit -q -m test
}
# A clean repository: relative links that stay inside, and paths that only look absolute.
new_repo() {
  local r="$tmp/$1"
  git init -q "$r"
  mkdir -p "$r/docs/sub" "$r/bench/work"
  printf 'see docs\n' >"$r/docs/a.md"
  ln -s ../a.md "$r/docs/sub/up.md"
  ln -s docs "$r/docs-link"
  cat >"$r/notes.md" <<'EOF'
#!/usr/bin/env bash
python3 bench/gen.py --out /tmp/t.csv          # a file directly in tmp: generic
cache="${MCINFER_CACHE:-$HOME/.cache/mcinfer}"  # relative to a variable
url=https://example.org/home/page               # part of a URL
EOF
  # Built here, not written out: paths under ~ or a variable only look absolute.
  printf 'ls bench/%s/models ~/%s/x "$root/%s/y"   # not absolute\n' work work work >>"$r/notes.md"
  commit_all "$r"
  echo "$r"
}
expect_pass() { # NAME REPO
  local out
  if ! out=$("$check" "$2" 2>&1); then fail "$1: check failed on a clean tree: $out"; fi
}
expect_fail() { # NAME REPO EXPECTED-TEXT
  local out rc=0
  out=$("$check" "$2" 2>&1) || rc=$?
  [ "$rc" -eq 1 ] || fail "$1: exit status $rc, want 1 (output: $out)"
  grep -qF -- "$3" <<<"$out" || fail "$1: output does not contain '$3': $out"
}

clean=$(new_repo clean)
expect_pass clean "$clean"

# The committed .venv of issue 11 pointed at the build machine's venv folder.
r=$(new_repo venv)
ln -s "$(printf '/%s/%s' work venv)" "$r/.venv"
commit_all "$r"
expect_fail venv-symlink "$r" ".venv: symlink to the absolute path"

r=$(new_repo escape)
ln -s ../../outside.txt "$r/docs/out.txt"
commit_all "$r"
expect_fail relative-escape "$r" "docs/out.txt: symlink to ../../outside.txt, which resolves outside"

# A link to an in-repository link that leaves the repository.
r=$(new_repo chain)
ln -s .. "$r/parent"
ln -s parent/elsewhere "$r/hop"
commit_all "$r"
expect_fail chain "$r" "hop: symlink to parent/elsewhere, which resolves outside"

plant() { # NAME TEXT EXPECTED
  local r
  r=$(new_repo "$1")
  printf 'run it from %s please\n' "$2" >>"$r/docs/a.md"
  commit_all "$r"
  expect_fail "$1" "$r" "$3"
}
plant work "$(printf '/%s/wt-ci/build/mcinfer' work)" "docs/a.md:2:"
plant home "\"$(printf '/%s/alice/models' home)\"" "names an absolute path of a build machine"
plant root "HOME=$(printf '/%s/.cache' root)" "names an absolute path of a build machine"
plant users "$(printf 'file:///%s/bob/x' Users)" "names an absolute path of a build machine"
plant tmpdir "$(printf '/%s/tmp.Xa91/build/' tmp)" "names an absolute path of a build machine"

# The checkout's own absolute path, wherever it lives.
r=$(new_repo own)
printf 'built in %s/out\n' "$(realpath "$r")" >>"$r/docs/a.md"
commit_all "$r"
expect_fail own-path "$r" "names this checkout's absolute path"

# Only committed content counts: an untracked bad symlink is not the check's business.
r=$(new_repo untracked)
ln -s "$(printf '/%s/%s' work venv)" "$r/.venv"
expect_pass untracked "$r"

mkdir "$tmp/plain"
out=$(GIT_CEILING_DIRECTORIES="$tmp" "$check" "$tmp/plain" 2>&1) && rc=0 || rc=$?
[ "$rc" -eq 77 ] || fail "not-a-checkout: exit status $rc, want 77 ($out)"

if [ "$failures" -ne 0 ]; then
  echo "check_tree_test: $failures failure(s)" >&2
  exit 1
fi
echo "check_tree_test: all cases behave"
