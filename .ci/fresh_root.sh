#!/usr/bin/env bash
# The README's first command on a machine that has nothing: a fresh Debian 12 root (debootstrap,
# minbase) in a folder, a clone of this checkout's HEAD in it, and the first line of README.md's
# "Quick start" block run there exactly as written. A package that scripts/setup.sh forgets to
# install fails here (issue 11: CI stayed green only because the build machine already had it).
#
# Only the host's network and trust configuration goes into the root: resolv.conf, its Debian 12
# apt sources and apt "Acquire::" settings, the CA bundle, and the PIP_*/SSL_*/REQUESTS_CA_BUNDLE/
# CURL_CA_BUNDLE/proxy variables; no package, no cache, no build output.
#
# Usage (root; needs debootstrap): .ci/fresh_root.sh
#   MCINFER_FRESH_KEEP=1  keep the root afterwards (its path is printed); by default the work
#                         folder (a new one under $TMPDIR or /tmp) is removed at the end
#   MCINFER_FRESH_BUILD_ENV="CXX CCACHE_DIR ..."  host variables the command gets too (CI: its
#                         compiler cache). When CCACHE_DIR is one of them, the root gets ccache
#                         (installed before the command, its package lists removed again, so the
#                         README's setup still starts from none), that folder mounted at its own
#                         path, and the clone at the checkout's own path: the compile commands are
#                         then the host's, and the host's Release build after this check finds
#                         the demo's objects in the cache instead of compiling them twice.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
suite=bookworm
die() {
  echo "fresh_root.sh: $*" >&2
  exit 1
}
now() { date +%s; }
t0=$(now)

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"

