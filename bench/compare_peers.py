#!/usr/bin/env python3
"""The peers of bench/compare.py: one system, one workload, one process per call.

    compare_peers.py prepare --model-dir D --art A [--systems ...] [--batch B --seq S] [--warm-ov-cache K]
                             [--input CSV --max-len L]
        Converts the checkpoint once into A (ONNX via optimum, or torch.onnx.export for the
        families of TORCH_EXPORT, plus ONNX Runtime's transformer fusions, whose counts it reads
        back into onnx/fusions.json; OpenVINO IR in fp32, for TORCH_EXPORT families also one
        converted from the PyTorch module for workload (a), see OV_FROM_TORCH; CTranslate2, the
        classifier head as numpy arrays; the int8 peers' models, see
        bench/compare_int8.py: the (b) test set --input calibrates openvino-int8), writes the fixed
        random batch ids_BxS.npy and PyTorch's fp32 outputs for it, ref_BxS.npy. --warm-ov-cache K compiles
        each OpenVINO system once for workload (b) with K threads, so that the timed runs load
        the compiled model from OpenVINO's model cache (A/ov_cache/SYSTEM) instead of compiling it.
    compare_peers.py a SYSTEM --k K --model-dir D --art A --batch B --seq S --warmup W --iters N
        Workload (a): K threads / processes / streams, K*N timed batches of B x S random ids;
        prints one JSON line with seq_per_s; --first-out saves the outputs of the first batch.
    compare_peers.py b SYSTEM --k K --model-dir D --art A --input CSV --output OUT --max-len L
        Workload (b): CSV in, predictions out, tokenisation included; prints one JSON line with
        `written_at` (CLOCK_MONOTONIC when the output file was in place).
    compare_peers.py kernels SYSTEM --k K --model-dir D --art A --batch B --seq S
        One untimed forward pass of the (a) batch with the system's own read-back of the kernels
        it ran (ORT's profiler, OpenVINO's runtime model and PERF_COUNT, PyTorch's CPU
        capability, CTranslate2's compute type): one JSON line; bench/compare_kernels.py adds the
        verbose logs (MKL_VERBOSE, ONEDNN_VERBOSE, CT2_VERBOSE) it runs this with.

SYSTEM is torch, torch-bf16, torch-compile, torch-mp, ort, ort-noopt, ort-mp, openvino, openvino-bf16,
ct2 or one of bench/compare_int8.py's ort-int8, openvino-int8, ct2-int8 (the -bf16 systems run in reduced
precision: PyTorch under torch.autocast("cpu", dtype=torch.bfloat16), OpenVINO in its default
PERFORMANCE execution mode with no precision forced, which it resolves to bf16 on CPUs with
native bf16; the precision each ran in is read back and printed). Outputs are what `mcinfer`
computes for the same checkpoint: classifier logits (probabilities after softmax in workload b)
or, for a model without a head (all-MiniLM-L6-v2), the mean of the last hidden state over the tokens.

The families of TORCH_EXPORT (ModernBERT) need transformers >= 4.48, so bench/compare runs this
script for them with the current stack's interpreter (.venv, bench/requirements-tf5.txt) and for
the others with the legacy one (.venv-legacy, bench/requirements.txt).

Heavy libraries are imported inside the functions that use them, so that a multi-process parent
stays small and a system pays only for what it uses.
"""

import time

T0 = time.monotonic()  # before the heavy imports: a peer pays for them in workload (b)

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import compare_int8 as int8  # beside this script; light: nothing heavy at import

SYSTEMS = ["torch", "torch-bf16", "torch-compile", "torch-mp", "ort", "ort-noopt", "ort-mp", "openvino", "openvino-bf16",
           "ct2"] + int8.SYSTEMS
MULTI_PROCESS = {"torch-mp": "torch", "ort-mp": "ort"}
OPENVINO = {"openvino", "openvino-bf16", "openvino-int8"}
ORT = {"ort", "ort-noopt", "ort-mp", "ort-int8"}
ONNX_OPSET = 17
# Families that optimum 1.23 (the legacy stack's exporter, transformers < 4.47) does not know: their
# ONNX file comes from torch.onnx.export's dynamo exporter (torch.export, opset TORCH_ONNX_OPSET; the
# TorchScript exporter also exports ModernBERT, but it is deprecated), run by the current stack.
TORCH_EXPORT = {"modernbert"}
TORCH_ONNX_OPSET = 18
# Their attention in PyTorch: SDPA (torch.nn.functional.scaled_dot_product_attention), asked for by
# name and read back; ModernBERT's sliding-window layers run it with a banded [L, L] mask.
TORCH_ATTENTION = {"modernbert": "sdpa"}
# ORT's fused BERT graph must have these (the optimizer's own statistics and the saved graph
# agree): without them ORT runs the unfused graph, 15-30% slower, and the comparison is void.
ORT_REQUIRED_FUSIONS = (("Attention", "MultiHeadAttention"), ("SkipLayerNormalization",))
# The model types ONNX Runtime's transformer optimizer fuses attention for (its BERT fusions). Other
# families (MPNet: a relative position bias in every layer's scores) run the graph it leaves, with
# whatever it fused, at ORT_ENABLE_ALL: its best there, and said so in the results.
ORT_FUSABLE = {"bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra"}


# ---------------------------------------------------------------- model facts

def model_info(model_dir: Path) -> dict:
    cfg = json.loads((model_dir / "config.json").read_text())
    arch = (cfg.get("architectures") or [""])[0]
    kind = "classify" if arch.endswith("ForSequenceClassification") else "embed"
    if kind == "classify":
        id2label = cfg.get("id2label") or {str(i): f"LABEL_{i}" for i in range(cfg.get("num_labels", 2))}
        columns = [id2label[str(i)] if str(i) in id2label else id2label[i] for i in range(len(id2label))]
    else:
        columns = [f"e{i}" for i in range(cfg["hidden_size"])]
    return {"arch": arch, "kind": kind, "model_type": cfg["model_type"], "columns": columns,
            "hidden": cfg["hidden_size"], "heads": cfg["num_attention_heads"], "vocab": cfg["vocab_size"],
            "pad": cfg.get("pad_token_id", 0), "problem_type": cfg.get("problem_type"),
            "max_positions": cfg.get("max_position_embeddings", 512)}


def fingerprint(model_dir: Path) -> dict:
    out = {}
    for f in sorted(model_dir.iterdir()):
        if f.is_file() and (f.suffix in (".json", ".safetensors", ".bin") or f.name == "vocab.txt"):
            st = f.stat()
            out[f.name] = [st.st_size, int(st.st_mtime)]
    return out


