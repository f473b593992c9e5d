#!/usr/bin/env python3
"""The systems bench/python_predict.py measures, one per process: each call prepares a peer's
model (optimum's exports, cached in bench/work/optimum/) or runs one system once over the test
set and prints its JSON result (and saves the probabilities as .npy). Run by
bench/python_predict.py in each system's own interpreter; only the standard library is imported
at the top, so every venv can load this file."""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "bench/work/optimum"
WARMUP_ROWS = 16
MAX_LENGTH = 512


# ---------------------------------------------------------------- shared helpers (every venv)


def read_texts(path: Path, rows: int | None) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        texts = [row["text"] for row in csv.DictReader(f)]
    return texts[:rows] if rows else texts


def cores() -> int:
    return len(os.sched_getaffinity(0))


def fingerprint(model_dir: Path) -> dict[str, list[int]]:
    out = {}
    for f in sorted(model_dir.iterdir()):
        if f.is_file():
            st = f.stat()
            out[f.name] = [st.st_size, int(st.st_mtime)]
    return out


def cached(out: Path, model_dir: Path, extra: dict[str, Any]) -> bool:
    """Whether out holds a conversion of this checkpoint (same files) with these settings."""
    stamp = out / "source.json"
    want = {"model_dir": str(model_dir), "files": fingerprint(model_dir), **extra}
    return stamp.is_file() and json.loads(stamp.read_text()) == want


def write_stamp(out: Path, model_dir: Path, extra: dict[str, Any]) -> None:
    want = {"model_dir": str(model_dir), "files": fingerprint(model_dir), **extra}
    (out / "source.json").write_text(json.dumps(want, indent=1) + "\n")


def label_order(model_dir: Path) -> list[str]:
    cfg = json.loads((model_dir / "config.json").read_text())
    id2label = cfg["id2label"]
    return [id2label[str(i)] for i in range(len(id2label))]


def softmax(logits: Any) -> Any:
    import numpy as np

    z = logits.astype(np.float32) - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: Any = e / e.sum(axis=1, keepdims=True)
    return out


def pipeline_to_numpy(results: list[Any], labels: list[str]) -> Any:
    """transformers' text-classification output with top_k=None (per row, a list of
    {label, score} sorted by score) as a float32 [N, labels] array in the config's label order."""
    import numpy as np

    column = {name: j for j, name in enumerate(labels)}
    out = np.empty((len(results), len(labels)), dtype=np.float32)
    for i, row in enumerate(results):
        for item in row:
            out[i, column[item["label"]]] = item["score"]
    return out


@dataclass
class Stages:
    tokenize_s: float = 0.0
    pad_s: float = 0.0
    infer_s: float = 0.0


