#!/usr/bin/env bash
# Cost of --long-input chunk (issue 17): tokens/s of a chunked run vs a run over the same windows
# given as separate pre-tokenised rows (mcinfer tokenize --stride prints them), alternating, each
# `reps` times; prints each run and the median ratio (floor: 0.95).
# Usage: bench/chunk_speed.sh MODEL_DIR [ROWS] [MAX_LEN] [STRIDE] [PRECISION] [REPS]
#   e.g. bench/chunk_speed.sh models/all-MiniLM-L6-v2 600 128 32 fp32 3
# The input: ROWS long rows, corpus lines (tests/fixtures/tokenizer/corpus.txt) joined to
# 1,500-6,000 characters each (seeded).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mcinfer="${MCINFER:-$root/build/tools/mcinfer/mcinfer}"
model=${1:?model directory}
rows=${2:-600}
max_len=${3:-128}
stride=${4:-32}
precision=${5:-fp32}
reps=${6:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$root/tests/fixtures/tokenizer/corpus.txt" "$rows" "$work/long.csv" <<'PY'
import csv, random, sys
lines = [l for l in open(sys.argv[1], encoding="utf-8").read().split("\n") if l.strip() and l.isprintable()]
rng = random.Random(17)
with open(sys.argv[3], "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["id", "text"])
    for i in range(int(sys.argv[2])):
        target, text = rng.randint(1500, 6000), ""
        while len(text) < target:
            text = (text + " " + rng.choice(lines)).strip()
        w.writerow([f"r{i}", text])
PY
"$mcinfer" tokenize "$model" --input "$work/long.csv" --max-len "$max_len" --stride "$stride" |
  python3 -c '
import json, sys
for i, line in enumerate(sys.stdin):
    print(json.dumps({"id": f"w{i}", "input_ids": json.loads(line)}))' > "$work/windows.jsonl"
common=(--max-len "$max_len" --precision "$precision" --quiet)
for rep in $(seq "$reps"); do
  "$mcinfer" run "$model" --input "$work/long.csv" --output "$work/c.csv" "${common[@]}" \
    --long-input chunk --stride "$stride" --report "$work/chunk_$rep.json"
  "$mcinfer" run "$model" --input "$work/windows.jsonl" --output "$work/w.csv" "${common[@]}" \
    --report "$work/rows_$rep.json"
done
python3 - "$work" "$reps" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
ratios = []
for rep in range(1, reps + 1):
    c = json.load(open(f"{work}/chunk_{rep}.json"))
    w = json.load(open(f"{work}/rows_{rep}.json"))
    tc, tw = c["real_tokens"] / c["wall_seconds"], w["real_tokens"] / w["wall_seconds"]
    ratios.append(tc / tw)
    print(f"rep {rep}: chunked {c['rows']} rows -> {c['windows']} windows, {c['real_tokens']} tokens, "
          f"{c['wall_seconds']:.2f} s, {tc:.0f} tok/s | windows as rows {w['rows']} rows, "
          f"{w['real_tokens']} tokens, {w['wall_seconds']:.2f} s, {tw:.0f} tok/s | ratio {tc / tw:.3f}")
print(f"median ratio (chunked / windows as rows): {statistics.median(ratios):.3f}")
PY