def activation(info: dict, logits):
    """What `mcinfer run` writes for a classifier with --activation auto."""
    import numpy as np

    if info["kind"] != "classify":
        return logits
    if logits.shape[1] == 1 and info["problem_type"] != "multi_label_classification":
        return logits  # one output: regression
    if info["problem_type"] == "multi_label_classification":
        return 1.0 / (1.0 + np.exp(-logits))
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def mean_pool(hidden, mask):
    """Mean of the last hidden state over the real tokens (numpy, [B, L, H] -> [B, H])."""
    import numpy as np

    m = mask.astype(np.float32)[:, :, None]
    return (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)


# ---------------------------------------------------------------- conversion (once, cached)

class _FakeTokenizer:
    """CTranslate2's converter wants a vocabulary; XLM-R here has no tokenizer (ids only)."""

    def __init__(self, vocab: int, unk_id: int):
        self._vocab = {("<unk>" if i == unk_id else f"<t{i}>"): i for i in range(vocab)}
        self.unk_token = "<unk>"

    def get_vocab(self):
        return self._vocab


def first_output(model, kind: str):
    """A transformers model as a module of (input_ids, attention_mask) that returns one tensor, what
    the exporters trace: the classifier's logits, or the last hidden state (what optimum's export
    of the same task returns)."""
    import torch

    class FirstOutput(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask)
            return out.logits if kind == "classify" else out.last_hidden_state

    return FirstOutput().eval()


def load_torch(model_dir: Path, info: dict):
    """The checkpoint as PyTorch fp32, eval mode, with the attention of TORCH_ATTENTION where set."""
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification

    cls = AutoModelForSequenceClassification if info["kind"] == "classify" else AutoModel
    attention = TORCH_ATTENTION.get(info["model_type"])
    extra = {"attn_implementation": attention} if attention else {}
    return cls.from_pretrained(str(model_dir), torch_dtype=torch.float32, **extra).eval()


def example_ids(info: dict, batch: int = 2, seq: int = 160):
    """(input_ids, attention_mask) to trace with: longer than ModernBERT's window (so that the traced
    graph has both kinds of attention at work), shaped unlike any workload."""
    import torch

    gen = torch.Generator().manual_seed(7)
    ids = torch.randint(5, info["vocab"], (batch, seq), generator=gen)
    return ids, torch.ones_like(ids)


def export_torch_onnx(model_dir: Path, path: Path, info: dict) -> None:
    """torch.onnx.export (dynamo) of the model with dynamic batch and length, one file (no
    external data: base models stay under 2 GB)."""
    import torch

    wrapped = first_output(load_torch(model_dir, info), info["kind"])
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    dyn = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}}
    with torch.inference_mode():
        torch.onnx.export(wrapped, example_ids(info), str(path), dynamo=True, opset_version=TORCH_ONNX_OPSET,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["logits" if info["kind"] == "classify" else "last_hidden_state"],
                          dynamic_shapes=dyn, external_data=False, verbose=False)


def with_layernorm_bias(path: Path):
    """The ONNX model at path with an explicit zero bias on every LayerNormalization that has none
    (the same function). The dynamo exporter leaves a bias-free LayerNorm (ModernBERT's norm_bias
    false) without its optional third input, on which ONNX Runtime 1.32's SkipLayerNormalization
    fusion fails (IndexError in fusion_skiplayernorm); given the zeros, it fuses them as for BERT."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    inits = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "LayerNormalization" and len(node.input) == 2 and node.input[1] in inits:
            name = node.input[1] + ".zero_bias"
            if name not in inits:
                scale = numpy_helper.to_array(inits[node.input[1]])
                inits[name] = numpy_helper.from_array(np.zeros_like(scale), name)
                model.graph.initializer.append(inits[name])
            node.input.append(name)
    return model


def convert_onnx(model_dir: Path, art: Path, info: dict, log) -> None:
    out = art / "onnx"
    if (out / "model.onnx").is_file() and (out / "model_ort.onnx").is_file():
        return
    from onnxruntime.transformers.optimizer import optimize_model

    tmp = art / ".onnx.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    t = time.monotonic()
    if info["model_type"] in TORCH_EXPORT:
        tmp.mkdir(parents=True)
        export_torch_onnx(model_dir, tmp / "model.onnx", info)
        source = with_layernorm_bias(tmp / "model.onnx")
        exporter = f"torch.onnx.export (dynamo, opset {TORCH_ONNX_OPSET})"
    else:
        from optimum.exporters.onnx import main_export

        task = "text-classification" if info["kind"] == "classify" else "feature-extraction"
        main_export(str(model_dir), str(tmp), task=task, library_name="transformers", opset=ONNX_OPSET,
                    do_validation=False, device="cpu")
        source = str(tmp / "model.onnx")
        exporter = f"optimum (opset {ONNX_OPSET})"
    # ONNX Runtime's documented path for BERT-like models: its transformer optimizer fuses
    # embeddings+LayerNorm, attention, bias+GELU and skip+LayerNorm into contrib ops (optimum's
    # --optimize O2 is this same call; it is not used because it imports `datasets`). The
    # remaining graph optimisations run at session creation (ORT_ENABLE_ALL), for this CPU.
    opt = optimize_model(source, model_type="bert", num_heads=info["heads"],
                         hidden_size=info["hidden"], opt_level=0, use_gpu=False)
    opt.save_model_to_file(str(tmp / "model_ort.onnx"))
    write_fusions(tmp, opt.get_fused_operator_statistics(), info["model_type"], exporter)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"ONNX export + ORT fusions in {time.monotonic() - t:.1f} s -> {out}: {ort_fusions(art)[1]}")


def write_fusions(onnx_dir: Path, optimizer_stats: dict, model_type: str = "bert", exporter: str | None = None) -> None:
    """fusions.json: the optimizer's fused-operator statistics next to the op counts of the graph
    actually saved (model_ort.onnx, the file every ORT session loads), and the exporter."""
    import onnx

    graph = onnx.load(str(onnx_dir / "model_ort.onnx"), load_external_data=False).graph
    ops = {}
    for node in graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    (onnx_dir / "fusions.json").write_text(json.dumps({"optimizer": optimizer_stats, "graph_ops": ops,
                                                       "model_type": model_type, "exporter": exporter}) + "\n")


def ort_fusions(art: Path) -> tuple:
    """(ok, summary) from fusions.json: ok only when every required fusion is in both the
    optimizer's statistics and the saved graph."""
    path = art / "onnx" / "fusions.json"
    if not path.is_file():
        return False, f"{path} is missing (no fused graph)"
    data = json.loads(path.read_text())
    if "graph_ops" not in data:  # written by an older version of this script
        return False, f"{path} has no graph op counts"
    stats, ops = data["optimizer"], data["graph_ops"]
    required = ORT_REQUIRED_FUSIONS if data.get("model_type", "bert") in ORT_FUSABLE else ()
    missing = [" or ".join(names) for names in required
               if not any(stats.get(n, 0) > 0 and ops.get(n, 0) > 0 for n in names)]
    shown = sorted((n, c) for n, c in stats.items() if c)
    summary = ", ".join(f"{n} {c}" for n, c in shown) or "no fusions"
    if not required:
        summary += f" (no attention fusion exists for {data['model_type']}: the unfused attention runs)"
    if data.get("exporter"):
        summary += f"; exported by {data['exporter']}"
    return not missing, summary + (f"; MISSING: {', '.join(missing)}" if missing else "")


