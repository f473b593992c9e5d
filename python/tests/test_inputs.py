"""Every input the package reads gives what a list of str gives; bad inputs are refused with the
row named; outputs are numpy arrays that own the engine's buffer, or Arrow."""

from __future__ import annotations

from pathlib import Path

import mcinfer
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import FIXTURES

TEXTS = ["Hello world.", "", "naïve café — 東京", "The quick brown fox.", "Hello world.", "x" * 300]


@pytest.fixture(scope="module")
def model(minilm_dir: Path) -> mcinfer.Model:
    return mcinfer.Model(minilm_dir, precision="fp32", replicas=2)


@pytest.fixture(scope="module")
def expected(model: mcinfer.Model) -> np.ndarray:
    return model.encode(TEXTS)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: tuple(TEXTS), id="tuple"),
        pytest.param(lambda: np.array(TEXTS), id="numpy-U"),
        pytest.param(lambda: np.array([t.encode() for t in TEXTS]), id="numpy-S"),
        pytest.param(lambda: np.array(TEXTS, dtype=object), id="numpy-object"),
        pytest.param(lambda: pd.Series(TEXTS, dtype=object), id="pandas-object"),
        pytest.param(lambda: pd.Series(TEXTS, dtype="string[pyarrow]"), id="pandas-arrow"),
        pytest.param(lambda: pa.array(TEXTS, pa.string()), id="arrow-string"),
        pytest.param(lambda: pa.array(TEXTS, pa.large_string()), id="arrow-large_string"),
        pytest.param(lambda: pa.array(TEXTS, pa.string_view()), id="arrow-string_view"),
        pytest.param(lambda: pa.array(TEXTS).dictionary_encode(), id="arrow-dictionary"),
        pytest.param(
            lambda: pa.chunked_array([TEXTS[:2], TEXTS[2:3], TEXTS[3:]]), id="arrow-chunked"
        ),
        pytest.param(lambda: pa.array(["pad"] + TEXTS + ["pad"]).slice(1, len(TEXTS)), id="slice"),
    ],
)
def test_every_input_gives_what_a_list_gives(
    model: mcinfer.Model, expected: np.ndarray, make: object
) -> None:
    got = model.encode(make())  # type: ignore[operator]
    assert np.array_equal(got, expected)


def test_bad_inputs_name_the_row(model: mcinfer.Model) -> None:
    with pytest.raises(ValueError, match=r"texts\[2\] is null"):
        model.encode(pa.array(["a", "b", None]))
    with pytest.raises(ValueError, match=r"texts\[1\] is None"):
        model.encode(["a", None])
    with pytest.raises(TypeError, match=r"texts\[0\] is int, expected str"):
        model.encode([3])
    with pytest.raises(TypeError, match="Arrow type 'l'"):
        model.encode(pa.array([1, 2]))
    with pytest.raises(TypeError, match="give one column.*'text'"):
        model.encode(pa.table({"id": [1], "text": ["a"]}))
    with pytest.raises(TypeError, match="float64, expected strings"):
        model.encode(np.zeros(3))
    with pytest.raises(ValueError, match="surrogate"):
        model.encode(["\udc80"])


def test_numpy_output_owns_the_engine_buffer(model: mcinfer.Model, expected: np.ndarray) -> None:
    assert expected.dtype == np.float32 and expected.shape == (len(TEXTS), 384)
    assert expected.flags.c_contiguous and expected.flags.writeable
    # Not a copy of another array: the base is the capsule that frees the engine's vector.
    assert expected.base is not None and not isinstance(expected.base, np.ndarray)
    empty = model.encode([])
    assert empty.shape == (0, 384)


def test_arrow_outputs(model: mcinfer.Model, expected: np.ndarray) -> None:
    embeddings = model.encode(TEXTS, output="arrow")
    assert embeddings.type == pa.list_(pa.float32(), 384)
    assert np.array_equal(np.stack(embeddings.to_numpy(zero_copy_only=False)), expected)
    classifier = mcinfer.Model(FIXTURES / "text" / "bert_cls", precision="fp32", max_len=64)
    table = classifier.predict(["a b", "c"], output="arrow")
    assert table.column_names == classifier.labels
    assert all(t == pa.float32() for t in table.schema.types)
    values = classifier.predict(["a b", "c"])
    assert np.array_equal(np.column_stack([c.to_numpy() for c in table.columns]), values)


def test_parquet_in_embedding_column_out(
    model: mcinfer.Model, expected: np.ndarray, tmp_path: Path
) -> None:
    """The README's notebook recipe: a Parquet table's text column in, an embedding column out,
    written and read back as Parquet."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": list(range(len(TEXTS))), "text": TEXTS}), tmp_path / "in.pq")
    table = pq.read_table(tmp_path / "in.pq", columns=["id", "text"])
    table = table.append_column("embedding", model.encode(table["text"], output="arrow"))
    pq.write_table(table, tmp_path / "out.pq")
    back = pq.read_table(tmp_path / "out.pq")
    assert back.column_names == ["id", "text", "embedding"]
    assert back.schema.field("embedding").type.list_size == 384
    assert np.array_equal(np.stack(back["embedding"].to_numpy(zero_copy_only=False)), expected)


def test_normalize_embeddings_and_batches(minilm_dir: Path) -> None:
    raw = mcinfer.Model(minilm_dir, precision="fp32", normalize=False, replicas=1)
    unnormalised = raw.encode(TEXTS)
    assert np.abs(np.linalg.norm(unnormalised, axis=1) - 1).max() > 0.1
    normalised = raw.encode(TEXTS, normalize_embeddings=True)
    want = unnormalised / np.linalg.norm(unnormalised, axis=1, keepdims=True)
    assert np.abs(normalised - want).max() <= 1e-6
    # Batch limits change how rows are grouped, not what each row gives.
    small = raw.encode(TEXTS, batch_size=1, batch_tokens=8)
    assert np.abs(small - unnormalised).max() <= 1e-5
    with pytest.raises(ValueError, match="batch_size"):
        raw.encode(TEXTS, batch_size=0)
    with pytest.raises(ValueError, match="output must be"):
        raw.encode(TEXTS, output="list")  # type: ignore[arg-type]
