#!/usr/bin/env bash
# README's memory table: peak RSS of `mcinfer run` by replica count and precision, with a BERT-base
# classifier (random weights, bench/make_models.py) over 200 rows of the long-tailed test set
# (bench/gen_testset.py), --max-len 224, default batches. Prints the markdown table and the CPU.
# Usage: bench/memory_table.sh [REPLICAS...]   (default: 1 2 4 8; needs tools/venv.sh --legacy)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mcinfer=build/tools/mcinfer/mcinfer
model=bench/work/models/bert-base-cls
rows=bench/work/t200.csv
python=.venv-legacy/bin/python
[ -x "$mcinfer" ] || scripts/build.sh >/dev/null
[ -d "$model" ] || "$python" bench/make_models.py --only bert-base-cls >&2
[ -f "$rows" ] || "$python" bench/gen_testset.py --rows 200 --out "$rows" >&2
replicas=("$@")
[ ${#replicas[@]} -gt 0 ] || replicas=(1 2 4 8)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mib() { awk -v b="$1" 'BEGIN { printf "%.0f MiB", b / 1048576 }'; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
  "weights $(du -sm "$model"/model.safetensors | cut -f1) MiB on disk"
header="| precision |"
line="|---|"
for r in "${replicas[@]}"; do
  header+=" $r |"
  line+="---|"
done
echo "$header"
echo "$line"
# bf16 and int8 first compute the check rows in fp32 (32 by default), whose weights are freed
# before the run's are loaded; "check 0" shows the run's own footprint without that pass.
for spec in fp32 bf16 int8 bf16:0 int8:0; do
  precision=${spec%%:*}
  check=()
  label=$precision
  if [ "$spec" != "$precision" ]; then
    check=(--check-precision 0)
    label="$precision, --check-precision 0"
  fi
  row="| $label |"
  for r in "${replicas[@]}"; do
    if "$mcinfer" run "$model" --input "$rows" --output "$work/o.csv" --replicas "$r" \
      --max-len 224 --precision "$precision" "${check[@]}" --report "$work/r.json" --quiet \
      2>"$work/err"; then
      row+=" $(mib "$("$python" -c "import json; print(json.load(open('$work/r.json'))['peak_rss_bytes'])")") |"
    else
      row+=" refused ($(head -c 60 "$work/err" | tr '\n' ' ')) |"
    fi
  done
  echo "$row"
done