def convert_openvino(art: Path, log, model_dir: Path | None = None, info: dict | None = None) -> None:
    if info is not None and info["model_type"] in OV_FROM_TORCH:
        convert_openvino_torch(model_dir, art, info, log)
    out = art / "ov"
    if (out / "model.xml").is_file():
        return
    import openvino as ov

    tmp = art / ".ov.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t = time.monotonic()
    model = ov.convert_model(str(art / "onnx" / "model.onnx"))
    # save_model compresses weights to fp16 by default: keep fp32 for an fp32 comparison.
    ov.save_model(model, str(tmp / "model.xml"), compress_to_fp16=False)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"OpenVINO IR (fp32) in {time.monotonic() - t:.1f} s -> {out}")


# Families whose workload (a) runs OpenVINO on an IR converted from the PyTorch module itself
# (ov.convert_model(module, example_input), the way optimum-intel exports them), ov_torch/: its
# SDPA calls become OpenVINO ScaledDotProductAttention ops, which the CPU plugin runs fused; the IR
# converted from the ONNX file (ov/) has them decomposed (MatMul, Softmax, MatMul, unfused at
# 2026.4). That IR is not used for padded batches (workload b): a query row that sees no key (a
# padded position farther than the window from every real token) comes out NaN there (PyTorch's
# SDPA gives zeros), and the NaN reaches the real rows through the next layer's values; (b) runs
# the IR from the ONNX file, whose exported SDPA keeps PyTorch's guard (IsNaN, Where).
OV_FROM_TORCH = {"modernbert"}


def convert_openvino_torch(model_dir: Path, art: Path, info: dict, log) -> None:
    out = art / "ov_torch"
    if (out / "model.xml").is_file():
        return
    import openvino as ov
    import torch

    tmp = art / ".ov_torch.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t = time.monotonic()
    ids, mask = example_ids(info)
    with torch.inference_mode():
        model = ov.convert_model(first_output(load_torch(model_dir, info), info["kind"]),
                                 example_input={"input_ids": ids, "attention_mask": mask})
    for port, name in zip(model.inputs, ("input_ids", "attention_mask")):
        port.get_tensor().set_names({name})
    sdpa = sum(1 for op in model.get_ops() if op.get_type_name() == "ScaledDotProductAttention")
    ov.save_model(model, str(tmp / "model.xml"), compress_to_fp16=False)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"OpenVINO IR (fp32) from the PyTorch module in {time.monotonic() - t:.1f} s -> {out} "
        f"({sdpa} ScaledDotProductAttention ops)")


def convert_ct2(model_dir: Path, art: Path, info: dict, log) -> None:
    out = art / "ct2"
    if (out / "model.bin").is_file():
        return
    import torch
    from ctranslate2.converters import TransformersConverter

    has_tokenizer = (model_dir / "tokenizer.json").is_file() or (model_dir / "vocab.txt").is_file()

    class Converter(TransformersConverter):
        def load_model(self, model_class, path, **kwargs):
            # This converter release passes `dtype=`, which transformers 4.46 does not know.
            kwargs.pop("dtype", None)
            return model_class.from_pretrained(path, torch_dtype=torch.float32, **kwargs)

        def load_tokenizer(self, tokenizer_class, path, **kwargs):
            if has_tokenizer:
                return tokenizer_class.from_pretrained(path, **kwargs)
            return _FakeTokenizer(info["vocab"], unk_id=3)

    tmp = art / ".ct2.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    t = time.monotonic()
    Converter(str(model_dir)).convert(str(tmp), force=True)  # no quantization: float32 weights
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"CTranslate2 conversion in {time.monotonic() - t:.1f} s -> {out}")


def extract_head(model_dir: Path, art: Path, info: dict) -> None:
    """The classifier head that CTranslate2's Encoder does not run, as numpy arrays."""
    out = art / "head.npz"
    if out.is_file() or info["kind"] != "classify":
        return
    import numpy as np
    from safetensors import safe_open

    files = sorted(model_dir.glob("*.safetensors"))
    tensors = {}
    for f in files:
        with safe_open(str(f), framework="np") as s:
            for k in s.keys():
                if "pooler" in k or k.startswith("classifier"):
                    tensors[k] = s.get_tensor(k)

    def pick(*suffixes):
        for suf in suffixes:
            for k, v in tensors.items():
                if k.endswith(suf):
                    return v.astype(np.float32)
        raise SystemExit(f"compare_peers: head tensor {suffixes} not in {sorted(tensors)}")

    if info["model_type"] == "bert":  # pooler (dense+tanh on [CLS]) then classifier
        head = {"type": "bert", "w1": pick("pooler.dense.weight"), "b1": pick("pooler.dense.bias"),
                "w2": pick("classifier.weight"), "b2": pick("classifier.bias")}
    else:  # RoBERTa / XLM-R: classifier.dense + tanh on <s>, then classifier.out_proj
        head = {"type": "roberta", "w1": pick("classifier.dense.weight"), "b1": pick("classifier.dense.bias"),
                "w2": pick("classifier.out_proj.weight"), "b2": pick("classifier.out_proj.bias")}
    np.savez(out, **head)


