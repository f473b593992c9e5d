#!/usr/bin/env bash
# Builds the mcinfer wheel with PYTHON (default python3) and repairs it with auditwheel: oneDNN,
# OpenMP, sentencepiece, PCRE2 and fmt from Debian's packages are copied into the wheel (mcinfer.libs/),
# so it installs on a machine that has none of them. Prints the repaired wheel's path.
#   scripts/wheel.sh [PYTHON]      -> wheelhouse/mcinfer-VERSION-TAG-manylinux_2_XX_x86_64.whl
# CPython 3.12 and later build one abi3 wheel that serves them all; older versions their own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-python3}
"$root/scripts/setup.sh" >&2  # the Debian packages the build links (and bundles)
version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
env="$root/build/python/venv-build-$version"
if [ ! -x "$env/bin/python" ]; then
  "$python" -m venv "$env" >&2
fi
stamp="$env/.installed"
want=$(sha256sum "$root/python/requirements-build.txt" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$env/bin/pip" install -q -r "$root/python/requirements-build.txt" >&2
  echo "$want" >"$stamp"
fi
dist="$root/build/python/dist-$version"
rm -rf "$dist"
# --no-build-isolation: the build environment above holds the pinned build tools.
(cd "$root" && "$env/bin/pip" wheel . --no-build-isolation --no-deps -w "$dist" >&2)
built=$(ls "$dist"/mcinfer-*.whl)
mkdir -p "$root/wheelhouse"
PATH="$env/bin:$PATH" "$env/bin/auditwheel" repair "$built" -w "$root/wheelhouse" >&2
# auditwheel names the most compatible tag it could give; the wheel it wrote has that name.
tags=$(basename "$built" .whl | cut -d- -f3-4)
ls -t "$root"/wheelhouse/mcinfer-*-"$tags"-manylinux_*.whl | head -1
