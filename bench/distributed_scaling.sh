#!/usr/bin/env bash
# Scaling of a distributed run measured as work conservation (issue 15): one rank with one
# replica on core 0, then two ranks with one replica each on cores 0 and 1 at once, over the same
# input; then the merge. Prints each run's wall and start-up time, rows and tokens (from the
# reports), and each rank's wall as a fraction of half the one-rank wall.
# Usage: bench/distributed_scaling.sh MODEL_DIR INPUT.csv [PRECISION] [MAX_LEN]
#   e.g. bench/distributed_scaling.sh models/all-MiniLM-L6-v2 bench/work/testset.csv bf16 224
# (bench/gen_testset.py writes the 20,000-row test set; scripts/get_minilm.sh the model).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mcinfer="${MCINFER:-$root/build/tools/mcinfer/mcinfer}"
model=${1:?model directory}
input=${2:?input file}
precision=${3:-auto}
max_len=${4:-224}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(run "$model" --input "$input" --max-len "$max_len" --schedule dynamic --replicas 1
  --precision "$precision" --quiet)
now() { date +%s.%N; }
t0=$(now)
taskset -c 0 "$mcinfer" "${common[@]}" --output "$work/w1.csv" --report "$work/w1.json"
t1=$(now)
for rank in 0 1; do
  taskset -c "$rank" "$mcinfer" "${common[@]}" --output "$work/w2.csv" --shards-dir "$work/d2" \
    --rank "$rank" --world 2 --report "$work/w2.json" &
done
wait
t2=$(now)
"$mcinfer" merge --shards-dir "$work/d2" --expect "$input" --output "$work/w2.csv"
t3=$(now)
python3 - "$work" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, sys
work, t0, t1, t2, t3 = sys.argv[1], *map(float, sys.argv[2:])
w1 = json.load(open(f"{work}/w1.json"))
ranks = [json.load(open(f"{work}/{n}")) for n in ("w2.json", "w2.rank1.json")]
print(f"world 1: wall {t1 - t0:.2f} s (report {w1['wall_seconds']:.2f}), start-up {w1['startup_seconds']:.2f} s, "
      f"rows {w1['rows']}, real tokens {w1['real_tokens']}")
for r in ranks:
    print(f"world 2, rank {r['rank']}: wall {r['wall_seconds']:.2f} s = {r['wall_seconds'] / (w1['wall_seconds'] / 2):.3f} "
          f"x (world-1 wall / 2), start-up {r['startup_seconds']:.2f} s ({100 * r['startup_seconds'] / r['wall_seconds']:.1f}% "
          f"of its wall), rows {r['rank_rows']}, real tokens {r['real_tokens']}")
print(f"world 2: both ranks {t2 - t1:.2f} s, then the merge {t3 - t2:.2f} s; real tokens over the ranks "
      f"{sum(r['real_tokens'] for r in ranks)} vs {w1['real_tokens']} at world 1")
PY
