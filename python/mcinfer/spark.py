"""Spark: mcinfer over a DataFrame with ``DataFrame.mapInArrow``, one ``mcinfer.Model`` per
Python worker, loaded by the worker's first partition and kept for the ones after it::

    import mcinfer.spark
    df = spark.read.parquet("comments.parquet")
    out = mcinfer.spark.encode(df, "/models/all-MiniLM-L6-v2", column="text")
    out.write.parquet("embeddings.parquet")

``encode`` adds an ``embedding`` column (``array<float>``); ``predict`` adds one ``float``
column per label (a classifier's or cross-encoder's scores, of ``column`` and ``pair_column``).
Each worker's model has one replica per CPU of a Spark task (``spark.task.cpus``), so a worker
per task slot uses the cores Spark gives it. ``map_in_arrow`` gives the function and the output
schema for ``mapInArrow`` itself. A null text stops the job with the words ``mcinfer run`` uses
for such a row (``column 'text' is null in row …``), naming the row by ``id_column``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from mcinfer._model import Model
from mcinfer.ray import Classifier, Encoder, _Predictor

# The models of this worker process by what they were built from: Spark runs a worker's
# partitions one after another in the same process (spark.python.worker.reuse, its default).
_WORKER_PREDICTORS: dict[tuple[Any, ...], _Predictor] = {}


def _task_cpus() -> int:
    """The CPUs of this Spark task (spark.task.cpus), else 1."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return 1
    context = TaskContext.get()
    cpus = context.cpus() if context is not None else 1
    return max(1, int(cpus))


def _predictor(kind: str, options: dict[str, Any]) -> _Predictor:
    """This worker's predictor for these options, built once."""
    key = (kind, repr(sorted(options.items())))
    predictor = _WORKER_PREDICTORS.get(key)
    if predictor is None:
        kwargs = dict(options)
        if kwargs.get("replicas") is None:
            kwargs["replicas"] = _task_cpus()
        predictor = (Encoder if kind == "encode" else Classifier)(**kwargs)
        _WORKER_PREDICTORS[key] = predictor
    return predictor


def _check_nulls(batch: Any, columns: list[str], id_column: str | None, done: int) -> None:
    """A null text is a bad row, as ``mcinfer run`` calls it; the id names it."""
    for name in columns:
        column = batch.column(batch.schema.get_field_index(name))
        if column.null_count == 0:
            continue
        row = column.is_null().to_pylist().index(True)
        where = f"row {done + row + 1} of this partition"
        if id_column is not None and id_column in batch.schema.names:
            where = f"row with {id_column} {batch.column(id_column)[row].as_py()!r}"
        raise ValueError(f"column '{name}' is null in {where}")


def _map_partition(
    kind: str,
    options: dict[str, Any],
    text_columns: list[str],
    id_column: str | None,
    batches: Iterator[Any],
) -> Iterator[Any]:
    import pyarrow as pa

    predictor = _predictor(kind, options)
    done = 0
    for batch in batches:
        _check_nulls(batch, text_columns, id_column, done)
        done += batch.num_rows
        if batch.num_rows == 0:
            continue
        out = predictor(batch)
        if kind == "encode":  # Spark's array<float> is an Arrow list, not a fixed-size one
            index = out.schema.get_field_index(predictor.output_column)  # type: ignore[attr-defined]
            columns = list(out.columns)
            columns[index] = columns[index].cast(pa.list_(pa.float32()))
            out = pa.RecordBatch.from_arrays(columns, names=out.schema.names)
        yield out


def map_in_arrow(
    schema: Any,
    model_dir: str,
    kind: str = "encode",
    *,
    column: str = "text",
    pair_column: str | None = None,
    output_column: str = "embedding",
    prefix: str = "",
    id_column: str | None = "id",
    replicas: int | None = None,
    **model_options: Any,
) -> tuple[Callable[[Iterator[Any]], Iterator[Any]], Any]:
    """The function and output schema for ``df.mapInArrow(function, schema)``, given the input
    DataFrame's ``schema``: ``kind`` "encode" appends ``output_column`` (``array<float>``),
    "predict" one ``float`` column per label (``prefix`` + label). ``model_options`` are
    ``mcinfer.Model``'s; ``replicas`` defaults to the task's CPUs. A classifier's labels are read
    on the driver by loading the model there once."""
    from pyspark.sql.types import ArrayType, FloatType, StructField, StructType

    if kind not in ("encode", "predict"):
        raise ValueError(f"kind must be 'encode' or 'predict', not {kind!r}")
    names = schema.fieldNames()
    text_columns = [column] if pair_column is None or kind == "encode" else [column, pair_column]
    for name in text_columns:
        if name not in names:
            raise KeyError(f"the DataFrame has no column '{name}' (it has {names})")
    options: dict[str, Any] = {"model_dir": str(model_dir), "column": column, **model_options}
    options["replicas"] = replicas
    if kind == "encode":
        options["output_column"] = output_column
        added = [StructField(output_column, ArrayType(FloatType(), containsNull=False))]
    else:
        options.update(pair_column=pair_column, prefix=prefix)
        model_keywords = {k: v for k, v in model_options.items() if k != "pin_threads"}
        labels = Model(str(model_dir), replicas=1, pin_threads=False, **model_keywords).labels
        added = [StructField(prefix + label, FloatType(), nullable=False) for label in labels]
    for field in added:
        if field.name in names:
            raise ValueError(f"the output column '{field.name}' is already in the DataFrame")
    function = functools.partial(_map_partition, kind, options, text_columns, id_column)
    return function, StructType([*schema.fields, *added])


def encode(df: Any, model_dir: str, **options: Any) -> Any:
    """``df`` with the sentence embedding of ``column`` appended (see ``map_in_arrow``)."""
    function, schema = map_in_arrow(df.schema, model_dir, "encode", **options)
    return df.mapInArrow(function, schema)


def predict(df: Any, model_dir: str, **options: Any) -> Any:
    """``df`` with the classifier's scores appended, one column per label (``map_in_arrow``)."""
    function, schema = map_in_arrow(df.schema, model_dir, "predict", **options)
    return df.mapInArrow(function, schema)
