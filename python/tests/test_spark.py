"""mcinfer.spark on a real local Spark (``local[2]``: two Python workers): the embeddings of a
Parquet file equal one ``mcinfer run`` over the same rows, every row once; a classifier over
pairs equals ``Model.predict``; each worker loads its model once for all its partitions; a null
text stops the job with the CLI's words for it.

Spark needs pyspark (python/requirements-spark.txt) and a Java runtime; without them these tests
skip, unless MCINFER_REQUIRE_SPARK=1 (CI), where they fail."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import mcinfer
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, read_csv_rows

if os.environ.get("MCINFER_REQUIRE_SPARK") != "1":
    pytest.importorskip(
        "pyspark", reason="pyspark is not installed (with MCINFER_REQUIRE_SPARK=1 this fails)"
    )
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        pytest.skip("no Java runtime for Spark", allow_module_level=True)

import mcinfer.spark
from pyspark import cloudpickle
from pyspark.sql import SparkSession

# The workers cannot import this file: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

TEXTS = [f"row {i}: " + "the weather and the markets " * (i % 17) for i in range(240)]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    # The workers run this interpreter (the test environment, where mcinfer is installed).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("mcinfer-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_encode_parquet_matches_one_mcinfer_run(
    spark: SparkSession, tmp_path: Path, minilm_dir: Path
) -> None:
    source = tmp_path / "rows.parquet"
    pq.write_table(
        pa.table({"id": list(range(len(TEXTS))), "text": TEXTS}), source, row_group_size=60
    )
    df = spark.read.parquet(str(source)).repartition(5)
    out = mcinfer.spark.encode(df, str(minilm_dir), precision="fp32")
    out.write.parquet(str(tmp_path / "out"))
    table = pq.read_table(tmp_path / "out").sort_by("id")
    assert table.column("id").to_pylist() == list(range(len(TEXTS)))  # every row once
    assert table.column("text").to_pylist() == TEXTS
    got = np.stack(table.column("embedding").to_numpy(zero_copy_only=False)).astype(np.float32)
    assert got.shape == (len(TEXTS), 384)
    pd.DataFrame({"id": range(len(TEXTS)), "text": TEXTS}).to_csv(tmp_path / "in.csv", index=False)
    mcinfer.run(minilm_dir, tmp_path / "in.csv", tmp_path / "run.csv", precision="fp32", quiet=True)
    run = pd.read_csv(tmp_path / "run.csv").sort_values("id")
    want = run[[f"e{i}" for i in range(384)]].to_numpy(dtype=np.float32)
    assert np.abs(got - want).max() <= 1e-6


def test_predict_pairs_matches_the_model(spark: SparkSession) -> None:
    directory = FIXTURES / "text" / "bert_cls"
    rows = read_csv_rows(directory / "input.csv")
    frame = pd.DataFrame(
        {"i": range(len(rows)), "a": [r["text"] for r in rows], "b": [r["text_b"] for r in rows]}
    )
    df = spark.createDataFrame(frame).repartition(3)
    out = mcinfer.spark.predict(
        df, str(directory), column="a", pair_column="b", prefix="p_", precision="fp32", max_len=64
    )
    got_frame = out.toPandas().sort_values("i")
    assert got_frame["i"].tolist() == list(range(len(rows)))
    model = mcinfer.Model(directory, precision="fp32", max_len=64)
    assert list(got_frame.columns) == ["i", "a", "b", *[f"p_{label}" for label in model.labels]]
    want = model.predict((frame["a"].tolist(), frame["b"].tolist()))
    got = got_frame[[f"p_{label}" for label in model.labels]].to_numpy()
    assert np.abs(got - want).max() <= 1e-6


def _loads(batches: Iterator[pa.RecordBatch], model_dir: str) -> Iterator[pa.RecordBatch]:
    """Per partition: this worker's pid and the identity of the predictor it was handed."""
    predictor = mcinfer.spark._predictor(
        "encode", {"model_dir": model_dir, "precision": "fp32", "replicas": None}
    )
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"pid": [os.getpid()], "predictor": [id(predictor)]})


def test_each_worker_keeps_its_model_across_partitions(
    spark: SparkSession, minilm_dir: Path
) -> None:
    df = spark.range(0, 64, numPartitions=16)
    out = df.mapInArrow(
        lambda batches: _loads(batches, str(minilm_dir)), "pid long, predictor long"
    ).toPandas()
    assert len(out) == 16  # one line per partition
    per_worker = out.groupby("pid")["predictor"].nunique()
    assert len(per_worker) <= 2 and (per_worker == 1).all(), out  # local[2]: two workers at most


def test_a_null_text_stops_the_job_naming_the_row(spark: SparkSession, minilm_dir: Path) -> None:
    frame = pd.DataFrame({"id": ["a", "b", "c"], "text": ["one", None, "three"]})
    df = spark.createDataFrame(frame, "id string, text string").coalesce(1)
    with pytest.raises(Exception, match=r"column 'text' is null in row with id 'b'"):
        mcinfer.spark.encode(df, str(minilm_dir), precision="fp32").collect()
    with pytest.raises(KeyError, match="no column 'body'"):
        mcinfer.spark.encode(df, str(minilm_dir), column="body")
