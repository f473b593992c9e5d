"""mcinfer.ray on a local Ray cluster of two nodes: two actors, one per node, each with its own
Model, give what one ``mcinfer run`` gives, every row once; the same predictors on a bare Arrow
RecordBatch (Spark's mapInArrow shape)."""

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


SLOT = "mcinfer_slot"  # one per node: two actors that each take one run on two nodes


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # Two nodes on this machine (a head and a worker, as ray.cluster_utils.Cluster starts them),
    # with CPUs left on each for the tasks that read and hand out blocks.
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 2, "resources": {SLOT: 1}, "object_store_memory": 256 * 2**20}
    nodes = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    nodes.add_node(**node)
    ray.init(address=nodes.address, log_to_driver=False, configure_logging=False)
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    yield
    ray.shutdown()
    nodes.shutdown()


@pytest.mark.usefixtures("cluster")
def test_encoder_on_two_nodes_matches_one_mcinfer_run(tmp_path: Path, minilm_dir: Path) -> None:
    source = tmp_path / "rows.parquet"
    rows = pa.table({"id": list(range(len(TEXTS))), "text": TEXTS})
    pq.write_table(rows, source, row_group_size=60)
    # The README's recipe: Parquet in, ActorPoolStrategy actors, Parquet out.
    ds = (
        ray.data.read_parquet(str(source))
        .repartition(4)
        .map_batches(
            mcinfer.ray.Encoder,
            fn_constructor_kwargs={"model_dir": str(minilm_dir), "precision": "fp32"},
            batch_format="pyarrow",
            batch_size=40,
            compute=ray.data.ActorPoolStrategy(size=2),
            num_cpus=1,
            resources={SLOT: 1},
        )
    )
    ds.write_parquet(str(tmp_path / "out"))
    table = pq.read_table(tmp_path / "out").sort_by("id")
    assert table.schema.field("embedding").type == pa.list_(pa.float32(), 384)
    assert table.column("id").to_pylist() == list(range(len(TEXTS)))  # every row once
    got = np.stack(table.column("embedding").to_numpy(zero_copy_only=False))
    # One `mcinfer run` over the same rows (CSV: the wheel's run writes no Parquet).
    pd.DataFrame({"id": rows["id"].to_pylist(), "text": TEXTS}).to_csv(
        tmp_path / "rows.csv", index=False
    )
    mcinfer.run(
        minilm_dir, tmp_path / "rows.csv", tmp_path / "run.csv", precision="fp32", quiet=True
    )
    run = pd.read_csv(tmp_path / "run.csv").sort_values("id")
    assert run["id"].tolist() == list(range(len(TEXTS)))
    want = run[[f"e{i}" for i in range(384)]].to_numpy(dtype=np.float32)
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
            compute=ray.data.ActorPoolStrategy(size=2),
            num_cpus=1,
            resources={SLOT: 1},
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