def prepare(a) -> int:
    import numpy as np

    log = lambda m: print(f"[prepare {a.model_dir.name}] {m}", file=sys.stderr, flush=True)
    info = model_info(a.model_dir)
    a.art.mkdir(parents=True, exist_ok=True)
    stamp_path = a.art / "source.json"
    stamp = {"model_dir": str(a.model_dir), "files": fingerprint(a.model_dir), "opset": ONNX_OPSET}
    if info["model_type"] in TORCH_EXPORT:
        stamp["torch_onnx_opset"] = TORCH_ONNX_OPSET
    if stamp_path.is_file() and json.loads(stamp_path.read_text()) != stamp:
        log("checkpoint changed: dropping the old conversions")
        for p in a.art.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    stamp_path.write_text(json.dumps(stamp, indent=1) + "\n")
    systems = set(a.systems.split(",")) if a.systems else set(SYSTEMS)
    if systems & (ORT | OPENVINO):
        convert_onnx(a.model_dir, a.art, info, log)
    if systems & ORT:
        onnx_dir = a.art / "onnx"
        if "graph_ops" not in json.loads((onnx_dir / "fusions.json").read_text()):
            # cached by an older version of this script: the optimizer statistics are there, the
            # saved graph's op counts are added (a conversion redone from scratch writes both)
            write_fusions(onnx_dir, json.loads((onnx_dir / "fusions.json").read_text()))
        ok, summary = ort_fusions(a.art)
        log(f"ORT fused graph: {summary}" + ("" if ok else " -> the ort systems will refuse to run"))
    if systems & {"ct2", "ct2-int8"}:
        convert_ct2(a.model_dir, a.art, info, log)
        extract_head(a.model_dir, a.art, info)
    ids_path = a.art / f"ids_{a.batch}x{a.seq}.npy"
    if a.batch and a.seq and not ids_path.is_file():
        # Uniform over the vocabulary past the special ids (never the pad id, so RoBERTa's
        # positions run 2..seq+1 as for real text), as `mcinfer bench` draws its own.
        rng = np.random.default_rng(20241130)
        np.save(ids_path, rng.integers(5, info["vocab"], size=(a.batch, a.seq), dtype=np.int64))
    if systems & OPENVINO:
        convert_openvino(a.art, log, a.model_dir, info)
    b_tag = int8.prepare(a, systems, log, lambda n: tokenize(a.model_dir, read_csv(a.input)[1][:n], a.max_len))
    for system in sorted(systems & OPENVINO) if a.warm_ov_cache else []:
        if system == "openvino-int8" and not b_tag:
            continue
        t = time.monotonic()
        cache = a.art / "ov_cache" / system
        shutil.rmtree(cache, ignore_errors=True)  # compiled afresh: this IR, this OpenVINO, this CPU
        cache.mkdir(parents=True)
        runner = OpenVinoRunner(a.art, info, a.warm_ov_cache, precision=OV_PRECISION[system], cache_dir=cache,
                                xml=int8.ov_ir(a.art, b_tag) if system == "openvino-int8" else None)
        log(f"{system}: compiled for (b) with {a.warm_ov_cache} threads into the model cache in "
            f"{time.monotonic() - t:.1f} s; inference precision read back: {runner.precision}")

    if a.batch and a.seq:
        ref_path = a.art / f"ref_{a.batch}x{a.seq}.npy"
        if not ref_path.is_file():
            import torch

            torch.set_num_threads(len(os.sched_getaffinity(0)))
            ids = np.load(ids_path)
            runner = TorchRunner(a.model_dir, info, threads=len(os.sched_getaffinity(0)))
            np.save(ref_path, runner.map([(ids, np.ones_like(ids))])[0])
            log(f"PyTorch reference outputs for the {a.batch}x{a.seq} batch -> {ref_path.name}")
    print(json.dumps({"prepared": str(a.art), "kind": info["kind"], "arch": info["arch"]}))
    return 0


# ---------------------------------------------------------------- runners: (ids, mask) -> outputs

class TorchRunner:
    """PyTorch + transformers eager, torch.inference_mode, fp32 weights, the attention implementation
    of TORCH_ATTENTION where it names one (read back either way); with bf16, the forward pass runs
    under torch.autocast("cpu", dtype=torch.bfloat16) (matmuls in bf16 through oneDNN, the ops
    autocast keeps in fp32 in fp32), PyTorch's documented way to run CPU inference in bf16.
    With compiled, the model goes through torch.compile (inductor, its default mode): the first
    call of a shape compiles it, which the untimed warm-up batches pay for."""

    parallel = 1

    def __init__(self, model_dir: Path, info: dict, threads: int, bf16: bool = False, compiled: bool = False):
        import torch

        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
        self.model = load_torch(model_dir, info)
        # the attention implementation transformers resolved (TORCH_ATTENTION asks for one by name)
        self.attention = getattr(self.model.config, "_attn_implementation", None) or "?"
        if compiled:
            self.model = torch.compile(self.model)
        self.info, self.torch, self.bf16 = info, torch, bf16
        self.precision = ("bf16 (torch.autocast)" if bf16 else "fp32") + (", torch.compile" if compiled else "")

    def one(self, ids, mask):
        import contextlib

        torch = self.torch
        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext()
        with torch.inference_mode(), autocast:
            t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
            out = self.model(input_ids=t_ids, attention_mask=t_mask)
            if self.info["kind"] == "classify":
                return out.logits.float().numpy()
            m = t_mask.unsqueeze(-1).float()
            h = out.last_hidden_state.float()
            return ((h * m).sum(1) / m.sum(1).clamp(min=1.0)).numpy()

    def map(self, batches):
        return [self.one(i, m) for i, m in batches]


class OrtRunner:
    """ONNX Runtime CPU, the fused graph (or its int8 quantization), ORT_ENABLE_ALL, intra-op threads = threads.
    fused=False: optimum's export as it is, without ONNX Runtime's transformer optimizer (the
    session's own graph optimizations still run)."""

    parallel = 1

    def __init__(self, art: Path, info: dict, threads: int, quantized: bool = False, fused: bool = True,
                 profile_prefix: str | None = None):
        import onnxruntime as ort

        ok, self.fusions = ort_fusions(art)
        if fused and not ok:
            raise SystemExit(f"compare_peers: ORT's fused graph was not produced ({self.fusions}); "
                             f"delete {art / 'onnx'} and prepare again")
        path, self.precision = art / "onnx" / ("model_ort.onnx" if fused else "model.onnx"), "fp32"
        if not fused:
            self.fusions = "no transformer optimizer"
        if quantized:
            path, self.precision, self.int8_ops = int8.ort_model(art)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if profile_prefix:  # `kernels` only: the profiler's per-node events name each node's kernel
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        self.sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.sess.get_inputs()]
        self.info = info

    def one(self, ids, mask):
        import numpy as np

        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        out = self.sess.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        return out if self.info["kind"] == "classify" else mean_pool(out, mask)

    def map(self, batches):
        return [self.one(i, m) for i, m in batches]


