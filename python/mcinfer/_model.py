"""``mcinfer.Model``: a model directory loaded once, then ``encode``, ``predict`` and ``rank``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mcinfer import _core

PathLike = str | os.PathLike[str]
Output = Literal["numpy", "arrow"]


def _text_column(values: Any, what: str) -> Any:
    """What the engine reads in place: Arrow objects and str sequences as they are; numpy and
    pandas columns without making a Python str per row where their layout allows it."""
    if hasattr(values, "__arrow_c_stream__") or hasattr(values, "__arrow_c_array__"):
        return values
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{what}: a numpy array of {values.ndim} dimensions; give one column")
        if values.dtype.kind == "U":  # UTF-32 cells: one encoding pass, no str objects
            encoded = np.char.encode(values, "utf-8")
            return _core.TextColumn.from_fixed_width(
                encoded.tobytes(), len(encoded), encoded.dtype.itemsize
            )
        if values.dtype.kind == "S":
            return _core.TextColumn.from_fixed_width(
                np.ascontiguousarray(values).tobytes(), len(values), values.dtype.itemsize
            )
        if values.dtype.kind == "T":  # numpy 2's StringDType
            return values.astype(object)
        if values.dtype.kind != "O":
            raise TypeError(f"{what}: a numpy array of {values.dtype}, expected strings")
        return values
    to_numpy = getattr(values, "to_numpy", None)  # a pandas Series of Python str objects
    if callable(to_numpy) and not isinstance(values, Sequence):
        return _text_column(to_numpy(), what)
    return values


class _Progress:
    """A tqdm bar fed with the rows done so far (when tqdm is installed)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, unit="rows", desc="mcinfer")

    def callback(self) -> Callable[[int], None] | None:
        return self._update if self._bar is not None else None

    def _update(self, done: int) -> None:
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class Model:
    """A Hugging Face model directory (``save_pretrained`` or sentence-transformers ``save``)
    loaded once: one read-only copy of the weights shared by one replica per core.

    Local directories only. ``precision`` is ``"auto"`` (bf16 where the CPU has native bf16 dot
    products, else fp32), ``"fp32"``, ``"bf16"`` or ``"int8"``; ``replicas`` defaults to one per
    physical core (``backend="cpu"``; each pinned to its core unless ``pin_threads=False``) or
    per device (``backend="pjrt"``, ``plugin="cpu"``,
    ``"cuda"``, ``"tpu"`` or a plugin's ``.so`` path). ``task``, ``pooling``, ``normalize``,
    ``max_len``, ``prompt`` and ``prompt_name`` default to what the directory says, as for
    ``mcinfer run``. Raises ``mcinfer.Error`` naming the file or field at fault.

    Texts longer than ``max_len`` are truncated (``long_input="truncate"``), or with
    ``long_input="chunk"`` cut into Hugging Face's overflowing windows (``stride`` tokens shared
    between neighbours), each computed as a sequence of its own and reduced into the row's one
    output by ``chunk_reduce`` (``"mean"``, ``"max"``, ``"first"``, ``"token-weighted"``;
    classifiers reduce their ``chunk_values``, ``"logits"`` then the activation once, or
    ``"probs"``), exactly as ``mcinfer run --long-input chunk`` does.

    bf16 and int8 pass ``mcinfer run``'s accuracy gate on the rows of the first call
    (``encode``, ``predict``, ``rank``): up to ``check_precision`` of them (default 32; 0: no
    check, and int8 then runs uncalibrated) go through fp32 and the reduced precision first;
    int8's weights are smoothed and its GEMMs chosen on them against its default targets
    (embeddings cosine >= 0.99, classifier probabilities within 0.05, sparse rows cosine >= 0.99
    and top-k overlap >= 0.95), ``min_cosine`` / ``min_agreement`` bound them further, and
    ``int8_keep`` names the GEMMs to keep out of int8 instead (``--int8-keep``). A miss raises
    ``mcinfer.PrecisionCheckError`` before any output (on that call and every later one);
    ``precision_report`` holds the figures. Later calls run on the weights chosen then.

    ``activation``, ``outputs`` (several outputs of one pass, e.g. ``"probs,cls"`` or a list:
    ``predict``/``encode`` then give a dict by output) and ``sparse_top_k`` are ``mcinfer run``'s
    ``--activation``, ``--outputs`` and ``--sparse-top-k``: every keyword is an option of the
    table the command line builds its flags from, parsed and refused as the flag is.

    A Model may be used from one thread at a time; each call runs on all its replicas, with the
    GIL released. Do not share it with fork-based pools: give each process its own (``spawn``).
    """

    def __init__(
        self,
        model_dir: PathLike,
        precision: str = "auto",
        replicas: int | None = None,
        backend: str = "cpu",
        plugin: str | None = None,
        *,
        devices: int | None = None,
        threads_per_replica: int = 1,
        pin_threads: bool = True,
        task: str | None = None,
        max_len: int | None = None,
        pooling: str | None = None,
        normalize: bool | None = None,
        prompt: str | None = None,
        prompt_name: str | None = None,
        tokenizer_compat: str = "auto",
        truncate_dim: int | None = None,
        long_input: str = "truncate",
        stride: int = 0,
        chunk_reduce: str = "mean",
        chunk_values: str = "logits",
        check_precision: int | None = None,
        min_cosine: float | None = None,
        min_agreement: float | None = None,
        int8_keep: str | None = None,
        activation: str = "auto",
        outputs: str | Sequence[str] | None = None,
        sparse_top_k: int | None = None,
    ) -> None:
        path = os.fspath(model_dir)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{path}: not a model directory (mcinfer loads local ones)")
        # Every keyword is an option of the table `mcinfer run` builds its flags from: checked and
        # parsed there, refused in the CLI's words (mcinfer.UsageError); None: the default.
        options = {
            "precision": precision,
            "replicas": replicas,
            "backend": backend,
            "plugin": plugin,
            "devices": devices,
            "threads_per_replica": threads_per_replica,
            "pin_threads": pin_threads,
            "task": task,
            "max_len": max_len,
            "pooling": pooling,
            "normalize": normalize,
            "prompt": prompt,
            "prompt_name": prompt_name,
            "tokenizer_compat": tokenizer_compat,
            "truncate_dim": truncate_dim,
            "long_input": long_input,
            "stride": stride,
            "chunk_reduce": chunk_reduce,
            "chunk_values": chunk_values,
            "check_precision": check_precision,
            "min_cosine": min_cosine,
            "min_agreement": min_agreement,
            "int8_keep": int8_keep,
            "activation": activation,
            # A list is the flag's comma-separated text, parsed as the flag is.
            "outputs": outputs
            if outputs is None or isinstance(outputs, str)
            else ",".join(outputs),
            "sparse_top_k": sparse_top_k,
        }
        self._model = _core.Model.load(path, options)
        self.model_dir = path
        # Several outputs of one pass: each one's columns, one run of them named by the prefix
        # the run's CSV gives them (<output>.<label>), kept as a slice so results are views.
        self._outputs: dict[str, slice] = {}
        if outputs is not None:
            names = [column.split(".", 1)[0] for column in self.labels]
            for name in dict.fromkeys(names):
                first = names.index(name)
                self._outputs[name] = slice(first, first + names.count(name))

    @property
    def precision(self) -> str:
        return str(self._model.precision)

    @property
    def precision_report(self) -> dict[str, Any] | None:
        """The precision gate's evidence, as ``mcinfer run``'s report has it: ``precision_check``
        (the rows, the lowest and mean cosine, the agreement) once a bf16 or int8 model's first
        call has checked it, ``int8_plan`` (the GEMMs kept out of int8, whether the input
        smoothing was calibrated) and the load's ``warnings``. None for fp32, for bf16 without
        check rows, and before the first call of a model with check rows."""
        report = str(self._model.precision_report)
        return json.loads(report) if report else None

    @property
    def task(self) -> str:
        """``"embed"``, ``"classify"`` or ``"sparse"`` (a SPLADE sparse encoder)."""
        return str(self._model.task)

    @property
    def replicas(self) -> int:
        return int(self._model.replicas)

    @property
    def max_len(self) -> int:
        return int(self._model.max_len)

    @property
    def labels(self) -> list[str]:
        """The output columns: the classifier's labels (id2label), or e0 … e{D-1}; with
        ``outputs``, each output's, named ``<output>.<label>`` / ``<output>.e<i>``."""
        return list(self._model.columns)

    @property
    def outputs(self) -> list[str] | None:
        """The outputs of one pass the model was loaded with (``outputs=``), else None."""
        return list(self._outputs) if self._outputs else None

    def _by_output(self, values: npt.NDArray[np.float32], single: bool) -> Any:
        """With ``outputs``: {name: float32 [N, width]} (one row's [width] for one str)."""
        split = {name: values[:, columns] for name, columns in self._outputs.items()}  # views
        return {name: part[0] for name, part in split.items()} if single else split

    def __repr__(self) -> str:
        return (
            f"mcinfer.Model({self.model_dir!r}, task={self.task!r}, precision={self.precision!r},"
            f" replicas={self.replicas})"
        )

    def _compute(
        self,
        texts: Any,
        pairs: Any,
        *,
        prompt: str | None,
        prompt_name: str | None,
        batch_size: int | None,
        batch_tokens: int,
        show_progress_bar: bool,
        output: Output,
    ) -> npt.NDArray[np.float32]:
        if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
            raise ValueError(f"batch_size must be 1 or more, not {batch_size!r}")
        if output not in ("numpy", "arrow"):
            raise ValueError(f"output must be 'numpy' or 'arrow', not {output!r}")
        if isinstance(batch_tokens, bool) or batch_tokens < 1:
            raise ValueError(f"batch_tokens must be 1 or more, not {batch_tokens!r}")
        column = _text_column(texts, "texts")
        pair_column = None if pairs is None else _text_column(pairs, "pairs")
        progress = _Progress(len(column), show_progress_bar)
        try:
            values: npt.NDArray[np.float32] = self._model.predict(
                column,
                pair_column,
                prompt,
                prompt_name,
                batch_tokens,
                batch_size or 0,
                progress.callback(),
            )
        finally:
            progress.close()
        return values

    def encode(
        self,
        sentences: Any,
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        normalize_embeddings: bool = False,
        prompt_name: str | None = None,
        prompt: str | None = None,
        *,
        output: Output = "numpy",
        batch_tokens: int = 4096,
    ) -> Any:
        """Sentence embeddings, float32 [N, D], as ``SentenceTransformer.encode`` computes them.

        A sparse encoder (SPLADE, ``task == "sparse"``) gives ``SparseEncoder.encode``'s token
        weights: a ``scipy.sparse.csr_matrix`` float32 [N, vocabulary] when scipy can be
        imported, else a list of ``(indices, values)`` per row (int32 and float32 numpy arrays,
        indices ascending); ``output="arrow"``: a pyarrow Table with ``indices``
        list<int32> and ``values`` list<float32> columns, as ``mcinfer run`` writes Parquet.

        ``sentences``: a list of str, a numpy/pandas string column, or any Arrow array or stream
        (pyarrow, polars, pandas, duckdb: read in place). The directory's modules decide the
        pooling and normalisation; ``normalize_embeddings=True`` normalises on top, as in
        sentence-transformers. ``prompt_name``/``prompt`` as in ``encode``; neither: the
        directory's default prompt. Batches hold up to ``batch_tokens`` padded tokens (rows ×
        the longest row, as ``--batch-tokens`` counts them; rows longest first);
        ``batch_size`` caps their rows. ``output="arrow"``: a ``fixed_size_list<float32>[D]``
        pyarrow array. Ctrl-C stops after the batches in flight (KeyboardInterrupt).

        One ``str`` gives one row, as in sentence-transformers: float32 [D] (a sparse encoder's:
        its [1, vocabulary] csr_matrix row, or its ``(indices, values)``); with
        ``output="arrow"``, the array of that one row.
        """
        if self.task not in ("embed", "sparse"):
            raise ValueError(
                f"{self.model_dir}: a classifier; use predict(), or load it with task='embed'"
            )
        single = isinstance(sentences, str)
        if single:
            sentences = [sentences]
        values = self._compute(
            sentences,
            None,
            prompt=prompt,
            prompt_name=prompt_name,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            show_progress_bar=show_progress_bar,
            output=output,
        )
        if self._outputs:
            if normalize_embeddings:
                raise ValueError(
                    "normalize_embeddings with outputs: ask for the 'normalized' output"
                )
            if output == "arrow":
                return _columns_to_arrow(values, self.labels)
            return self._by_output(values, single)
        if self.task == "sparse":
            if normalize_embeddings:
                raise ValueError("normalize_embeddings does not apply to a sparse encoder")
            rows = _sparse_rows(values, output)
            return rows[0] if single and isinstance(rows, list) else rows
        if normalize_embeddings:
            # torch.nn.functional.normalize's eps, as sentence-transformers uses it.
            norms = np.maximum(np.linalg.norm(values, axis=1, keepdims=True), 1e-12)
            np.divide(values, norms, out=values)
        if output == "arrow":
            return _embeddings_to_arrow(values)
        return values[0] if single else values

    def predict(
        self,
        sentences: Any,
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        *,
        output: Output = "numpy",
        batch_tokens: int = 4096,
    ) -> Any:
        """Classifier scores, float32 [N, labels] in the order of ``labels``, with the
        directory's activation as ``mcinfer run`` applies it: for a sentence-transformers
        cross-encoder ``CrossEncoder.predict``'s (Sigmoid for one label, the logits for more,
        unless its files name another); for a plain transformers classifier its problem_type's
        (softmax, sigmoid for multi-label, none for regression).

        ``sentences``: texts (as for ``encode``), or pairs: a list of (text, text) tuples or a
        tuple of two columns ``(texts, pairs)``. ``output="arrow"``: a pyarrow Table with one
        float32 column per label. A model loaded with ``outputs`` gives a dict of them,
        {output: float32 [N, width]}, from the one pass (as ``mcinfer run --outputs``).
        """
        if isinstance(sentences, str):
            raise TypeError("sentences: one str; give a list of str")
        texts, pairs = _split_pairs(sentences)
        values = self._compute(
            texts,
            pairs,
            prompt=None,
            prompt_name=None,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            show_progress_bar=show_progress_bar,
            output=output,
        )
        if output == "arrow":
            return _columns_to_arrow(values, self.labels)
        return self._by_output(values, False) if self._outputs else values

    def rank(
        self,
        query: str,
        passages: Sequence[str],
        top_k: int | None = None,
        return_documents: bool = False,
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        *,
        batch_tokens: int = 4096,
    ) -> list[dict[str, Any]]:
        """The passages ranked by the score of (``query``, passage), as
        ``CrossEncoder.rank`` returns them: a list of ``{"corpus_id": index in passages,
        "score": float}`` (with ``"text"``: the passage, when ``return_documents``), highest
        score first (equal scores in passage order), the first ``top_k`` when given. Needs a
        model with one label (a cross-encoder's relevance score).
        """
        if self._outputs:
            raise ValueError("rank(): a model loaded with outputs; load one without them")
        if not isinstance(query, str):
            raise TypeError("query: expected one str")
        if isinstance(passages, str):
            raise TypeError("passages: one str; give a list of str")
        if len(self.labels) != 1:
            raise ValueError(
                f"{self.model_dir}: rank needs one score per pair, but the model has "
                f"{len(self.labels)} labels ({', '.join(self.labels)})"
            )
        passages = list(passages)
        scores = self.predict(
            ([query] * len(passages), passages),
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
            batch_tokens=batch_tokens,
        )[:, 0]
        results: list[dict[str, Any]] = []
        for i, score in enumerate(scores.tolist()):
            results.append({"corpus_id": i, "score": score})
            if return_documents:
                results[-1]["text"] = passages[i]
        # sorted() is stable: equal scores keep the passages' order, as in sentence-transformers.
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:top_k]


