# Sourced by the tests in this folder: the repository root, a scratch folder removed on exit,
# and fail() to count failures (each test exits non-zero when $failures > 0).
root=$(cd "$(dirname "${BASH_SOURCE[1]}")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