OV_PRECISION = {"openvino": "f32", "openvino-bf16": "default", "openvino-int8": "f32"}


class OpenVinoRunner:
    """OpenVINO CPU: THROUGHPUT hint, AsyncInferQueue. precision "f32" forces f32 inference
    precision; "default" forces nothing, so the plugin's default PERFORMANCE execution mode picks
    it (bf16 on CPUs with native bf16). Either way the precision is read back from the compiled
    model. With cache_dir (one folder per system), the compiled model goes through OpenVINO's
    model cache: OpenVINO 2026.4's cache key leaves INFERENCE_PRECISION_HINT out (an f32 compile
    loaded the bf16 blob of a shared folder, reported f32 and crashed the other way round), and a
    model loaded from the cache echoes the requested hint back, so the precision read back when
    the cache was written is kept in compiled.json beside it. xml: an NNCF int8 IR instead of
    the fp32 one; its layers' runtime precisions are read back (none in int8 fails)."""

    def __init__(self, art: Path, info: dict, threads: int, static_shape=None, precision: str = "f32",
                 cache_dir: Path | None = None, xml: Path | None = None, perf_count: bool = False):
        import openvino as ov
        import openvino.properties as props
        import openvino.properties.hint as hints

        core = ov.Core()
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
            core.set_property({props.cache_dir: str(cache_dir)})
        ir = int8.ov_fp32_ir(art, static=bool(static_shape))
        self.ir_note = ", IR converted from the PyTorch module (SDPA ops)" if ir.parent.name == "ov_torch" else ""
        model = core.read_model(str(xml or ir))
        self.inputs = [i.get_any_name() for i in model.inputs]
        if static_shape:  # fixed-size batches: static shapes are OpenVINO's documented fast path
            model.reshape({name: list(static_shape) for name in self.inputs})
        config = {hints.performance_mode: hints.PerformanceMode.THROUGHPUT, props.inference_num_threads: threads}
        if precision == "f32":  # on CPUs with bf16 support the plugin would otherwise run in bf16
            config[hints.inference_precision] = ov.Type.f32
        if perf_count:  # `kernels` only: time per node, with the primitive type each ran
            config[props.enable_profiling] = True
        self.compiled, self.shape_note = int8.ov_compile(core, model, config, xml, static_shape)
        self.precision = self.compiled.get_property(hints.inference_precision).get_type_name()
        self.mode = self.compiled.get_property(hints.execution_mode).name
        self.loaded_from_cache = bool(self.compiled.get_property(props.loaded_from_cache))
        stamp = cache_dir / "compiled.json" if cache_dir is not None else None
        if self.loaded_from_cache:
            if not stamp.is_file():
                raise SystemExit(f"compare_peers: {cache_dir} has a compiled model but no compiled.json")
            self.precision = json.loads(stamp.read_text())["precision"] + " (read back when cached)"
        elif stamp is not None:
            stamp.write_text(json.dumps({"precision": self.precision, "mode": self.mode}) + "\n")
        if precision == "f32" and not self.precision.startswith("f32"):
            raise SystemExit(f"compare_peers: OpenVINO was asked for f32 and compiled {self.precision}")
        if xml is not None:
            self.precision = int8.ov_precision(self.compiled, xml, self.precision)
        self.parallel = int(self.compiled.get_property(props.optimal_number_of_infer_requests))
        self.streams = str(self.compiled.get_property(props.num_streams))
        # Thread pinning as the compiled model reports it (issue 30: stated per system).
        self.pinning = "pinned" if self.compiled.get_property("ENABLE_CPU_PINNING") else "not pinned"
        self.queue = ov.AsyncInferQueue(self.compiled, self.parallel)
        self.info, self.ov = info, ov

    def map(self, batches):
        import numpy as np

        results = [None] * len(batches)
        kind = self.info["kind"]

        def done(request, i):
            out = request.get_output_tensor(0).data
            results[i] = out.copy() if kind == "classify" else mean_pool(out, batches[i][1])

        self.queue.set_callback(done)
        for i, (ids, mask) in enumerate(batches):
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            self.queue.start_async({k: v for k, v in feed.items() if k in self.inputs}, i)
        self.queue.wait_all()
        return results


class Ct2Runner:
    """CTranslate2 Encoder, inter_threads = threads, intra_threads = 1, float32 (or int8_float32);
    the classifier head runs here in numpy on the last hidden state (its time is inside map())."""

    def __init__(self, art: Path, info: dict, threads: int, compute_type: str = "float32"):
        import ctranslate2
        import numpy as np

        self.encoder = ctranslate2.Encoder(str(art / "ct2"), device="cpu", compute_type=compute_type,
                                           inter_threads=threads, intra_threads=1)
        self.compute_type = self.encoder.compute_type
        self.precision = {"float32": "fp32"}.get(self.compute_type, self.compute_type)
        self.parallel = threads
        self.info, self.ct2 = info, ctranslate2
        self.head = dict(np.load(art / "head.npz")) if info["kind"] == "classify" else None
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=threads)

    def one(self, ids, mask):
        import numpy as np

        lengths = mask.sum(axis=1).astype(np.int32)
        out = self.encoder.forward_batch(self.ct2.StorageView.from_array(np.ascontiguousarray(ids, dtype=np.int32)),
                                         self.ct2.StorageView.from_array(lengths))
        h = np.asarray(out.last_hidden_state)
        if self.head is None:
            return mean_pool(h, mask)
        x = np.tanh(h[:, 0] @ self.head["w1"].T + self.head["b1"])
        return x @ self.head["w2"].T + self.head["b2"]

    def map(self, batches):
        return list(self.pool.map(lambda b: self.one(*b), batches))


