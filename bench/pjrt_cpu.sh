#!/usr/bin/env bash
# The PJRT backend on XLA's CPU plugin against the CPU backend, on this machine, in one run:
# `mcinfer bench` (fp32, batch 16 x 128, one replica per core / one CPU-plugin device per core,
# alternating, REPS repetitions each) on synthetic model shapes, then `mcinfer run` end to end on
# all-MiniLM-L6-v2 over ROWS_FILE (the report's compute time, padding and compile counters).
# Prints a Markdown section for bench/RESULTS.md.
# Usage: bench/pjrt_cpu.sh [REPS] [ROWS_FILE | N]   (from the repository root, after scripts/build.sh)
#   N (a number): examples/sentences.csv N times over, ids made distinct (the 2026-12-02 run: 10)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=${1:-3}
rows=${2:-$root/examples/sentences.csv}
mcinfer="$root/build/tools/mcinfer/mcinfer"
plugin=$("$root/scripts/get_pjrt_cpu.sh")
minilm=$("$root/scripts/get_minilm.sh")
cores=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ "$rows" =~ ^[0-9]+$ ]]; then
  times=$rows
  rows="$work/sentences_x$times.csv"
  # A CSV reader, not sed: texts span lines.
  python3 - "$root/examples/sentences.csv" "$rows" "$times" <<'PY'
import csv, sys
src, dst, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, newline="", encoding="utf-8") as f:
    rows = list(csv.reader(f))
with open(dst, "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(rows[0])
    for i in range(times):
        w.writerows([[f"{r[0]}_{i}"] + r[1:] for r in rows[1:]])
PY
fi
backends=("--backend cpu" "--backend pjrt --plugin $plugin --devices $cores")
names=(cpu pjrt)

echo "## PJRT backend (issue 16) on XLA's CPU plugin vs the CPU backend — $(date -u '+%Y-%m-%d %H:%M') UTC"
echo
echo "- Command: \`bench/pjrt_cpu.sh $reps ${2:-examples/sentences.csv}\` (mcinfer $(git -C "$root" rev-parse --short HEAD))"
echo "- Machine: $(lscpu | sed -n 's/^Model name: *//p'), $cores cores; flags: $(grep -o -w 'avx512f\|avx512_bf16\|avx512_vnni\|amx_bf16\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "- Plugin: PyPI xla-cpu-pjrt 0.0.1 (PJRT C API 0.81); fp32 on both (a CPU PJRT device has no native bf16)"
echo
echo "| shape | cpu seq/s (median) | pjrt seq/s (median) | pjrt / cpu |"
echo "|---|---|---|---|"
for shape in minilm-l6 bert-base; do
  declare -A got=()
  for ((r = 0; r < reps; r++)); do
    for i in 0 1; do
      # shellcheck disable=SC2086
      v=$("$mcinfer" bench --shape "$shape" ${backends[$i]} --precision fp32 --batch 16 --seq 128 \
        --replicas "$cores" --warmup 1 --iters 8 --json 2>/dev/null | python3 -c \
        'import json, sys; print(round(json.load(sys.stdin)["seq_per_s"], 2))')
      got[${names[$i]}]+="$v "
    done
  done
  median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
  c=$(echo "${got[cpu]}" | median)
  p=$(echo "${got[pjrt]}" | median)
  echo "| $shape | $c (${got[cpu]% }) | $p (${got[pjrt]% }) | $(python3 -c "print(f'{$p / $c:.2f}')") |"
done
echo
echo "End to end, \`mcinfer run all-MiniLM-L6-v2 --input ${2:-examples/sentences.csv} --precision fp32\`, default flags:"
echo
echo "| backend | wall s | real tokens | computed tokens | padding | programs compiled | compile s (summed over replicas) |"
echo "|---|---|---|---|---|---|---|"
for i in 0 1; do
  # shellcheck disable=SC2086
  "$mcinfer" run "$minilm" --input "$rows" --output "$work/out_$i.csv" ${backends[$i]} \
    --precision fp32 --report "$work/r_$i.json" --quiet 2>/dev/null
  python3 - "$work/r_$i.json" "${names[$i]}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r.get("backend_counters", {})
print(f"| {sys.argv[2]} | {r['wall_seconds']:.1f} | {r['real_tokens']} | {r['computed_tokens']} | "
      f"{100 * r['computed_padding_fraction']:.0f}% | {int(c.get('programs_compiled', 0))} | "
      f"{c.get('compile_seconds', 0):.1f} |")
PY
done
python3 - "$work/out_0.csv" "$work/out_1.csv" <<'PY'
import csv, sys
a = list(csv.reader(open(sys.argv[1]))); b = list(csv.reader(open(sys.argv[2])))
assert a[0] == b[0] and [r[0] for r in a] == [r[0] for r in b]
d = max(abs(float(x) - float(y)) for p, q in zip(a[1:], b[1:]) for x, y in zip(p[1:], q[1:]))
print(f"\nOutputs: the same {len(a) - 1} ids in the same order; largest difference {d:.1e}.")
PY