# The command under test, from the README itself so that the two cannot drift apart.
first_line=$(awk '/^## Quick start/ { q = 1; next }
  q && /^## / { exit }
  q && /^```/ { if (b) exit; b = 1; next }
  q && b && NF { print; exit }' "$repo/README.md")
[ -n "$first_line" ] || die "README.md has no command in its '## Quick start' code block"
echo "README's first command: $first_line"

# Debian 12 entries of the host's apt sources, verbatim (deb822 stanzas and one-line entries), and
# the mirror for debootstrap: the first URI serving the suite itself. Nothing here names a host.
sources822=$(awk -v RS= -v ORS='\n\n' -v s="$suite" '
  { ok = 0; bad = 0; n = split($0, l, "\n")
    for (i = 1; i <= n; i++) if (l[i] ~ /^Suites:/) {
      m = split(l[i], w, /[ \t]+/)
      for (j = 2; j <= m; j++) { if (w[j] ~ ("^" s "(-updates|-security)?$")) ok = 1; else if (w[j] != "") bad = 1 }
    }
    if (ok && !bad && $0 ~ /(^|\n)Types:[^\n]*deb([ \t]|$|\n)/) print }' \
  /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
sources_list=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
  awk -v s="$suite" '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
    if ($(i + 1) ~ ("^" s "(-updates|-security)?$")) print }' || true)
mirror=$(printf '%s\n' "$sources822" | awk -v s="$suite" -v RS= '
  { u = ""; hit = 0; n = split($0, l, "\n")
    for (i = 1; i <= n; i++) {
      if (l[i] ~ /^URIs:/) { split(l[i], w, /[ \t]+/); u = w[2] }
      if (l[i] ~ /^Suites:/) { m = split(l[i], w, /[ \t]+/); for (j = 2; j <= m; j++) if (w[j] == s) hit = 1 }
    }
    if (hit && u != "") { print u; exit } }')
if [ -z "$mirror" ]; then
  mirror=$(printf '%s\n' "$sources_list" | awk -v s="$suite" '{ i = 2; if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
    if ($(i + 1) == s) { print $i; exit } }')
fi
[ -n "$mirror" ] || die "no '$suite' entry in the host's apt sources (/etc/apt/sources.list[.d])"

work=$(mktemp -d -t mcinfer-fresh.XXXXXX)
root="$work/root"
mounted=()
cleanup() {
  local status=$? i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
  done
  if findmnt -rn -o TARGET | grep -q "^$root/"; then
    echo "fresh_root.sh: something is still mounted under $root; leaving $work in place" >&2
  elif [ "${MCINFER_FRESH_KEEP:-0}" = 1 ]; then
    echo "fresh_root.sh: kept $root"
  else
    rm -rf --one-file-system "$work"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mount_in_root() { # TYPE DIR [OPTIONS]
  mkdir -p "$root$2"
  mount -t "$1" ${3:+-o "$3"} "$1" "$root$2" || return 1
  mounted+=("$root$2")
}

echo "== debootstrap --variant=minbase $suite (mirror from the host's apt sources)"
t=$(now)
if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  die "debootstrap failed (log above)"
fi
echo "debootstrap: $(($(now) - t)) s"

# Network and trust configuration only.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
rm -f "$root/etc/apt/sources.list"
[ -z "$sources822" ] || printf '%s\n' "$sources822" >"$root/etc/apt/sources.list.d/debian.sources"
[ -z "$sources_list" ] || printf '%s\n' "$sources_list" >"$root/etc/apt/sources.list"
for f in /etc/apt/apt.conf.d/*; do
  # Files that only set Acquire:: options (proxies, validity of snapshot mirrors, index targets).
  [ -f "$f" ] || continue
  if ! grep -vE '^[[:space:]]*(//.*|#.*)?$' "$f" | grep -qvE '^[[:space:]]*Acquire::'; then
    cp "$f" "$root/etc/apt/apt.conf.d/"
  fi
done
bundle=/etc/ssl/certs/ca-certificates.crt
if [ -f "$bundle" ]; then
  mkdir -p "$root/etc/ssl/certs" "$root/usr/local/share/ca-certificates"
  cp "$bundle" "$root$bundle"
  # ca-certificates (installed by scripts/setup.sh) rebuilds the bundle from its own certificates
  # plus /usr/local/share/ca-certificates: the host's trust (a network that intercepts TLS adds
  # its CA there) must survive that rebuild.
  cp "$bundle" "$root/usr/local/share/ca-certificates/host-trust.crt"
fi
pass=()
while IFS='=' read -r name value; do
  case "$name" in
    PIP_* | SSL_* | REQUESTS_CA_BUNDLE | CURL_CA_BUNDLE | http_proxy | https_proxy | no_proxy | HTTP_PROXY | HTTPS_PROXY | NO_PROXY) ;;
    *) continue ;;
  esac
  if [ "$name" = PIP_FIND_LINKS ]; then
    # Local wheel folders of the host are packages, not configuration: keep only URLs.
    kept=()
    for link in $value; do [[ "$link" == *://* ]] && kept+=("$link"); done
    [ ${#kept[@]} -gt 0 ] || continue
    value="${kept[*]}"
  elif [[ "$value" == /* ]] && [ -f "$value" ] && [ ! -e "$root$value" ]; then
    mkdir -p "$(dirname "$root$value")"
    cp "$value" "$root$value" # a CA file the variable points at
  fi
  pass+=("$name=$value")
done < <(env)
cache_dir=""
for name in ${MCINFER_FRESH_BUILD_ENV:-}; do
  [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "MCINFER_FRESH_BUILD_ENV: '$name' is not a variable name"
  [ -n "${!name+set}" ] || die "MCINFER_FRESH_BUILD_ENV names $name, which is not set"
  pass+=("$name=${!name}")
  [ "$name" != CCACHE_DIR ] || cache_dir=${!name}
done
echo "passed to the root: ${pass[*]%%=*}"

mount_in_root proc /proc
mount_in_root sysfs /sys
mount_in_root tmpfs /dev/shm mode=1777
# apt logs through a pseudo-terminal; without one it only prints an error and goes on.
if mount_in_root devpts /dev/pts newinstance,ptmxmode=0666; then
  mount --bind "$root/dev/pts/ptmx" "$root/dev/ptmx" && mounted+=("$root/dev/ptmx") || true
fi

if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "fresh_root.sh: note: uncommitted changes in $repo are not part of this check (it clones HEAD)" >&2
fi
head=$(git -C "$repo" rev-parse HEAD)
home=/root # the new user is root, so scripts/setup.sh needs no sudo (not in a minimal system)
clone="$home/mcinfer"
if [ -n "$cache_dir" ]; then
  [[ "$cache_dir" == /* ]] || die "CCACHE_DIR must be an absolute path, not '$cache_dir'"
  echo "== ccache in the root (CI's compiler cache, shared with the host's Release build)"
  chroot "$root" /bin/bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends ccache >/dev/null && apt-get clean &&
    rm -rf /var/lib/apt/lists/*' || die "could not install ccache in the root"
  clone=$repo
fi
mkdir -p "$(dirname "$root$clone")"
git clone -q --no-hardlinks "$repo" "$root$clone"
git -C "$root$clone" checkout -q --detach "$head"
if [ -n "$cache_dir" ]; then
  mkdir -p "$cache_dir" "$root$cache_dir"
  mount --bind "$cache_dir" "$root$cache_dir"
  mounted+=("$root$cache_dir")
fi

echo "== in the fresh root, $clone at ${head:0:12}: $first_line"
t=$(now)
chroot "$root" /usr/bin/env -i HOME="$home" LANG=C.UTF-8 TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${pass[@]}" \
  /bin/bash -c "cd $clone && $first_line" ||
  die "the README's first command failed in a fresh Debian 12 root (output above)"
echo "README's first command: $(($(now) - t)) s"

# The demo's product: one row per distinct input id, in input order, "id" + 384 normalised values.
out="$root$clone/out/sentences_embeddings.csv"
[ -s "$out" ] || die "the demo wrote no out/sentences_embeddings.csv"
[ -s "$root$clone/out/sentences_report.json" ] || die "the demo wrote no out/sentences_report.json"
awk -F, '
  FNR == 1 { file++ }
  file == 1 && FNR > 1 { # input CSV: ids start records; quoted fields may span lines
    if (!cont) { id = $1; if (!(id in seen)) { seen[id] = 1; want[++n] = id } }
    cont = (cont + gsub(/"/, "\"")) % 2; next }
  file == 2 && FNR == 1 {
    if (NF != 385 || $1 != "id") { print "header has " NF " columns, want id + 384"; bad = 1; exit }
    for (i = 2; i <= NF; i++) if ($i != "e" (i - 2)) { print "column " i " is " $i; bad = 1; exit }
    next }
  file == 2 {
    rows++
    if (NF != 385) { print "row " rows ": " NF " columns"; bad = 1; exit }
    if ($1 != want[rows]) { print "row " rows ": id " $1 ", want " want[rows]; bad = 1; exit }
    s = 0
    for (i = 2; i <= NF; i++) {
      if ($i !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) { print "row " rows ": value " $i; bad = 1; exit }
      s += $i * $i }
    if (s < 0.999 || s > 1.001) { print "row " rows ": squared norm " s; bad = 1; exit } }
  END { if (bad) exit 1
    if (rows != n) { print rows " rows, want " n " (distinct ids of the input)"; exit 1 }
    print "out/sentences_embeddings.csv: " rows " rows x 385 columns, unit norms, input order" }
 ' "$root$clone/examples/sentences.csv" "$out" || die "out/sentences_embeddings.csv has the wrong shape"
echo "fresh root check: $(($(now) - t0)) s"