def make_runner(base: str, model_dir: Path, art: Path, info: dict, threads: int, static_shape=None,
                ov_cache: bool = False, calib: str | None = None):
    if base in ("torch", "torch-bf16", "torch-compile"):
        return TorchRunner(model_dir, info, threads, bf16=base == "torch-bf16", compiled=base == "torch-compile")
    if base in ("ort", "ort-noopt", "ort-int8"):
        return OrtRunner(art, info, threads, quantized=base == "ort-int8", fused=base != "ort-noopt")
    if base in OPENVINO:
        return OpenVinoRunner(art, info, threads, static_shape, precision=OV_PRECISION[base],
                              cache_dir=art / "ov_cache" / base if ov_cache else None,
                              xml=int8.ov_ir(art, calib) if base == "openvino-int8" else None)
    if base in ("ct2", "ct2-int8"):
        return Ct2Runner(art, info, threads, compute_type="int8_float32" if base == "ct2-int8" else "float32")
    raise SystemExit(f"compare_peers: unknown system {base}")


# Where each peer's threads run (issue 30: threads pinned alike where a system allows it, else the
# difference stated). mcinfer pins its replica threads one per physical core; OpenVINO's pinning is
# read back from the compiled model; these systems pin nothing at the settings used here.
UNPINNED = {
    "torch": "threads not pinned (OpenMP, OMP_PROC_BIND unset)",
    "torch-bf16": "threads not pinned (OpenMP, OMP_PROC_BIND unset)",
    "torch-compile": "threads not pinned (OpenMP, OMP_PROC_BIND unset)",
    "torch-mp": "processes not pinned",
    "ort": "intra-op threads not pinned (ORT affinitizes only at its default thread count)",
    "ort-noopt": "intra-op threads not pinned (ORT affinitizes only at its default thread count)",
    "ort-mp": "processes not pinned",
    "ct2": "threads not pinned (CTranslate2 has no affinity option)",
}


def setting(system: str, k: int, runner=None) -> str:
    if system in OPENVINO:
        forced = "INFERENCE_PRECISION_HINT=f32 forced" if OV_PRECISION[system] == "f32" else "no precision forced"
        extra = ""
        if runner is not None:
            extra = (f"; read back: {runner.precision}, EXECUTION_MODE_HINT={runner.mode}, "
                     f"{runner.parallel} requests, {runner.streams} streams, threads {runner.pinning}")
            extra += ", compiled model loaded from the model cache" if runner.loaded_from_cache else ""
            extra += runner.shape_note + runner.ir_note
        nncf = "NNCF int8 IR (model_type TRANSFORMER), " if system == "openvino-int8" else ""
        return f"{nncf}THROUGHPUT hint, INFERENCE_NUM_THREADS={k}, {forced}, AsyncInferQueue{extra}"
    if system in int8.SYSTEMS:
        return int8.setting(system, k, runner)
    fusions = f" ({runner.fusions})" if isinstance(runner, OrtRunner) else ""
    attention = f", attention {runner.attention}" if isinstance(runner, TorchRunner) else ""
    return UNPINNED[system] + "; " + {
        "torch": f"eager, inference_mode, torch.set_num_threads({k}){attention}",
        "torch-bf16": f"eager, inference_mode + torch.autocast(\"cpu\", dtype=torch.bfloat16), "
                      f"torch.set_num_threads({k}){attention}",
        "torch-compile": f"torch.compile (inductor, default mode), inference_mode, "
                         f"torch.set_num_threads({k}){attention}",
        "torch-mp": f"{k} processes x 1 thread, one model copy each",
        "ort": f"1 session, intra_op_num_threads={k}, ORT_ENABLE_ALL, fused graph{fusions}",
        "ort-noopt": f"1 session, intra_op_num_threads={k}, ORT_ENABLE_ALL, the ONNX export without the "
                     f"transformer optimizer",
        "ort-mp": f"{k} processes x 1 session (intra_op_num_threads=1)",
        "ct2": f"Encoder inter_threads={k}, intra_threads=1, float32, numpy head",
    }[system]


def _single_env(threads: int) -> None:
    """Environment for a process that is to use `threads` cores (set before the heavy imports)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)


# ---------------------------------------------------------------- workload (a)

def _a_worker(rank, a, barrier, queue):
    _single_env(1)
    import numpy as np

    try:
        info = model_info(a.model_dir)
        base = MULTI_PROCESS[a.system]
        runner = make_runner(base, a.model_dir, a.art, info, threads=1)
        ids = np.load(a.art / f"ids_{a.batch}x{a.seq}.npy")
        batch = (ids, np.ones_like(ids))
        first = None
        for _ in range(max(1, a.warmup)):
            first = runner.map([batch])[0]
        if rank == 0 and a.first_out:
            np.save(a.first_out, first)
        barrier.wait()
        t0 = time.monotonic()
        runner.map([batch] * a.iters)
        queue.put((rank, t0, time.monotonic(), None))
    except BaseException as e:  # the parent must not wait forever on a dead worker
        barrier.abort()
        queue.put((rank, 0.0, 0.0, f"{type(e).__name__}: {e}"))


def _collect(queue, procs) -> list:
    """One message per worker; a worker that died without one (a crash) is an error, not a hang."""
    import queue as queue_mod

    got = []
    while len(got) < len(procs):
        try:
            got.append(queue.get(timeout=2.0))
        except queue_mod.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:  # the others may be waiting at the barrier for it
                for p in procs:
                    if p.is_alive():
                        p.terminate()
                got.append((-1, 0.0, 0.0, f"a worker exited with status {dead[0]}"))
                break
    for p in procs:
        p.join(timeout=30)
    return got


def workload_a(a) -> int:
    if a.system in MULTI_PROCESS:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        barrier, queue = ctx.Barrier(a.k), ctx.Queue()
        procs = [ctx.Process(target=_a_worker, args=(r, a, barrier, queue)) for r in range(a.k)]
        for p in procs:
            p.start()
        got = _collect(queue, procs)
        errors = [g[3] for g in got if g[3]]
        if errors:
            raise SystemExit(f"compare_peers: worker failed: {errors[0]}")
        seconds = max(g[2] for g in got) - min(g[1] for g in got)
        batches = a.k * a.iters
        result = {"setting": setting(a.system, a.k), "precision": "fp32"}
    else:
        _single_env(a.k)
        import numpy as np

        info = model_info(a.model_dir)
        runner = make_runner(a.system, a.model_dir, a.art, info, threads=a.k, static_shape=(a.batch, a.seq),
                             calib=int8.calib_tag("a", a.batch, a.seq))
        ids = np.load(a.art / f"ids_{a.batch}x{a.seq}.npy")
        batch = (ids, np.ones_like(ids))
        warm = runner.map([batch] * (max(1, a.warmup) * max(a.k, getattr(runner, "parallel", 1))))
        if a.first_out:
            np.save(a.first_out, warm[0])
        batches = a.k * a.iters
        t0 = time.monotonic()
        runner.map([batch] * batches)
        seconds = time.monotonic() - t0
        result = {"setting": setting(a.system, a.k, runner), "precision": getattr(runner, "precision", "fp32")}
    result.update({"system": a.system, "k": a.k, "batches": batches, "seconds": seconds,
                   "seq_per_s": batches * a.batch / seconds})
    print(json.dumps(result), flush=True)
    return 0


# ---------------------------------------------------------------- workload (b)

def read_csv(path: Path):
    """(ids, texts) as Python lists; pyarrow's multi-threaded reader, the fastest at hand."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    table = pacsv.read_csv(str(path), parse_options=pacsv.ParseOptions(newlines_in_values=True),
                           convert_options=pacsv.ConvertOptions(column_types={"id": pa.string(), "text": pa.string()},
                                                                strings_can_be_null=False, quoted_strings_can_be_null=False))
    return table.column("id").to_pylist(), table.column("text").to_pylist()


