"""mcinfer.ray on a local Ray cluster of two nodes: two actors, one per node, each with its own
Model, give what one ``mcinfer run`` gives, every row once, also when an actor dies mid-job;
Ctrl-C stops a job and frees its actors; the same predictors on a bare Arrow RecordBatch and a
pandas frame."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
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

# The workers cannot import this file: its classes travel by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

TEXTS = [f"row {i}: " + "the weather and the markets " * (i % 17) for i in range(240)]


SLOT = "mcinfer_slot"  # one per node: two actors that each take one run on two nodes


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    # Two nodes on this machine (a head and a worker, as ray.cluster_utils.Cluster starts them),
    # with CPUs left on each for the tasks that read and hand out blocks.
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 2, "resources": {SLOT: 1}, "object_store_memory": 256 * 2**20}
    nodes = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    nodes.add_node(**node)
    ray.init(address=nodes.address, log_to_driver=False, configure_logging=False)
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    yield nodes.address
    ray.shutdown()
    nodes.shutdown()


@pytest.fixture(scope="module")
def run_embeddings(tmp_path_factory: pytest.TempPathFactory, minilm_dir: Path) -> np.ndarray:
    """One `mcinfer run` over TEXTS (CSV: the wheel's run writes no Parquet), in id order."""
    directory = tmp_path_factory.mktemp("run")
    pd.DataFrame({"id": range(len(TEXTS)), "text": TEXTS}).to_csv(
        directory / "rows.csv", index=False
    )
    mcinfer.run(
        minilm_dir, directory / "rows.csv", directory / "run.csv", precision="fp32", quiet=True
    )
    run = pd.read_csv(directory / "run.csv").sort_values("id")
    assert run["id"].tolist() == list(range(len(TEXTS)))
    return run[[f"e{i}" for i in range(384)]].to_numpy(dtype=np.float32)


def _encode_on_two_nodes(tmp_path: Path, encoder: type, constructor: dict[str, object]) -> None:
    """The README's recipe: Parquet in, ActorPoolStrategy actors (one per node), Parquet out."""
    source = tmp_path / "rows.parquet"
    pq.write_table(
        pa.table({"id": list(range(len(TEXTS))), "text": TEXTS}), source, row_group_size=60
    )
    ds = (
        ray.data.read_parquet(str(source))
        .repartition(4)
        .map_batches(
            encoder,
            fn_constructor_kwargs=constructor,
            batch_format="pyarrow",
            batch_size=40,
            compute=ray.data.ActorPoolStrategy(size=2),
            num_cpus=1,
            resources={SLOT: 1},
        )
    )
    ds.write_parquet(str(tmp_path / "out"))


def _expect_every_row_once(tmp_path: Path, want: np.ndarray) -> None:
    table = pq.read_table(tmp_path / "out").sort_by("id")
    assert table.schema.field("embedding").type == pa.list_(pa.float32(), 384)
    assert table.column("id").to_pylist() == list(range(len(TEXTS)))  # every row once
    got = np.stack(table.column("embedding").to_numpy(zero_copy_only=False))
    assert np.abs(got - want).max() <= 1e-6


@pytest.mark.usefixtures("cluster")
def test_encoder_on_two_nodes_matches_one_mcinfer_run(
    tmp_path: Path, minilm_dir: Path, run_embeddings: np.ndarray
) -> None:
    _encode_on_two_nodes(
        tmp_path, mcinfer.ray.Encoder, {"model_dir": str(minilm_dir), "precision": "fp32"}
    )
    _expect_every_row_once(tmp_path, run_embeddings)


class _DiesOnce(mcinfer.ray.Encoder):
    """An Encoder whose process dies (as a killed actor's does) at its first batch, once in the
    whole cluster: the first actor to create `marker`."""

    def __init__(self, marker: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.marker = marker

    def __call__(self, batch: object) -> object:
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return super().__call__(batch)
        os._exit(1)


@pytest.mark.usefixtures("cluster")
def test_a_killed_actor_loses_and_doubles_nothing(
    tmp_path: Path, minilm_dir: Path, run_embeddings: np.ndarray
) -> None:
    # Ray Data restarts the actor and retries its batch (its actor pools' default max_restarts and
    # max_task_retries of -1); mcinfer's part is a constructor that can run again.
    marker = tmp_path / "died"
    constructor = {"marker": str(marker), "model_dir": str(minilm_dir), "precision": "fp32"}
    _encode_on_two_nodes(tmp_path, _DiesOnce, constructor)
    assert marker.exists()  # an actor did die
    _expect_every_row_once(tmp_path, run_embeddings)


DRIVER = """
import signal, sys, ray, mcinfer.ray
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
text = "the weather and the markets " * 20
ds = ray.data.range(100_000, override_num_blocks=400).map_batches(
    lambda b: {"text": [text] * len(b["id"])}).map_batches(
    mcinfer.ray.Encoder, fn_constructor_kwargs={"model_dir": sys.argv[2], "precision": "fp32"},
    batch_format="pyarrow", batch_size=64, compute=ray.data.ActorPoolStrategy(size=2),
    num_cpus=1, resources={sys.argv[3]: 1})
for batch in ds.iter_batches(batch_size=64):
    print("batch", flush=True)
"""


def test_ctrl_c_stops_the_job_and_frees_its_actors(cluster: str, minilm_dir: Path) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, cluster, str(minilm_dir), SLOT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert driver.stdout is not None
        ready, _, _ = select.select([driver.stdout], [], [], 120)
        assert ready, "no batch within 120 s"
        assert driver.stdout.readline() == "batch\n"  # the actors are computing
        driver.send_signal(signal.SIGINT)
        _, err = driver.communicate(timeout=60)
    finally:
        driver.kill()
    assert driver.returncode != 0
    assert "KeyboardInterrupt" in err, err[-2000:]
    # The job's actors went with it: both nodes' slots are free for the next job.
    deadline = time.monotonic() + 60
    while ray.available_resources().get(SLOT, 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ray.available_resources().get(SLOT, 0) == 2


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
