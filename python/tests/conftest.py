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
