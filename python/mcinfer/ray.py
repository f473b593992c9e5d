"""Ray Data: stateful batch predictors for ``Dataset.map_batches``, one ``mcinfer.Model`` per
actor with its weights shared by as many replicas as the actor has CPUs::

    import ray, mcinfer.ray
    ds = ray.data.read_parquet("s3://bucket/comments/")
    ds = ds.map_batches(
        mcinfer.ray.Encoder,
        fn_constructor_kwargs={"model_dir": "/models/all-MiniLM-L6-v2"},
        batch_format="pyarrow", batch_size=4096, num_cpus=8,
        compute=ray.data.ActorPoolStrategy(size=2),  # Ray < 2.9 too; concurrency= is deprecated
    )
    ds.write_parquet("s3://bucket/embeddings/")

``Encoder`` adds an ``embedding`` column (``fixed_size_list<float32>[D]``); ``Classifier`` adds
one float32 column per label. The text column is read in place from the Arrow batch. Batches may
be pyarrow Tables, pandas DataFrames or dicts of numpy arrays (Ray's batch formats); the result
has the same format. The same shape serves Spark's ``mapInArrow``: call the instance on each
``pyarrow.RecordBatch`` (``Encoder(...)(batch)``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mcinfer._model import Model, _embeddings_to_arrow


def _actor_cpus() -> int:
    """The CPUs Ray gave this actor (num_cpus), else the CPUs this process may run on."""
    try:
        import ray
    except ImportError:
        return max(1, len(os.sched_getaffinity(0)))
    if ray.is_initialized():
        assigned = ray.get_runtime_context().get_assigned_resources().get("CPU")
        if assigned:
            return max(1, int(assigned))
    return max(1, len(os.sched_getaffinity(0)))


class _Predictor:
    def __init__(self, model_dir: str, column: str, replicas: int | None, **model_options: Any):
        self.column = column
        # Several actors share the host's cores: their replicas must not pin to the same ones.
        model_options.setdefault("pin_threads", False)
        self.model = Model(model_dir, replicas=replicas or _actor_cpus(), **model_options)

    def _texts(self, batch: Any) -> Any:
        try:
            return batch[self.column]
        except KeyError:
            names = list(batch.column_names if hasattr(batch, "column_names") else batch.keys())
            raise KeyError(f"the batch has no column '{self.column}' (it has {names})") from None

    def _compute(self, batch: Any) -> np.ndarray:
        raise NotImplementedError

    def _columns(self, values: np.ndarray) -> dict[str, Any]:
        raise NotImplementedError

    def __call__(self, batch: Any) -> Any:
        values = self._compute(batch)
        if hasattr(batch, "append_column"):  # pyarrow Table or RecordBatch
            out = batch
            for name, column in self._arrow_columns(values).items():
                out = _append(out, name, column)
            return out
        if hasattr(batch, "assign"):  # pandas DataFrame
            return batch.assign(**self._columns(values))
        out_dict = dict(batch)
        out_dict.update(self._columns(values))
        return out_dict

    def _arrow_columns(self, values: np.ndarray) -> dict[str, Any]:
        raise NotImplementedError


def _append(batch: Any, name: str, column: Any) -> Any:
    import pyarrow as pa

    if isinstance(batch, pa.RecordBatch):
        return pa.RecordBatch.from_arrays([*batch.columns, column], [*batch.schema.names, name])
    return batch.append_column(name, column)


class Encoder(_Predictor):
    """Adds ``output_column`` (default ``embedding``): the sentence embedding of ``column``."""

    def __init__(
        self,
        model_dir: str,
        column: str = "text",
        output_column: str = "embedding",
        replicas: int | None = None,
        prompt_name: str | None = None,
        **model_options: Any,
    ) -> None:
        super().__init__(model_dir, column, replicas, **model_options)
        self.output_column = output_column
        self.prompt_name = prompt_name

    def _compute(self, batch: Any) -> np.ndarray:
        return self.model.encode(self._texts(batch), prompt_name=self.prompt_name)  # type: ignore[no-any-return]

    def _columns(self, values: np.ndarray) -> dict[str, Any]:
        return {self.output_column: list(values)}

    def _arrow_columns(self, values: np.ndarray) -> dict[str, Any]:
        return {self.output_column: _embeddings_to_arrow(values)}


class Classifier(_Predictor):
    """Adds one float32 column per label (``prefix`` + label): the classifier's probabilities
    for ``column`` (and ``pair_column``, for sentence pairs)."""

    def __init__(
        self,
        model_dir: str,
        column: str = "text",
        pair_column: str | None = None,
        prefix: str = "",
        replicas: int | None = None,
        **model_options: Any,
    ) -> None:
        super().__init__(model_dir, column, replicas, **model_options)
        self.pair_column = pair_column
        self.prefix = prefix

    def _compute(self, batch: Any) -> np.ndarray:
        texts = self._texts(batch)
        if self.pair_column is not None:
            return self.model.predict((texts, batch[self.pair_column]))  # type: ignore[no-any-return]
        return self.model.predict(texts)  # type: ignore[no-any-return]

    def _columns(self, values: np.ndarray) -> dict[str, Any]:
        return {self.prefix + label: values[:, i] for i, label in enumerate(self.model.labels)}

    def _arrow_columns(self, values: np.ndarray) -> dict[str, Any]:
        import pyarrow as pa

        return {
            self.prefix + label: pa.array(values[:, i], pa.float32())
            for i, label in enumerate(self.model.labels)
        }
