#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the distributed tests (and for trying the
# examples/slurm scripts by hand): munged, slurmctld and slurmd as root, their state, logs and
# slurm.conf in DIR, the node's CPUs oversubscribed so that several ranks fit on two cores.
#   scripts/slurm_cluster.sh start DIR   # prints "export SLURM_CONF=DIR/slurm.conf"
#   scripts/slurm_cluster.sh stop DIR
# Needs root and Debian's slurm-wlm and munge (installed when missing).
set -euo pipefail
command=${1:?start or stop}
dir=$(mkdir -p "${2:?a directory for the cluster}" && cd "$2" && pwd)
export SLURM_CONF="$dir/slurm.conf"

stop() {
  if [ -f "$SLURM_CONF" ]; then scontrol shutdown >/dev/null 2>&1 || true; fi
  local pids=()
  for pid_file in "$dir/slurmctld.pid" "$dir/slurmd.pid" "$dir/munge/munged.pid"; do
    [ -f "$pid_file" ] || continue
    pids+=("$(cat "$pid_file")")
    kill "${pids[-1]}" 2>/dev/null || true
  done
  # Wait for them to exit: slurmctld writes its state into DIR while it shuts down, so DIR
  # cannot be removed before (CI once failed on "Directory not empty").
  for _ in $(seq 1 100); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  rm -f "$dir"/*.pid "$dir"/munge/munged.pid
}

if [ "$command" = stop ]; then
  stop
  exit 0
fi
[ "$command" = start ] || { echo "slurm_cluster.sh: start or stop, not '$command'" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "slurm_cluster.sh: the daemons need root" >&2; exit 1; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi
node=$(hostname -s)
# munged runs as the munge user: it must reach its folder inside DIR (mktemp -d makes it 0700).
chmod 755 "$dir"
mkdir -p "$dir/ctld" "$dir/spool" "$dir/munge"
chown munge:munge "$dir/munge"
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null
  chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
cat >"$SLURM_CONF" <<CONF
ClusterName=mcinfer
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket.2
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
stop
runuser -u munge -- /usr/sbin/munged --socket="$dir/munge/munge.socket.2" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/seed"
slurmctld
slurmd
for _ in $(seq 1 30); do
  if sinfo -h -o %t 2>/dev/null | grep -q idle; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 1
done
echo "slurm_cluster.sh: the node did not become idle in 30 s; logs in $dir" >&2
sinfo >&2 || true
tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
exit 1
