"""``mcinfer.Model(long_input="chunk")`` against the chunking fixtures: every window through
transformers, each row reduced from its windows (tools/gen_chunk_fixtures.py)."""

from __future__ import annotations

import json
from collections import defaultdict

import mcinfer
import numpy as np
import pytest
from conftest import FIXTURES, read_csv_rows

CHUNK = FIXTURES / "chunk"


def _cases() -> list[tuple[str, str]]:
    return [
        (model, case["case"])
        for model in ("bert_cls", "bert_cls_pair", "roberta_cls", "xlmr_embed", "deberta_cls")
        for case in json.loads((CHUNK / model / "cases.json").read_text())["cases"]
    ]


def _model_options(flags: list[str]) -> dict[str, object]:
    """The case's `mcinfer run` flags as Model's arguments."""
    names = {
        "--max-len": ("max_len", int),
        "--long-input": ("long_input", str),
        "--stride": ("stride", int),
        "--chunk-reduce": ("chunk_reduce", str),
        "--chunk-values": ("chunk_values", str),
        "--task": ("task", str),
    }
    options: dict[str, object] = {}
    i = 0
    while i < len(flags):
        if flags[i] == "--normalize":
            options["normalize"] = True
            i += 1
            continue
        if flags[i] == "--text-pair-col":  # the pairs go to predict()
            i += 2
            continue
        name, kind = names[flags[i]]
        options[name] = kind(flags[i + 1])
        i += 2
    return options


@pytest.mark.parametrize(("model", "case"), _cases())
def test_chunked_rows_match_transformers_windows(model: str, case: str) -> None:
    meta = json.loads((CHUNK / model / "cases.json").read_text())
    flags = next(c["flags"] for c in meta["cases"] if c["case"] == case)
    rows = read_csv_rows(CHUNK / model / "input.csv")
    texts = [row["text"] for row in rows]
    pairs = [row["text_b"] for row in rows] if "text_b" in rows[0] else None
    encoder = mcinfer.Model(FIXTURES / meta["model"], precision="fp32", **_model_options(flags))
    if encoder.task == "embed":
        got = encoder.encode(texts)
    else:
        got = encoder.predict((texts, pairs) if pairs is not None else texts)
    # The fixture's rows are `mcinfer run`'s output: a duplicate id's rows averaged.
    by_id: dict[str, list[np.ndarray]] = defaultdict(list)
    for row, values in zip(rows, got, strict=True):
        by_id[row["id"]].append(values)
    expected = read_csv_rows(CHUNK / model / f"expected_{case}.csv")
    assert [r["id"] for r in expected] == list(by_id)
    for want in expected:
        mine = np.mean(by_id[want["id"]], axis=0)
        reference = np.array([float(v) for k, v in want.items() if k != "id"])
        assert np.abs(mine - reference).max() <= 1e-5, (want["id"], mine, reference)


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
    encoder = mcinfer.Model(FIXTURES / meta["model"], precision="fp32", **_model_options(flags))
    assert encoder.task == "sparse"
    got = encoder.encode([row["text"] for row in rows])
    dense = got.toarray() if hasattr(got, "toarray") else None
    if dense is None:  # no scipy: (indices, values) per row
        dense = np.zeros((len(rows), len(encoder.labels)), dtype=np.float32)
        for r, (indices, values) in enumerate(got):
            dense[r, indices] = values
    by_id: dict[str, list[np.ndarray]] = defaultdict(list)
    for row, values in zip(rows, dense, strict=True):
        by_id[row["id"]].append(values)
    expected = read_csv_rows(SPARSE_CHUNK / model / f"expected_{case}.csv")
    assert [r["id"] for r in expected] == list(by_id)
    for want in expected:
        mine = np.mean(by_id[want["id"]], axis=0)
        reference = np.array([float(v) for k, v in want.items() if k != "id"])
        assert np.abs(mine - reference).max() <= 1e-5, want["id"]
        assert np.array_equal(mine != 0, reference != 0), want["id"]