def tokenize(model_dir: Path, texts: list, max_len: int):
    """Token id lists, special tokens included, truncated to max_len (HF tokenizers, Rust)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()  # MiniLM's tokenizer.json ships with padding and truncation at 128
    tok.enable_truncation(max_length=max_len)
    return [e.ids for e in tok.encode_batch(texts)]


def make_batches(lengths, order, batch_tokens: int, max_rows: int):
    """Length-sorted rows (longest first) cut into batches of at most batch_tokens padded tokens."""
    batches, cur, cur_max = [], [], 0
    for i in order:
        n = lengths[i]
        if cur and (max(cur_max, n) * (len(cur) + 1) > batch_tokens or len(cur) >= max_rows):
            batches.append(cur)
            cur, cur_max = [], 0
        cur.append(i)
        cur_max = max(cur_max, n)
    if cur:
        batches.append(cur)
    return batches


def run_rows(runner, token_ids: list, pad_id: int, batch_tokens: int, max_rows: int):
    """Sort by length, pad each batch to its longest row, run; outputs in the rows' own order."""
    import numpy as np

    lengths = [len(t) for t in token_ids]
    order = sorted(range(len(token_ids)), key=lambda i: -lengths[i])
    batches = make_batches(lengths, order, batch_tokens, max_rows)
    arrays = []
    padded = 0
    for rows in batches:
        width = max(lengths[i] for i in rows)
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, i in enumerate(rows):
            ids[r, :lengths[i]] = token_ids[i]
            mask[r, :lengths[i]] = 1
        padded += ids.size
        arrays.append((ids, mask))
    outs = runner.map(arrays)
    dim = outs[0].shape[1] if outs else 0
    result = np.zeros((len(token_ids), dim), dtype=np.float32)
    for rows, out in zip(batches, outs):
        result[rows] = out
    return result, {"real_tokens": sum(lengths), "padded_tokens": padded, "batches": len(batches)}


def write_output(path: Path, ids: list, columns: list, values) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    data = {"id": pa.array(ids, pa.string())}
    for j, c in enumerate(columns):
        data[c] = pa.array(values[:, j])
    tmp = path.with_name(path.name + ".tmp")
    pacsv.write_csv(pa.table(data), str(tmp), pacsv.WriteOptions(quoting_style="needed"))
    os.replace(tmp, path)


def _b_worker(rank, a, tmpdir):
    _single_env(1)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one core per process, tokenizer included
    import numpy as np

    info = model_info(a.model_dir)
    _, texts = read_csv(a.input)
    mine = list(range(rank, len(texts), a.k))  # strided: every worker gets the same mix of lengths
    runner = make_runner(MULTI_PROCESS[a.system], a.model_dir, a.art, info, threads=1)
    token_ids = tokenize(a.model_dir, [texts[i] for i in mine], a.max_len)
    out, stats = run_rows(runner, token_ids, info["pad"], a.batch_tokens, a.max_rows)
    np.save(os.path.join(tmpdir, f"out_{rank}.npy"), out)
    with open(os.path.join(tmpdir, f"stats_{rank}.json"), "w") as f:
        json.dump(stats, f)


def workload_b(a) -> int:
    info = model_info(a.model_dir)
    if a.system in MULTI_PROCESS:
        import multiprocessing as mp

        import numpy as np

        with tempfile.TemporaryDirectory(prefix="compare_b_") as tmp:
            ctx = mp.get_context("spawn")
            procs = [ctx.Process(target=_b_worker, args=(r, a, tmp)) for r in range(a.k)]
            for p in procs:
                p.start()
            ids, _ = read_csv(a.input)  # meanwhile: the ids for the output
            for p in procs:
                p.join()
            bad = [p.exitcode for p in procs if p.exitcode != 0]
            if bad:
                raise SystemExit(f"compare_peers: {len(bad)} worker(s) failed (exit {bad[0]})")
            values = np.zeros((len(ids), len(info["columns"])), dtype=np.float32)
            stats = {"real_tokens": 0, "padded_tokens": 0, "batches": 0}
            for r in range(a.k):
                values[r::a.k] = np.load(os.path.join(tmp, f"out_{r}.npy"))
                for key, v in json.load(open(os.path.join(tmp, f"stats_{r}.json"))).items():
                    stats[key] += v
        pipeline = (f"{a.k} processes (spawn), each: its strided share of the rows, HF tokenizers (1 thread), "
                    f"sorted by length, batches of <= {a.batch_tokens} padded tokens; parent merges")
    else:
        _single_env(a.k)
        import numpy as np

        # OpenVINO through its model cache (warmed by `prepare --warm-ov-cache`): the run loads the
        # compiled model instead of compiling it, as a deployment would
        runner = make_runner(a.system, a.model_dir, a.art, info, threads=a.k, ov_cache=True,
                             calib=int8.calib_tag("b", input_csv=a.input, max_len=a.max_len))
        ids, texts = read_csv(a.input)
        token_ids = tokenize(a.model_dir, texts, a.max_len)
        values, stats = run_rows(runner, token_ids, info["pad"], a.batch_tokens, a.max_rows)
        pipeline = (f"pyarrow CSV, HF tokenizers encode_batch (all cores), sorted by length (longest first), "
                    f"batches of <= {a.batch_tokens} padded tokens / {a.max_rows} rows")
        if a.system in OPENVINO | {"ct2", "ct2-int8"}:
            pipeline += f", {runner.parallel} batches in flight"
    values = activation(info, values)
    write_output(a.output, ids, info["columns"], values)
    written = time.monotonic()
    runner = runner if a.system not in MULTI_PROCESS else None
    print(json.dumps({"system": a.system, "k": a.k, "rows": len(ids), "written_at": written,
                      "self_seconds": written - T0, "setting": setting(a.system, a.k, runner), "pipeline": pipeline,
                      "precision": getattr(runner, "precision", "fp32"), **stats}), flush=True)
    return 0


