"""mcinfer.ray on a local Ray cluster: two actors, each with its own Model, give what one
process gives; the same predictors on a bare Arrow RecordBatch (Spark's mapInArrow shape)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mcinfer
import mcinfer.ray
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray
from conftest import FIXTURES, read_csv_rows

TEXTS = [f"row {i}: " + "the weather and the markets " * (i % 17) for i in range(240)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # Two actors of one CPU each, and CPUs left for the tasks that read and hand out blocks.
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.mark.usefixtures("cluster")
def test_encoder_on_two_actors_matches_one_process(tmp_path: Path, minilm_dir: Path) -> None:
    source = tmp_path / "rows.parquet"
    pq.write_table(
        pa.table({"id": list(range(len(TEXTS))), "text": TEXTS}), source, row_group_size=60
    )
    ds = (
        ray.data.read_parquet(str(source))
        .repartition(4)
        .map_batches(
            mcinfer.ray.Encoder,
            fn_constructor_kwargs={"model_dir": str(minilm_dir), "precision": "fp32"},
            batch_format="pyarrow",
            batch_size=40,
            concurrency=2,
            num_cpus=1,
        )
    )
    table = pa.concat_tables(ray.get(ds.to_arrow_refs())).sort_by("id")
    assert table.schema.field("embedding").type == pa.list_(pa.float32(), 384)
    assert table.column("id").to_pylist() == list(range(len(TEXTS)))
    got = np.stack(table.column("embedding").to_numpy(zero_copy_only=False))
    want = mcinfer.Model(minilm_dir, precision="fp32").encode(TEXTS)
    assert np.abs(got - want).max() <= 1e-6


@pytest.mark.usefixtures("cluster")
def test_classifier_with_pairs_in_numpy_batches() -> None:
    directory = FIXTURES / "text" / "bert_cls"
    rows = read_csv_rows(directory / "input.csv")
    frame = pd.DataFrame(
        {"i": range(len(rows)), "a": [r["text"] for r in rows], "b": [r["text_b"] for r in rows]}
    )
    ds = (
        ray.data.from_arrow(pa.Table.from_pandas(frame))
        .repartition(4)
        .map_batches(
            mcinfer.ray.Classifier,
            fn_constructor_kwargs={
                "model_dir": str(directory),
                "column": "a",
                "pair_column": "b",
                "prefix": "p_",
                "precision": "fp32",
                "max_len": 64,
            },
            batch_format="numpy",
            batch_size=16,
            concurrency=2,
            num_cpus=1,
        )
    )
    out = pa.concat_tables(ray.get(ds.to_arrow_refs())).to_pandas().sort_values("i")
    assert out["i"].tolist() == list(range(len(rows)))
    model = mcinfer.Model(directory, precision="fp32", max_len=64)
    want = model.predict((frame["a"].tolist(), frame["b"].tolist()))
    got = out[[f"p_{label}" for label in model.labels]].to_numpy()
    assert np.abs(got - want).max() <= 1e-6


def test_the_predictor_on_a_record_batch(minilm_dir: Path) -> None:
    encoder = mcinfer.ray.Encoder(str(minilm_dir), column="body", precision="fp32", replicas=1)
    batch = pa.RecordBatch.from_pydict({"body": TEXTS[:10], "k": list(range(10))})
    out = encoder(batch)
    assert out.schema.names == ["body", "k", "embedding"]
    want = mcinfer.Model(minilm_dir, precision="fp32").encode(TEXTS[:10])
    assert np.abs(np.stack(out.column(2).to_numpy(zero_copy_only=False)) - want).max() <= 1e-6
    with pytest.raises(KeyError, match="no column 'text'"):
        mcinfer.ray.Encoder(str(minilm_dir), precision="fp32", replicas=1)(batch)


def test_the_predictor_on_a_pandas_frame() -> None:
    directory = FIXTURES / "text" / "bert_cls"
    classifier = mcinfer.ray.Classifier(
        str(directory), precision="fp32", max_len=64, replicas=1, prefix="p_"
    )
    frame = pd.DataFrame({"text": ["a b", "c d e"]})
    out = classifier(frame)
    want = mcinfer.Model(directory, precision="fp32", max_len=64).predict(["a b", "c d e"])
    got = out[[f"p_{label}" for label in classifier.model.labels]].to_numpy()
    assert np.abs(got - want).max() <= 1e-6
