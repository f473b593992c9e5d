#!/usr/bin/env bash
# Hosts apart: three ranks of one mpirun job, each in its own network namespace (a veth into a
# bridge, an address of its own), talking over Open MPI's TCP transports pointed at that network
# and sharing the shards directory as NFS would be shared. mpirun starts each rank through a
# launch agent that enters the rank's namespace, where it would ssh to the host. The output must
# equal the one-machine run with the same global replica count, byte for byte (static schedule).
# Needs root, iproute2, mpirun and an mcinfer built with MPI: skipped (77) without them, unless
# MCINFER_REQUIRE_NETNS=1 (CI). Usage: netns_mpirun_test.sh MCINFER_BINARY
set -euo pipefail
source "$(dirname "$0")/common.sh"
mcinfer=${1:?mcinfer binary}
skip() {
  if [ "${MCINFER_REQUIRE_NETNS:-}" = 1 ]; then
    echo "FAIL: MCINFER_REQUIRE_NETNS=1 but $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v mpirun >/dev/null || skip "no mpirun (openmpi-bin)"
"$mcinfer" --version | grep -q "MPI: none" && skip "mcinfer was built without MPI"

# Names private to this run; the subnet is one the test makes and removes.
tag=$$
bridge="mcibr$tag"
net=10.77.0
namespaces=()
cleanup() {
  for i in 0 1 2; do ip link del "mciv$tag$i" 2>/dev/null || true; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ip link add "$bridge" type bridge || skip "cannot make a bridge here"
ip addr add "$net.1/24" dev "$bridge"
ip link set "$bridge" up
: >"$tmp/hosts"
agent_cases=""
for i in 0 1 2; do
  ns="mci$tag-$i"
  ip netns add "$ns"
  namespaces+=("$ns")
  ip link add "mciv$tag$i" type veth peer name eth0 netns "$ns"
  ip link set "mciv$tag$i" master "$bridge" up
  ip netns exec "$ns" ip addr add "$net.1$i/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  echo "$net.1$i slots=1" >>"$tmp/hosts"
  agent_cases+="  $net.1$i) ns=$ns host=$i ;;"$'\n'
  mkdir -p "$tmp/host$i"
done
# mpirun's rsh launcher runs "AGENT HOST COMMAND": here, COMMAND inside HOST's namespace.
cat >"$tmp/agent" <<AGENT
#!/bin/sh
host=\$1
shift
case "\$host" in
$agent_cases  *) echo "netns agent: unknown host \$host" >&2; exit 1 ;;
esac
# Each host its own session directory, as separate machines have: with one shared /tmp the
# daemons of the three "hosts" (one hostname) race to create the same folders.
exec ip netns exec "\$ns" env OMPI_MCA_orte_tmpdir_base="$tmp/host\$host" /bin/sh -c "\$*"
AGENT
chmod +x "$tmp/agent"

model="$root/tests/fixtures/models/bert_cls_multi"
for i in $(seq 0 89); do
  printf '{"id": "n%d", "input_ids": [1, %d, %d, %d, 2]}\n' "$i" $((5 + i % 90)) $((7 + i % 13)) $((9 + i % 31))
done >"$tmp/rows.jsonl"
common=(run "$model" --input "$tmp/rows.jsonl" --schedule static --batch-size 4 --precision fp32
  --quiet)
"$mcinfer" "${common[@]}" --replicas 3 --output "$tmp/one.csv"

mpi=(mpirun --oversubscribe -np 3 --hostfile "$tmp/hosts" --mca plm_rsh_agent "$tmp/agent"
  --mca btl tcp,self --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24")
[ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root)
# Each rank reports the address it ran at: three namespaces, three addresses.
"${mpi[@]}" sh -c 'ip -4 -o addr show eth0 | awk "{print \$4}"' | sort >"$tmp/addresses"
[ "$(cat "$tmp/addresses")" = "$(printf '%s.1%d/24\n' $net 0 $net 1 $net 2)" ] ||
  fail "the ranks did not run at the three namespaces' addresses: $(cat "$tmp/addresses")"

"${mpi[@]}" "$mcinfer" "${common[@]}" --replicas 1 --output "$tmp/ranks.csv" \
  --shards-dir "$tmp/shards" || fail "the mpirun job across namespaces failed"
cmp "$tmp/ranks.csv" "$tmp/one.csv" ||
  fail "3 ranks in 3 namespaces differ from the one-machine run with 3 replicas"
for k in 0 1 2; do
  grep -q '"launcher": "Open MPI"' "$tmp/shards/run_$k.json" || fail "rank $k's record"
done
[ "$failures" -eq 0 ] || exit 1
echo "netns_mpirun_test: 3 ranks in 3 network namespaces over TCP equal the one-machine run"
