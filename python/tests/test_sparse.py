"""SPLADE sparse encoders (tests/fixtures/sparse, written by sentence-transformers 6.3's
SparseEncoder: see its README) through mcinfer.Model and through the CLI's outputs read back by
pyarrow: every value against the reference within 1e-5 (fp32; relative above 1, since sum
pooling adds up to 24 weights), with exactly the reference's nonzero set; merges against a numpy
groupby-mean of the reference's dense rows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import mcinfer
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, read_csv_rows, read_safetensors

SPARSE = ["sparse6_bert_max_log1p", "sparse6_bert_sum_relu", "sparse6_bert_max_active8"]
TOLERANCE = 1e-5


def _texts(directory: Path) -> list[str]:
    return [row["text"] for row in read_csv_rows(directory / "input.csv")]


def _expect_equal(got: npt.NDArray[np.float64], want: npt.NDArray[np.float32], what: str) -> None:
    assert got.shape == want.shape, what
    assert np.array_equal(got != 0, want != 0), f"{what}: the nonzero sets differ"
    error = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    assert error.max() <= TOLERANCE, f"{what}: {error.max()}"


def _dense(
    indices: list[list[int]], values: list[list[float]], vocab: int
) -> npt.NDArray[np.float64]:
    out = np.zeros((len(indices), vocab))
    for r, (idx, val) in enumerate(zip(indices, values)):
        assert list(idx) == sorted(set(idx)), "indices ascend"
        out[r, idx] = val
    return out


@pytest.mark.parametrize("name", SPARSE)
def test_encode_returns_a_csr_matrix_equal_to_sparse_encoder(name: str) -> None:
    import scipy.sparse

    directory = FIXTURES / "sparse" / name
    want = read_safetensors(directory / "reference.safetensors")["dense"]
    model = mcinfer.Model(directory, precision="fp32")
    assert model.task == "sparse"
    got = model.encode(_texts(directory))
    assert isinstance(got, scipy.sparse.csr_matrix)
    one = model.encode(_texts(directory)[2])  # one str: its [1, vocabulary] row
    assert one.shape == (1, want.shape[1])
    _expect_equal(one.toarray().astype(np.float64), want[2:3], name)
    assert got.dtype == np.float32 and got.indices.dtype == np.int32
    assert got.has_sorted_indices
    _expect_equal(got.toarray().astype(np.float64), want, name)


def test_encode_without_scipy_gives_indices_and_values_per_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    directory = FIXTURES / "sparse" / "sparse6_bert_max_log1p"
    want = read_safetensors(directory / "reference.safetensors")["dense"]
    model = mcinfer.Model(directory, precision="fp32")
    # An entry of None makes `import scipy.sparse` raise ImportError, as without scipy.
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    rows = model.encode(_texts(directory))
    assert isinstance(rows, list) and len(rows) == want.shape[0]
    one = model.encode(_texts(directory)[1])  # one str: that row's (indices, values)
    assert isinstance(one, tuple) and np.array_equal(one[0], rows[1][0])
    assert all(i.dtype == np.int32 and v.dtype == np.float32 for i, v in rows)
    got = _dense([list(i) for i, _ in rows], [list(v) for _, v in rows], want.shape[1])
    _expect_equal(got, want, "list of (indices, values)")


def test_encode_as_arrow_is_two_list_columns() -> None:
    directory = FIXTURES / "sparse" / "sparse6_bert_max_active8"
    want = read_safetensors(directory / "reference.safetensors")["dense"]
    table = mcinfer.Model(directory, precision="fp32").encode(_texts(directory), output="arrow")
    assert table.schema.field("indices").type == pa.list_(pa.int32())
    assert table.schema.field("values").type == pa.list_(pa.float32())
    got = _dense(table["indices"].to_pylist(), table["values"].to_pylist(), want.shape[1])
    _expect_equal(got, want, "arrow")


# The CLI with Parquet: the build tree's (scripts/test_python.sh sets MCINFER_CLI when the tree
# has one), since the wheel's console script is built without Arrow.
CLI = os.environ.get("MCINFER_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="MCINFER_CLI: no CLI built with Arrow")


def _run(*args: str | Path) -> None:
    assert CLI is not None
    done = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def _run_fp32(directory: Path, out: Path, *extra: str) -> None:
    """`mcinfer run` of the fixture's input.csv in fp32, quietly."""
    input_csv = directory / "input.csv"
    _run(
        "run",
        directory,
        "--input",
        input_csv,
        "--output",
        out,
        "--precision",
        "fp32",
        "--quiet",
        *extra,
    )


def _sparse_table(path: Path, vocab: int) -> tuple[list[str], npt.NDArray[np.float64]]:
    table = pq.read_table(path)
    for column, item in (("indices", pa.int32()), ("values", pa.float32())):
        kind = table.schema.field(column).type
        assert pa.types.is_list(kind) and kind.value_type == item, kind
    got = _dense(table["indices"].to_pylist(), table["values"].to_pylist(), vocab)
    return [str(i) for i in table["id"].to_pylist()], got