# ---------------------------------------------------------------- kernels read back

def ort_kernels(runner) -> dict:
    """The ORT profiler's time per kernel (the op each node ran as, after the session's fusions)."""
    import onnxruntime as ort

    path = runner.sess.end_profiling()
    try:
        events = json.loads(Path(path).read_text())
    finally:
        Path(path).unlink(missing_ok=True)
    times, providers = {}, set()
    for e in events:
        args = e.get("args", {})
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time") and "op_name" in args:
            times[args["op_name"]] = times.get(args["op_name"], 0.0) + e.get("dur", 0) * 1e-6
            providers.add(args.get("provider", "?"))
    try:
        device = "; ".join(f"{d.type.name} vendor {d.vendor} (id {d.vendor_id:#06x})"
                           for d in ort.capi._pybind_state.get_hardware_devices())
    except (AttributeError, RuntimeError):
        device = "no hardware device API"
    return {"ort_kernels": times, "ort_provider": ", ".join(sorted(providers)), "ort_device": device}


def ov_kernels(runner, feed: dict) -> dict:
    """The compiled model's primitive types (its runtime graph's rt_info) for the compute layers,
    and PERF_COUNT's time per primitive type over one inference after a warm one."""
    import openvino as ov

    counts = {}
    for op in runner.compiled.get_runtime_model().get_ops():
        rt = op.get_rt_info()
        layer = rt["layerType"].astype(str) if "layerType" in rt else ""
        if layer in ("FullyConnected", "MatMul", "Convolution", "ScaledDotProductAttention", "Subgraph"):
            key = f"{layer} {rt['primitiveType'].astype(str) if 'primitiveType' in rt else '?'}"
            counts[key] = counts.get(key, 0) + 1
    request = runner.compiled.create_infer_request()
    for _ in range(2):
        request.infer(feed)
    times = {}
    for p in request.profiling_info:
        if p.status == p.Status.EXECUTED:
            key = f"{p.node_type} {p.exec_type}"
            times[key] = times.get(key, 0.0) + p.real_time.total_seconds()
    caps = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return {"ov_primitives": counts, "ov_time": times, "ov_capabilities": " ".join(caps)}


def kernels(a) -> int:
    """One untimed forward pass of the (a) batch with the system's own read-back of the kernels
    it ran (bench/compare_kernels.py reads this JSON line and the verbose logs the parent asked
    for). A multi-process system reads back its one-thread base system."""
    base = MULTI_PROCESS.get(a.system, a.system)
    threads = 1 if a.system in MULTI_PROCESS else a.k
    _single_env(threads)
    import numpy as np

    info = model_info(a.model_dir)
    ids = np.load(a.art / f"ids_{a.batch}x{a.seq}.npy")
    batch = (ids, np.ones_like(ids))
    out = {"system": a.system, "base": base, "threads": threads}
    if base in ("torch", "torch-bf16", "torch-compile"):
        import torch

        runner = make_runner(base, a.model_dir, a.art, info, threads)
        runner.map([batch])
        out.update(torch_capability=torch.backends.cpu.get_cpu_capability(), attention=runner.attention)
    elif base in ORT:
        with tempfile.TemporaryDirectory(prefix="compare_ortprof_") as tmp:
            runner = OrtRunner(a.art, info, threads, quantized=base == "ort-int8", fused=base != "ort-noopt",
                               profile_prefix=os.path.join(tmp, "ort"))
            runner.map([batch, batch])
            out.update(ort_kernels(runner))
    elif base in OPENVINO:
        runner = OpenVinoRunner(a.art, info, threads, (a.batch, a.seq), precision=OV_PRECISION[base],
                                xml=int8.ov_ir(a.art, int8.calib_tag("a", a.batch, a.seq))
                                if base == "openvino-int8" else None, perf_count=True)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        out.update(ov_kernels(runner, {k: v for k, v in feed.items() if k in runner.inputs}))
        out["precision"] = runner.precision
    elif base in ("ct2", "ct2-int8"):
        runner = make_runner(base, a.model_dir, a.art, info, threads)
        runner.map([batch])
        out["ct2_compute_type"] = runner.compute_type
    else:
        raise SystemExit(f"compare_peers: no kernel read-back for {a.system}")
    print(json.dumps(out), flush=True)
    return 0


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["prepare", "a", "b", "kernels"])
    ap.add_argument("system", nargs="?", choices=SYSTEMS)
    ap.add_argument("--model-dir", type=Path, required=True)
    ap.add_argument("--art", type=Path, required=True, help="conversion cache of this model")
    ap.add_argument("--systems", help="prepare: only what these systems need")
    ap.add_argument("--warm-ov-cache", type=int, metavar="K",
                    help="prepare: compile the OpenVINO systems for (b) with K threads into the model cache")
    ap.add_argument("--k", type=int, default=1, help="threads / processes / streams")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=3, help="(a) timed batches per thread/process")
    ap.add_argument("--first-out", type=Path, help="(a) save the first batch's outputs here (.npy)")
    ap.add_argument("--input", type=Path, help="(b) the test set; prepare: its first rows calibrate openvino-int8")
    ap.add_argument("--output", type=Path)
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("--batch-tokens", type=int, default=4096, help="(b) padded tokens per batch")
    ap.add_argument("--max-rows", type=int, default=256, help="(b) rows per batch at most")
    a = ap.parse_args()
    a.model_dir, a.art = a.model_dir.resolve(), a.art.resolve()
    if a.mode == "prepare":
        return prepare(a)
    if not a.system or a.k < 1:
        ap.error("a/b need SYSTEM and --k >= 1")
    if a.mode == "kernels":
        if not (a.batch and a.seq):
            ap.error("kernels needs --batch and --seq (the (a) batch that prepare wrote)")
        return kernels(a)
    if a.mode == "a":
        if not (a.batch and a.seq) or a.iters < 1:
            ap.error("a needs --batch, --seq and --iters >= 1")
        return workload_a(a)
    if not (a.input and a.output):
        ap.error("b needs --input and --output")
    return workload_b(a)


if __name__ == "__main__":
    sys.exit(main())
