#!/usr/bin/env python3
"""Writes tests/fixtures/chunk_sparse/: the references for `--long-input chunk` on SPLADE sparse
encoders (the SparseEncoder directories of tests/fixtures/sparse/).

For each model: input.csv (rows of 40 to 130 tokens made from the sparse fixtures' texts, one id
twice) and expected_<case>.csv: each row cut into the windows Hugging Face's fast tokenizer
returns for

    tok(text, max_length=16, truncation=True, stride=K, return_overflowing_tokens=True)

each window alone through the SparseEncoder's modules (its MLM Transformer and SpladePooling:
`model(features)["sentence_embedding"]`, fp32, 1 thread; no max_active_dims there), the windows'
vocabulary vectors reduced as mcinfer's --chunk-reduce defines it (float64: mean, max, first,
token-weighted by the window's tokens, special tokens included), then the row's max_active_dims
(the directory's, when it saves one) keeping its K largest values. Duplicate ids are averaged
(groupby("id", sort=False).mean()). cases.json lists each case's flags and windows per row.

Regenerate: tools/venv.sh && .venv/bin/python tools/gen_chunk_sparse_fixtures.py
Idempotent and deterministic.
"""

import csv
import io
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import sentence_transformers
import torch
import transformers

# The windows' reduction exactly as the dense chunking fixtures define it.
from gen_chunk_fixtures import reduce
from sentence_transformers import SparseEncoder

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/chunk_sparse"
SPARSE = ROOT / "tests/fixtures/sparse"
SEED = 20261207
MAX_LEN = 16
# (fixture, cases: (tag, stride, reduce))
MODELS = [
    ("sparse6_bert_max_log1p", [("s0_max", 0, "max"), ("s4_mean", 4, "mean")]),
    ("sparse6_bert_sum_relu", [("s2_tw", 2, "token-weighted"), ("s0_first", 0, "first")]),
    # max: the row's top-k equals the top-k of windows each cut to their top-k; mean does not.
    ("sparse6_bert_max_active8", [("s3_max", 3, "max"), ("s2_mean", 2, "mean")]),
]


def keep_top_k(row, k):
    if not k or np.count_nonzero(row) <= k:
        return row
    # The K largest values (ties: the lower index first, as a stable sort by value keeps them).
    order = np.argsort(-row, kind="stable")[:k]
    kept = np.zeros_like(row)
    kept[order] = row[order]
    return kept


def long_texts(rng, pieces, count):
    texts = []
    for _ in range(count):
        parts = [rng.choice(pieces) for _ in range(rng.randint(6, 16))]
        texts.append(" ".join(parts))
    return texts


def window_vectors(model, enc):
    out = []
    with torch.no_grad():
        for k, ids in enumerate(enc["input_ids"]):
            features = {
                "input_ids": torch.tensor([ids]),
                "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
            }
            if "token_type_ids" in enc:
                features["token_type_ids"] = torch.tensor([enc["token_type_ids"][k]])
            out.append(model(features)["sentence_embedding"][0].double().numpy())
    return out


def model_cases(name, cases, texts, ids):
    d = SPARSE / name
    model = SparseEncoder(str(d), device="cpu")
    model.eval()
    tok = model.tokenizer
    top_k = model.max_active_dims
    out = OUT / name
    out.mkdir(parents=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "text"])
    w.writerows(zip(ids, texts))
    (out / "input.csv").write_text(buf.getvalue(), encoding="utf-8")
    vocab = model[0].auto_model.config.vocab_size
    columns = [f"e{i}" for i in range(vocab)]
    meta = []
    for tag, stride, how in cases:
        rows, windows_per_row = [], []
        for text in texts:
            enc = tok(
                text,
                max_length=MAX_LEN,
                truncation=True,
                stride=stride,
                return_overflowing_tokens=True,
            )
            windows_per_row.append(len(enc["input_ids"]))
            vectors = window_vectors(model, enc)
            row = reduce(vectors, [len(x) for x in enc["input_ids"]], how)
            rows.append(keep_top_k(row, top_k))
        frame = pd.DataFrame(rows, columns=columns)
        frame.insert(0, "id", ids)
        frame = frame.groupby("id", sort=False).mean().reset_index()
        frame.to_csv(out / f"expected_{tag}.csv", index=False, float_format="%.9g")
        flags = [
            "--max-len",
            str(MAX_LEN),
            "--long-input",
            "chunk",
            "--stride",
            str(stride),
            "--chunk-reduce",
            how,
        ]
        meta.append({"case": tag, "flags": flags, "windows_per_row": windows_per_row})
        if max(windows_per_row) < 3:
            raise RuntimeError(f"{name} {tag}: rows are not long enough")
    (out / "cases.json").write_text(
        json.dumps(
            {
                "model": f"sparse/{name}",
                "max_len": MAX_LEN,
                "max_active_dims": top_k,
                "cases": meta,
            },
            indent=1,
        )
        + "\n"
    )


README = """# Chunking fixtures of sparse encoders

References for `--long-input chunk` on the SPLADE directories of `tests/fixtures/sparse/`, written
by `tools/gen_chunk_sparse_fixtures.py` (its docstring says exactly what is computed); do not edit
by hand. Regenerate (deletes and rewrites this folder, byte-identical on every run):

```
tools/venv.sh
.venv/bin/python tools/gen_chunk_sparse_fixtures.py
```

Each `<model>/`: `input.csv`, `cases.json` (each case's `mcinfer run` flags and windows per row)
and `expected_<case>.csv` (`id`, then the vocabulary's values `e0` … per distinct id).
Written with transformers {transformers}, sentence-transformers {st}, torch {torch}.
"""


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    rng = random.Random(SEED)
    pieces = []
    with (SPARSE / "sparse6_bert_max_log1p" / "input.csv").open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["text"].strip():
                pieces.append(row["text"].strip())
    texts = long_texts(rng, pieces, 8) + ["Hello world.", ""]
    ids = [f"doc{i}" for i in range(len(texts))]
    ids[5] = ids[2]  # a duplicate id: its two rows' outputs are averaged
    for name, cases in MODELS:
        model_cases(name, cases, texts, ids)
    (OUT / "README.md").write_text(
        README.format(
            transformers=transformers.__version__,
            st=sentence_transformers.__version__,
            torch=torch.__version__.split("+")[0],
        )
    )


if __name__ == "__main__":
    main()