@needs_cli
@pytest.mark.parametrize("name", SPARSE)
@pytest.mark.parametrize("top_k", [None, 5])
def test_cli_sparse_parquet_and_jsonl_read_back_equal_encode(
    tmp_path: Path, name: str, top_k: int | None
) -> None:
    directory = FIXTURES / "sparse" / name
    want = read_safetensors(directory / "reference.safetensors")[
        "dense" if top_k is None else "top5"
    ]
    ids = [f"t{i:02d}" for i in range(want.shape[0])]
    extra = [] if top_k is None else ["--sparse-top-k", str(top_k)]
    for ext in ("parquet", "jsonl"):
        out = tmp_path / f"o.{ext}"
        _run_fp32(directory, out, *extra)
        if ext == "parquet":
            got_ids, got = _sparse_table(out, want.shape[1])
        else:
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            assert all(list(r) == ["id", "indices", "values"] for r in rows)
            got_ids = [r["id"] for r in rows]
            got = _dense([r["indices"] for r in rows], [r["values"] for r in rows], want.shape[1])
        assert got_ids == ids
        _expect_equal(got, want, f"{name} {ext} top_k={top_k}")


@needs_cli
def test_cli_dense_parquet_reads_back_equal_encode(tmp_path: Path) -> None:
    directory = FIXTURES / "st" / "st6_roberta_mean"
    want = read_safetensors(directory / "reference.safetensors")["embeddings_default"]
    out = tmp_path / "o.parquet"
    _run_fp32(directory, out)
    table = pq.read_table(out)
    kind = table.schema.field("embedding").type
    assert pa.types.is_fixed_size_list(kind) and kind.value_type == pa.float32(), kind
    assert kind.list_size == want.shape[1]
    assert table["id"].to_pylist() == [row["id"] for row in read_csv_rows(directory / "input.csv")]
    got = np.array(table["embedding"].to_pylist())
    assert np.abs(got - want).max() <= 1e-5


@needs_cli
def test_cli_merges_sparse_rows_as_a_dense_groupby_mean(tmp_path: Path) -> None:
    directory = FIXTURES / "sparse" / "sparse6_bert_max_log1p"
    dense = read_safetensors(directory / "reference.safetensors")["dense"].astype(np.float64)
    top5 = read_safetensors(directory / "reference.safetensors")["top5"].astype(np.float64)
    texts = _texts(directory)
    # Duplicate ids within one run: g0..g4, each row's id its index mod 5.
    groups = [f"g{i % 5}" for i in range(len(texts))]
    rows = tmp_path / "dup.jsonl"
    rows.write_text("".join(json.dumps({"id": g, "text": t}) + "\n" for g, t in zip(groups, texts)))
    frame = {g: dense[[i for i, h in enumerate(groups) if h == g]].mean(axis=0) for g in groups}
    want_ids = list(dict.fromkeys(groups))
    out = tmp_path / "dup.parquet"
    _run(
        "run",
        directory,
        "--input",
        rows,
        "--output",
        out,
        "--precision",
        "fp32",
        "--quiet",
        "--replicas",
        "2",
        "--batch-size",
        "3",
    )
    got_ids, got = _sparse_table(out, dense.shape[1])
    assert got_ids == want_ids
    _expect_equal(got, np.array([frame[g] for g in want_ids]), "duplicate ids")
    # `mcinfer merge` of two runs of the same ids: the full weights and the top 5, weighted 1:3,
    # over the union of their indices (the top-5 run's missing ones count 0).
    full, five = tmp_path / "full.jsonl", tmp_path / "five.parquet"
    _run_fp32(directory, full)
    _run_fp32(directory, five, "--sparse-top-k", "5")
    merged = tmp_path / "merged.parquet"
    _run("merge", full, five, "--weights", "1", "3", "--output", merged)
    got_ids, got = _sparse_table(merged, dense.shape[1])
    assert got_ids == [f"t{i:02d}" for i in range(dense.shape[0])]
    _expect_equal(got, (1 * dense + 3 * top5) / 4, "merge")


def test_console_script_refuses_formats_before_reading_the_weights(tmp_path: Path) -> None:
    """The wheel's console script has no Arrow: a Parquet output is refused, as CSV is for
    sparse rows, before the weights are read (they are broken here) or a row is computed."""
    script = Path(sys.executable).parent / "mcinfer"
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
    assert "Parquet: none" in version.stdout, version.stdout
    model = tmp_path / "model"
    shutil.copytree(FIXTURES / "sparse" / "sparse6_bert_max_log1p", model)
    (model / "model.safetensors").write_bytes(b"not safetensors")

    def run_to(out: Path) -> subprocess.CompletedProcess[str]:
        command = [script, "run", model, "--input", model / "input.csv", "--output", out]
        return subprocess.run(list(map(str, command)), capture_output=True, text=True, check=False)

    for ext, message in (
        ("parquet", "this mcinfer was built without Parquet support"),
        ("csv", "CSV cannot hold sparse rows; write JSONL (.jsonl) or Parquet (.parquet)"),
    ):
        out = tmp_path / f"o.{ext}"
        done = run_to(out)
        assert done.returncode != 0
        assert message in done.stderr, done.stderr
        assert "safetensors" not in done.stderr, done.stderr
        assert not out.exists()
    # The weights are what fails once the output is one this build writes.
    done = run_to(tmp_path / "o.jsonl")
    assert done.returncode != 0 and "model.safetensors" in done.stderr, done.stderr