def tokenize_sorted(tokenizer: Any, texts: list[str]) -> tuple[list[Any], Any, Any]:
    """The fast tokenizer over every row at once (no padding): (ids per row, lengths, row order
    longest first)."""
    import numpy as np

    enc = tokenizer(
        texts,
        truncation=True,
        max_length=MAX_LENGTH,
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    ids = enc["input_ids"]
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    return ids, lengths, np.argsort(-lengths, kind="stable")


def pad_rows(ids: list[Any], lengths: Any, rows: Any, pad: int) -> tuple[Any, Any, Any]:
    """(input_ids, attention_mask, token_type_ids) of `rows`, padded to the longest of them (the
    first: rows come longest first)."""
    import numpy as np

    width = int(lengths[rows[0]])
    input_ids = np.full((len(rows), width), pad, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, i in enumerate(rows):
        n = lengths[i]
        input_ids[r, :n] = ids[i]
        mask[r, :n] = 1
    return input_ids, mask, np.zeros_like(input_ids)


def sorted_loop(tokenizer: Any, texts: list[str], batch: int, run: Any, stages: Stages) -> Any:
    """The hand loop: tokenize everything once (no padding), sort by length, pad each batch of
    `batch` rows to its longest row, run(ids, mask, types) -> logits; probabilities in row order."""
    import numpy as np

    t = time.perf_counter()
    ids, lengths, order = tokenize_sorted(tokenizer, texts)
    stages.tokenize_s += time.perf_counter() - t
    pad = tokenizer.pad_token_id or 0
    out = None
    for start in range(0, len(ids), batch):
        t = time.perf_counter()
        rows = order[start : start + batch]
        arrays = pad_rows(ids, lengths, rows, pad)
        t2 = time.perf_counter()
        stages.pad_s += t2 - t
        probs = softmax(run(*arrays))
        if out is None:
            out = np.empty((len(ids), probs.shape[1]), dtype=np.float32)
        out[rows] = probs
        stages.infer_s += time.perf_counter() - t2
    return out


def timed_loop(
    model: Any, tokenizer: Any, texts: list[str], batch: int, stages: Stages
) -> tuple[Any, float]:
    """sorted_loop over an optimum model (called with numpy inputs, `.logits` out): warmed up on
    WARMUP_ROWS rows, then timed over all; (probabilities, seconds)."""

    def run(ids: Any, mask: Any, types: Any) -> Any:
        return model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits

    sorted_loop(tokenizer, texts[:WARMUP_ROWS], batch, run, Stages())
    t = time.perf_counter()
    probs = sorted_loop(tokenizer, texts, batch, run, stages)
    return probs, time.perf_counter() - t


def sorted_batches(tokenizer: Any, texts: list[str], batch: int) -> tuple[list[Any], Any, int]:
    """(batches of row indices, the padded (ids, mask, types) per batch, rows) for the async
    loop: the same sorting and padding as sorted_loop, all batches built before the queue runs."""
    ids, lengths, order = tokenize_sorted(tokenizer, texts)
    pad = tokenizer.pad_token_id or 0
    batches = [order[start : start + batch] for start in range(0, len(ids), batch)]
    return batches, [pad_rows(ids, lengths, rows, pad) for rows in batches], len(ids)


def versions(names: list[str]) -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


# ---------------------------------------------------------------- children: preparation


def prepare_ort(model_dir: Path, level: str) -> dict[str, Any]:
    """optimum's export (bench/work/optimum/ort), then ORTOptimizer at `level`
    (bench/work/optimum/ort-LEVEL); both cached. Reports the fused-operator counts of the graph."""
    import onnx
    from optimum.onnxruntime import (
        AutoOptimizationConfig,
        ORTModelForSequenceClassification,
        ORTOptimizer,
    )

    exported, optimized = WORK / "ort", WORK / f"ort-{level}"
    notes = []
    if not cached(exported, model_dir, {}):
        t = time.perf_counter()
        shutil.rmtree(exported, ignore_errors=True)
        model = ORTModelForSequenceClassification.from_pretrained(str(model_dir), export=True)
        model.save_pretrained(str(exported))
        write_stamp(exported, model_dir, {})
        notes.append(f"exported in {time.perf_counter() - t:.1f} s")
    if not cached(optimized, model_dir, {"level": level}):
        t = time.perf_counter()
        shutil.rmtree(optimized, ignore_errors=True)
        model = ORTModelForSequenceClassification.from_pretrained(str(exported))
        config = getattr(AutoOptimizationConfig, level)()
        ORTOptimizer.from_pretrained(model).optimize(
            save_dir=str(optimized), optimization_config=config
        )
        write_stamp(optimized, model_dir, {"level": level})
        notes.append(f"optimized ({level}) in {time.perf_counter() - t:.1f} s")
    graph = onnx.load(str(next(optimized.glob("*.onnx"))), load_external_data=False).graph
    ops: dict[str, int] = {}
    for node in graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    fused = (
        *("Attention", "MultiHeadAttention", "SkipLayerNormalization", "EmbedLayerNormalization"),
        *("BiasGelu", "FastGelu", "Gelu", "LayerNormalization", "MatMul", "Erf"),
    )
    return {"dir": str(optimized), "ops": {k: ops[k] for k in fused if k in ops}, "notes": notes}


def prepare_ov(model_dir: Path) -> dict[str, Any]:
    """optimum-intel's export (bench/work/optimum/ov), cached; the weights' element types."""
    from optimum.intel import OVModelForSequenceClassification

    out = WORK / "ov"
    notes = []
    if not cached(out, model_dir, {}):
        t = time.perf_counter()
        shutil.rmtree(out, ignore_errors=True)
        model = OVModelForSequenceClassification.from_pretrained(
            str(model_dir), export=True, compile=False
        )
        model.save_pretrained(str(out))
        write_stamp(out, model_dir, {})
        notes.append(f"exported in {time.perf_counter() - t:.1f} s")
    import openvino as ov

    model = ov.Core().read_model(str(out / "openvino_model.xml"))
    weights: dict[str, int] = {}
    for op in model.get_ops():
        if op.get_type_name() == "Constant" and op.get_output_size() == 1:
            shape = op.get_output_partial_shape(0)
            if shape.rank.get_length() == 2:
                kind = op.get_output_element_type(0).get_type_name()
                weights[kind] = weights.get(kind, 0) + 1
    return {"dir": str(out), "matrix_constants_by_type": weights, "notes": notes}


# ---------------------------------------------------------------- children: one measurement


@dataclass
class Spec:
    """A system: family (mcinfer, ort, ov), precision, way of running, OpenVINO hint."""

    name: str
    family: str
    precision: str  # mcinfer: fp32/bf16; ov: default/f32; ort: fp32
    mode: str  # predict, pipeline, loop, async
    hint: str = ""


def parse_system(name: str) -> Spec:
    parts = name.split("-")
    if parts[0] == "mcinfer" and len(parts) == 2 and parts[1] in ("fp32", "bf16"):
        return Spec(name, "mcinfer", parts[1], "predict")
    if parts[0] == "ort" and len(parts) == 2 and parts[1] in ("pipeline", "loop"):
        return Spec(name, "ort", "fp32", parts[1])
    hints = {"tput": "THROUGHPUT", "lat": "LATENCY"}
    if (
        parts[0] == "ov"
        and len(parts) == 4
        and parts[1] in ("default", "f32")
        and parts[2] in hints
        and parts[3] in ("pipeline", "loop", "async")
    ):
        return Spec(name, "ov", parts[1], parts[3], hints[parts[2]])
    raise SystemExit(
        f"unknown system {name!r}: mcinfer-{{fp32,bf16}}, ort-{{pipeline,loop}}, "
        "ov-{default,f32}-{tput,lat}-{pipeline,loop,async}"
    )


def run_mcinfer(spec: Spec, model_dir: Path, texts: list[str]) -> tuple[Any, dict[str, Any]]:
    import mcinfer

    m = mcinfer.Model(str(model_dir), precision=spec.precision)
    m.predict(texts[:WARMUP_ROWS])
    t = time.perf_counter()
    probs = m.predict(texts)
    seconds = time.perf_counter() - t
    info = {
        "precision": m.precision,
        "setting": f"Model(dir, precision={spec.precision!r}), {m.replicas} replicas, "
        f"max_len {m.max_len}",
        "versions": versions(["mcinfer", "numpy"]),
    }
    return probs, {"seconds": seconds, **info}


def run_pipeline(
    model: Any, tokenizer: Any, texts: list[str], labels: list[str], batch: int
) -> Any:
    from transformers import pipeline

    classify = pipeline(
        "text-classification",
        model=model,
        tokenizer=tokenizer,
        top_k=None,
        batch_size=batch,
        truncation=True,
        max_length=MAX_LENGTH,
    )
    classify(texts[:WARMUP_ROWS])
    t = time.perf_counter()
    probs = pipeline_to_numpy(classify(texts), labels)
    return probs, time.perf_counter() - t


def run_ort(spec: Spec, model_dir: Path, texts: list[str], batch: int, level: str) -> Any:
    import onnxruntime as ort
    from optimum.onnxruntime import ORTModelForSequenceClassification
    from transformers import AutoTokenizer

    so = ort.SessionOptions()
    so.intra_op_num_threads = cores()
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    model = ORTModelForSequenceClassification.from_pretrained(
        str(WORK / f"ort-{level}"), session_options=so, provider="CPUExecutionProvider"
    )
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    labels = label_order(model_dir)
    stages = Stages()
    if spec.mode == "pipeline":
        probs, seconds = run_pipeline(model, tokenizer, texts, labels, batch)
    else:
        probs, seconds = timed_loop(model, tokenizer, texts, batch, stages)
    setting = (
        f"ORTOptimizer {level}, 1 session, CPUExecutionProvider, intra_op_num_threads={cores()}, "
        f"inter_op_num_threads=1, ORT_ENABLE_ALL, batch_size {batch}"
    )
    info = {
        "precision": "fp32",
        "setting": setting,
        "versions": versions(
            ["optimum", "optimum-onnx", "onnxruntime", "transformers", "tokenizers", "torch"]
        ),
    }
    if spec.mode == "loop":
        info["stages"] = stages.__dict__
    return probs, {"seconds": seconds, **info}


def run_ov(spec: Spec, model_dir: Path, texts: list[str], batch: int) -> Any:
    import numpy as np
    import openvino as ov
    from optimum.intel import OVModelForSequenceClassification
    from transformers import AutoTokenizer

    ov_config = {"PERFORMANCE_HINT": spec.hint}
    if spec.precision == "f32":
        ov_config["INFERENCE_PRECISION_HINT"] = "f32"
    model = OVModelForSequenceClassification.from_pretrained(
        str(WORK / "ov"), ov_config=ov_config, compile=True
    )
    compiled = model.request  # the openvino.CompiledModel optimum-intel calls

    def prop(key: str) -> str:
        try:
            return str(compiled.get_property(key))
        except RuntimeError:
            return "?"

    read_back = {
        k: prop(k)
        for k in (
            "INFERENCE_PRECISION_HINT",
            "PERFORMANCE_HINT",
            "EXECUTION_MODE_HINT",
            "NUM_STREAMS",
            "INFERENCE_NUM_THREADS",
            "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
        )
    }
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    labels = label_order(model_dir)
    stages = Stages()
    if spec.mode == "pipeline":
        probs, seconds = run_pipeline(model, tokenizer, texts, labels, batch)
    elif spec.mode == "loop":
        probs, seconds = timed_loop(model, tokenizer, texts, batch, stages)
    else:
        jobs = int(read_back["OPTIMAL_NUMBER_OF_INFER_REQUESTS"])
        queue = ov.AsyncInferQueue(compiled, jobs)
        names = [p.get_any_name() for p in compiled.inputs]

        def go(sample: list[str]) -> Any:
            batches, arrays, n = sorted_batches(tokenizer, sample, batch)
            logits: list[Any] = [None] * len(batches)

            def done(request: Any, k: int) -> None:
                logits[k] = request.get_output_tensor(0).data.copy()

            queue.set_callback(done)
            for k, (ids, mask, types) in enumerate(arrays):
                queue.start_async(dict(zip(names, select(names, ids, mask, types))), k)
            queue.wait_all()
            out = np.empty((n, len(labels)), dtype=np.float32)
            for rows, value in zip(batches, logits):
                out[rows] = softmax(value)
            return out

        go(texts[:WARMUP_ROWS])
        t = time.perf_counter()
        probs = go(texts)
        seconds = time.perf_counter() - t
        read_back["async_jobs"] = str(jobs)
    forced = "INFERENCE_PRECISION_HINT=f32" if spec.precision == "f32" else "no precision forced"
    setting = (
        f"ov_config PERFORMANCE_HINT={spec.hint}, {forced}; read back: "
        + ", ".join(f"{k}={v}" for k, v in read_back.items() if k != "INFERENCE_PRECISION_HINT")
        + f"; batch_size {batch}"
    )
    precision = read_back["INFERENCE_PRECISION_HINT"]
    info = {
        "precision": precision_name(precision),
        "setting": setting,
        "versions": versions(
            ["optimum", "optimum-intel", "openvino", "nncf", "transformers", "tokenizers", "torch"]
        ),
    }
    if spec.mode == "loop":
        info["stages"] = stages.__dict__
    return probs, {"seconds": seconds, **info}


def precision_name(read_back: str) -> str:
    """OpenVINO's INFERENCE_PRECISION_HINT as read back (e.g. "<Type: 'bfloat16'>" or "bf16") in
    this bench's words: bf16, fp32 or fp16."""
    text = read_back.lower()
    for words, name in ((("bfloat16", "bf16"), "bf16"), (("float32", "f32"), "fp32")):
        if any(w in text for w in words):
            return name
    return "fp16" if "f16" in text or "float16" in text else read_back


def select(names: list[str], ids: Any, mask: Any, types: Any) -> list[Any]:
    """The compiled model's inputs by name (an export without token_type_ids has two)."""
    by_name = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    return [by_name[n] for n in names]


def child(a: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    model_dir = Path(a.model).resolve()
    if a.child == "prepare-ort":
        print(json.dumps(prepare_ort(model_dir, a.ort_level)))
        return 0
    if a.child == "prepare-ov":
        print(json.dumps(prepare_ov(model_dir)))
        return 0
    if a.child == "mcinfer-auto":
        import mcinfer

        print(json.dumps({"precision": mcinfer.Model(str(model_dir)).precision}))
        return 0
    import numpy as np

    spec = parse_system(a.child)
    texts = read_texts(Path(a.testset), a.rows)
    if spec.family == "mcinfer":
        probs, result = run_mcinfer(spec, model_dir, texts)
    elif spec.family == "ort":
        probs, result = run_ort(spec, model_dir, texts, a.batch_size, a.ort_level)
    else:
        probs, result = run_ov(spec, model_dir, texts, a.batch_size)
    probs = np.asarray(probs, dtype=np.float32)
    if probs.shape != (len(texts), len(label_order(model_dir))):
        raise SystemExit(f"{spec.name}: probabilities of shape {probs.shape}")
    np.save(a.out, probs)
    result["rows"] = len(texts)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", help="prepare-ort, prepare-ov, mcinfer-auto or a system name")
    ap.add_argument("--model", required=True)
    ap.add_argument("--testset", required=True)
    ap.add_argument("--ort-level", choices=["O1", "O2", "O3"], default="O3")
    ap.add_argument("--rows", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--out", help="where the probabilities go (.npy)")
    a = ap.parse_args()
    a.child = a.what
    return child(a)


if __name__ == "__main__":
    raise SystemExit(main())