def _split_pairs(sentences: Any) -> tuple[Any, Any]:
    """(texts, pairs or None) from texts, a list of 2-tuples, or a tuple of two columns."""
    if isinstance(sentences, tuple) and len(sentences) == 2 and not isinstance(sentences[0], str):
        return sentences[0], sentences[1]
    if isinstance(sentences, list) and sentences and isinstance(sentences[0], (tuple, list)):
        for i, row in enumerate(sentences):
            if not isinstance(row, (tuple, list)) or len(row) != 2:
                raise ValueError(f"sentences[{i}]: expected a (text, text) pair")
        return [row[0] for row in sentences], [row[1] for row in sentences]
    return sentences, None


def _sparse_rows(values: npt.NDArray[np.float32], output: Output) -> Any:
    """A sparse encoder's rows (dense [N, vocabulary] as computed) as their nonzeros."""
    rows, cols = np.nonzero(values)  # row-major: each row's indices ascending
    data = values[rows, cols]
    # int32 offsets as scipy and Arrow's list<> use them, while the nonzeros fit.
    offset_type = np.int32 if data.size < 2**31 else np.int64
    indptr = np.zeros(values.shape[0] + 1, dtype=offset_type)
    np.cumsum(np.bincount(rows, minlength=values.shape[0]), out=indptr[1:])
    indices = cols.astype(np.int32)
    if output == "arrow":
        import pyarrow as pa

        lists = pa.ListArray if offset_type == np.int32 else pa.LargeListArray
        offsets = pa.array(indptr)
        return pa.table(
            {
                "indices": lists.from_arrays(offsets, pa.array(indices, type=pa.int32())),
                "values": lists.from_arrays(offsets, pa.array(data, type=pa.float32())),
            }
        )
    try:
        import scipy.sparse
    except ImportError:
        return [
            (indices[indptr[i] : indptr[i + 1]], data[indptr[i] : indptr[i + 1]])
            for i in range(values.shape[0])
        ]
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=values.shape)


def _embeddings_to_arrow(values: npt.NDArray[np.float32]) -> Any:
    import pyarrow as pa

    flat = pa.array(values.reshape(-1), type=pa.float32())  # a view of the numpy buffer
    return pa.FixedSizeListArray.from_arrays(flat, values.shape[1])


def _columns_to_arrow(values: npt.NDArray[np.float32], labels: list[str]) -> Any:
    import pyarrow as pa

    return pa.table({label: values[:, i] for i, label in enumerate(labels)})
