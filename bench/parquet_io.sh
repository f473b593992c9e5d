#!/usr/bin/env bash
# Parquet against CSV for the final table: `mcinfer merge` of ROWS rows x DIM float32 values
# (an embedding: CSV columns e0..e{DIM-1}, Parquet one fixed_size_list column) from one file in
# a format into one file of the same format, REPS times, alternating; prints each wall time,
# the median and range per format, the bytes read and written, and the ratios. The values are
# uniform random float32 (seeded), written once by pyarrow (.venv-arrow from scripts/setup.sh)
# and converted to CSV by mcinfer merge itself.
# Usage: bench/parquet_io.sh [ROWS [DIM [REPS]]]   (default 1000000 384 3; needs a build with
# Arrow at build/, or MCINFER_BIN=path/to/mcinfer; about 12 GB free in bench/work)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rows=${1:-1000000}
dim=${2:-384}
reps=${3:-3}
mcinfer=${MCINFER_BIN:-$root/build/tools/mcinfer/mcinfer}
python=$root/.venv-arrow/bin/python
"$mcinfer" --version | grep -q "Parquet: Arrow" || {
  echo "bench/parquet_io.sh: $mcinfer was built without Parquet" >&2
  exit 1
}
work=$root/bench/work/parquet_io
mkdir -p "$work"
src=$work/source_${rows}x${dim}.parquet
if [ ! -f "$src" ]; then
  "$python" - "$src" "$rows" "$dim" <<'PY'
import sys
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
path, rows, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
chunk = 50_000
writer = None
for start in range(0, rows, chunk):
    n = min(chunk, rows - start)
    values = pc.cast(pc.subtract(pc.random(n * dim, initializer=start), 0.5), pa.float32())
    emb = pa.FixedSizeListArray.from_arrays(values, dim)
    ids = pa.array(range(start, start + n), pa.int64())
    table = pa.table({"id": ids, "embedding": emb})
    writer = writer or pq.ParquetWriter(path, table.schema)
    writer.write_table(table)
writer.close()
PY
fi
[ -f "$work/in.csv" ] || "$mcinfer" merge "$src" --output "$work/in.csv" >/dev/null 2>&1
[ -f "$work/in.parquet" ] || "$mcinfer" merge "$src" --output "$work/in.parquet" >/dev/null 2>&1
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "CPU: $cpu, $(nproc) logical CPUs; $("$mcinfer" --version)"
echo "rows: $rows x $dim float32; reps: $reps (alternating)"
times_csv=()
times_pq=()
measure() { # FORMAT: prints the wall seconds of one merge
  local start end
  rm -f "$work/out.$1"
  sync
  start=$(date +%s.%N)
  "$mcinfer" merge "$work/in.$1" --output "$work/out.$1" >/dev/null 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }'
}
for ((i = 0; i < reps; i++)); do
  times_csv+=("$(measure csv)")
  times_pq+=("$(measure parquet)")
  echo "rep $((i + 1)): csv ${times_csv[-1]} s, parquet ${times_pq[-1]} s"
done
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.2f %.2f %.2f", m, v[1], v[NR] }'; }
read -r med_csv min_csv max_csv <<<"$(stats "${times_csv[@]}")"
read -r med_pq min_pq max_pq <<<"$(stats "${times_pq[@]}")"
size() { stat -c %s "$1"; }
echo "| format | merge wall (median) | range | input bytes | output bytes |"
echo "|---|---:|---:|---:|---:|"
echo "| CSV | $med_csv s | $min_csv–$max_csv s | $(size "$work/in.csv") | $(size "$work/out.csv") |"
echo "| Parquet | $med_pq s | $min_pq–$max_pq s | $(size "$work/in.parquet") | $(size "$work/out.parquet") |"
awk -v a="$med_pq" -v b="$med_csv" -v c="$(size "$work/out.parquet")" -v d="$(size "$work/out.csv")" \
  'BEGIN { printf "Parquet / CSV: %.2fx wall time, %.2fx bytes\n", a / b, c / d }'
