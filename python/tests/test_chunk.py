"""``mcinfer.Model(long_input="chunk")`` against the chunking fixtures: every window through
transformers, each row reduced from its windows (tools/gen_chunk_fixtures.py)."""

from __future__ import annotations

import json

import mcinfer
import numpy as np
import pytest
from conftest import FIXTURES, expect_rows_by_id, model_keywords, read_csv_rows

CHUNK = FIXTURES / "chunk"


def _cases() -> list[tuple[str, str]]:
    return [
        (model, case["case"])
        for model in ("bert_cls", "bert_cls_pair", "roberta_cls", "xlmr_embed", "deberta_cls")
        for case in json.loads((CHUNK / model / "cases.json").read_text())["cases"]
    ]


@pytest.mark.parametrize(("model", "case"), _cases())
def test_chunked_rows_match_transformers_windows(model: str, case: str) -> None:
    meta = json.loads((CHUNK / model / "cases.json").read_text())
    flags = next(c["flags"] for c in meta["cases"] if c["case"] == case)
    rows = read_csv_rows(CHUNK / model / "input.csv")
    texts = [row["text"] for row in rows]
    pairs = [row["text_b"] for row in rows] if "text_b" in rows[0] else None
    encoder = mcinfer.Model(FIXTURES / meta["model"], precision="fp32", **model_keywords(flags))
    if encoder.task == "embed":
        got = encoder.encode(texts)
    else:
        got = encoder.predict((texts, pairs) if pairs is not None else texts)
    expect_rows_by_id(rows, got, CHUNK / model / f"expected_{case}.csv", 1e-5)


def test_chunking_is_refused_as_the_cli_refuses_it() -> None:
    directory = FIXTURES / "text" / "bert_cls"
    with pytest.raises(mcinfer.UsageError, match="--stride applies to --long-input chunk"):
        mcinfer.Model(directory, stride=4)
    with pytest.raises(mcinfer.UsageError, match="--stride 40 is too large for --max-len 32"):
        mcinfer.Model(directory, max_len=32, long_input="chunk", stride=40)
    with pytest.raises(mcinfer.UsageError, match="long_input must be"):
        mcinfer.Model(directory, long_input="split")
    with pytest.raises(mcinfer.UsageError, match="chunk_reduce must be"):
        mcinfer.Model(directory, long_input="chunk", chunk_reduce="median")
    with pytest.raises(mcinfer.UsageError, match="stride must be a whole number, 0 or more"):
        mcinfer.Model(directory, long_input="chunk", stride=-1)


SPARSE_CHUNK = FIXTURES / "chunk_sparse"


def _sparse_cases() -> list[tuple[str, str]]:
    return [
        (model, case["case"])
        for model in ("sparse6_bert_max_log1p", "sparse6_bert_sum_relu", "sparse6_bert_max_active8")
        for case in json.loads((SPARSE_CHUNK / model / "cases.json").read_text())["cases"]
    ]


@pytest.mark.parametrize(("model", "case"), _sparse_cases())
def test_chunked_sparse_rows_match_sparse_encoder_windows(model: str, case: str) -> None:
    meta = json.loads((SPARSE_CHUNK / model / "cases.json").read_text())
    flags = next(c["flags"] for c in meta["cases"] if c["case"] == case)
    rows = read_csv_rows(SPARSE_CHUNK / model / "input.csv")
    encoder = mcinfer.Model(FIXTURES / meta["model"], precision="fp32", **model_keywords(flags))
    assert encoder.task == "sparse"
    got = encoder.encode([row["text"] for row in rows])
    dense = got.toarray() if hasattr(got, "toarray") else None
    if dense is None:  # no scipy: (indices, values) per row
        dense = np.zeros((len(rows), len(encoder.labels)), dtype=np.float32)
        for r, (indices, values) in enumerate(got):
            dense[r, indices] = values
    expect_rows_by_id(rows, dense, SPARSE_CHUNK / model / f"expected_{case}.csv", 1e-5)
