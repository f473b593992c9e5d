#!/usr/bin/env python3
"""Retrieval heads, whole jobs side by side (issue 45's floors): a cross-encoder of
ms-marco-MiniLM-L6's shape over (query, passage) pairs, and SPLADE of BERT-base's shape over
long-tailed rows, each system run as a fresh process from its start to its output file in place
(imports, model load, input, tokenisation, output included), the systems alternating within each
repetition.

  make    writes the models (random weights, seeded; all-MiniLM-L6-v2's WordPiece tokenizer) and
          their ONNX exports, and the inputs, into bench/work/retrieval (untimed, never committed)
  run     times the systems of one job: --job ce | splade, --reps N (>= 5 for bench/RESULTS.md)

Systems (fp32 unless named; each at its documented defaults or best settings):
  mcinfer          `mcinfer run DIR --input CSV --output FILE` (ce: --text-pair-col pair), fp32
  mcinfer-int8     the same with --precision int8 (calibrated and gated on 32 rows, as default)
  st               CrossEncoder(dir).predict(pairs) / SparseEncoder(dir).encode(texts), defaults
                   (batch 32; torch's threads: the machine's cores)
  ort              ONNX Runtime: the model exported by torch.onnx, fused by onnxruntime.transformers'
                   optimizer (model_type bert), batches of 32 by length, all graph optimizations;
                   SPLADE's log1p(relu) and max pooling in numpy over its [rows, length, vocab]
                   logits (as fastembed does)
  ort-int8         the same after quantize_dynamic (per-channel int8 weights)
  openvino         OpenVINO from the same ONNX file, f32, LATENCY hint, batches of 32 by length
  fastembed        SparseTextEmbedding (splade only): the same ONNX file under fastembed's
                   Splade_PP_en_v1 layout (specific_model_path; nothing downloaded), from
                   .venv-fastembed (python3 -m venv .venv-fastembed; .venv-fastembed/bin/pip install
                   fastembed: it pins its own onnxruntime and tokenizers)

    .venv/bin/python bench/retrieval.py make              # .venv: tools/venv.sh bench/requirements-tf5.txt
    .venv/bin/python bench/retrieval.py run --job ce --reps 5
"""

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "bench/work/retrieval"
MCINFER = REPO / "build/tools/mcinfer/mcinfer"
MINILM = REPO / "models/all-MiniLM-L6-v2"
TOKENIZER_FILES = ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
BATCH = 32
JOBS = {
    "ce": {"model": "ce-minilm-l6", "input": "pairs.csv", "output": "csv",
           "systems": ["mcinfer", "mcinfer-int8", "st", "ort", "ort-int8", "openvino"]},
    "splade": {"model": "splade-bert-base", "input": "rows.csv", "output": "jsonl",
               "systems": ["mcinfer", "mcinfer-int8", "st", "ort", "openvino", "fastembed"]},
}


def log(msg: str) -> None:
    print(f"retrieval: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- make (untimed)

def make_models(seed: int) -> None:
    import torch
    from sentence_transformers import CrossEncoder, SparseEncoder
    from sentence_transformers.sparse_encoder.models import MLMTransformer, SpladePooling
    from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

    WORK.mkdir(parents=True, exist_ok=True)
    tmp = WORK / ".hf"
    shutil.rmtree(tmp, ignore_errors=True)
    torch.manual_seed(seed)
    # cross-encoder/ms-marco-MiniLM-L6-v2's config: 6 layers, hidden 384, 12 heads, one label.
    ce_cfg = BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                        intermediate_size=1536, max_position_embeddings=512, type_vocab_size=2, num_labels=1)
    splade_cfg = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
    for name, model in (("ce-minilm-l6", BertForSequenceClassification(ce_cfg)),
                        ("splade-bert-base", BertForMaskedLM(splade_cfg))):
        model.config._name_or_path = name
        model.eval().save_pretrained(tmp / name, safe_serialization=True)
        for f in TOKENIZER_FILES:
            shutil.copy2(MINILM / f, tmp / name / f)
    dest = WORK / "ce-minilm-l6"
    shutil.rmtree(dest, ignore_errors=True)
    CrossEncoder(str(tmp / "ce-minilm-l6"), device="cpu", max_length=512).save(str(dest))
    dest = WORK / "splade-bert-base"
    shutil.rmtree(dest, ignore_errors=True)
    SparseEncoder(modules=[MLMTransformer(str(tmp / "splade-bert-base"), max_seq_length=512),
                           SpladePooling(pooling_strategy="max", activation_function="relu")],
                  device="cpu").save(str(dest))
    for name in ("ce-minilm-l6", "splade-bert-base"):
        export_onnx(tmp / name, name)
    shutil.rmtree(tmp)


def export_onnx(hf_dir: Path, name: str) -> None:
    """model.onnx (torch.onnx, TorchScript exporter), model.opt.onnx (fused by onnxruntime's
    transformer optimizer) and, for the cross-encoder, model.int8.onnx (quantize_dynamic)."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification

    cls = AutoModelForMaskedLM if name.startswith("splade") else AutoModelForSequenceClassification
    model = cls.from_pretrained(hf_dir, attn_implementation="eager").eval()
    out = WORK / f"{name}-onnx"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ids = torch.ones(2, 16, dtype=torch.long)
    axes = {0: "batch", 1: "length"}
    torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out / "model.onnx"),
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                    "logits": axes}, opset_version=17, dynamo=False)
    cfg = model.config
    optimize_model(str(out / "model.onnx"), model_type="bert", num_heads=cfg.num_attention_heads,
                   hidden_size=cfg.hidden_size).save_model_to_file(str(out / "model.opt.onnx"))
    if not name.startswith("splade"):
        # DefaultTensorType: else it fails on the optimizer's fused contrib ops (bench/compare_int8.py).
        quantize_dynamic(str(out / "model.opt.onnx"), str(out / "model.int8.onnx"), per_channel=True,
                         weight_type=QuantType.QInt8, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    for f in TOKENIZER_FILES:
        shutil.copy2(hf_dir / f, out / f)
    shutil.copy2(hf_dir / "config.json", out / "config.json")


def make_inputs(ce_pairs: int, splade_rows: int) -> None:
    """pairs.csv (id, text = a query of 3-12 words, pair = a long-tailed passage) and rows.csv
    (long-tailed rows), both from bench/gen_testset.py."""
    import random
    passages = WORK / "passages.csv"
    for rows, out in ((ce_pairs, passages), (splade_rows, WORK / "rows.csv")):
        subprocess.run([sys.executable, str(REPO / "bench/gen_testset.py"), "--rows", str(rows), "--out",
                        str(out)], check=True)
    with open(passages, newline="", encoding="utf-8") as f:
        texts = [r["text"] for r in csv.DictReader(f)]
    rng = random.Random(45)
    with open(WORK / "pairs.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "text", "pair"])
        for i, passage in enumerate(texts):
            words = rng.choice(texts).split()
            start = rng.randrange(max(1, len(words) - 3))
            query = " ".join(words[start:start + rng.randint(3, 12)])
            w.writerow([f"p{i:06d}", query, passage])
    passages.unlink()


# ---------------------------------------------------------------- the peers (one process each)

def read_input(path: Path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [r["id"] for r in rows], rows


def write_scores(path: Path, ids, scores) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "score"])
        w.writerows([i, f"{float(s):.7g}"] for i, s in zip(ids, scores))


def write_sparse(path: Path, ids, rows) -> None:
    """rows: (indices, values) per id, as mcinfer's sparse JSONL."""
    with open(path, "w", encoding="utf-8") as f:
        for i, (idx, val) in zip(ids, rows):
            f.write(json.dumps({"id": i, "indices": [int(x) for x in idx],
                                "values": [float(f"{v:.7g}") for v in val]}) + "\n")


def by_length(encodings):
    """Batches of BATCH indices, longest first (each padded to its longest)."""
    order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
    return [order[i:i + BATCH] for i in range(0, len(order), BATCH)]


def padded(encodings, batch):
    import numpy as np
    width = max(len(encodings[i].ids) for i in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for r, i in enumerate(batch):
        e = encodings[i]
        n = len(e.ids)
        ids[r, :n], mask[r, :n], types[r, :n] = e.ids, e.attention_mask, e.type_ids
    return ids, mask, types


def tokenize(model_dir: Path, rows, pairs: bool):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(512)
    tok.no_padding()
    if pairs:
        return tok.encode_batch([(r["text"], r["pair"]) for r in rows])
    return tok.encode_batch([r["text"] for r in rows])


def peer(system: str, job: str, input_path: Path, output: Path) -> None:
    import numpy as np
    ids, rows = read_input(input_path)
    model_dir = WORK / JOBS[job]["model"]
    onnx_dir = WORK / f"{JOBS[job]['model']}-onnx"
    if system == "st":
        if job == "ce":
            from sentence_transformers import CrossEncoder
            scores = CrossEncoder(str(model_dir), device="cpu").predict([(r["text"], r["pair"]) for r in rows])
            return write_scores(output, ids, scores)
        from sentence_transformers import SparseEncoder
        emb = SparseEncoder(str(model_dir), device="cpu").encode([r["text"] for r in rows],
                                                                  convert_to_sparse_tensor=True)
        emb = emb.coalesce().cpu()
        index, values = emb.indices().numpy(), emb.values().numpy()
        out = [([], []) for _ in ids]
        for (r, c), v in zip(index.T, values):
            out[r][0].append(c)
            out[r][1].append(v)
        return write_sparse(output, ids, out)
    if system == "fastembed":
        from fastembed import SparseTextEmbedding
        model = SparseTextEmbedding("prithivida/Splade_PP_en_v1", specific_model_path=str(onnx_dir),
                                    threads=os.cpu_count())
        result = list(model.embed([r["text"] for r in rows], batch_size=BATCH))
        return write_sparse(output, ids, [(e.indices, e.values) for e in result])
    encodings = tokenize(onnx_dir, rows, job == "ce")
    run = onnx_runner(system, onnx_dir, job)
    out = [None] * len(ids)
    for batch in by_length(encodings):
        i, m, t = padded(encodings, batch)
        logits = run(i, m, t)
        if job == "ce":
            scores = 1 / (1 + np.exp(-logits[:, 0]))
            for r, k in enumerate(batch):
                out[k] = scores[r]
        else:
            weights = np.log1p(np.maximum(logits, 0)) * m[:, :, None]
            pooled = weights.max(axis=1)
            for r, k in enumerate(batch):
                nz = np.flatnonzero(pooled[r])
                out[k] = (nz, pooled[r, nz])
    if job == "ce":
        return write_scores(output, ids, out)
    return write_sparse(output, ids, out)


def onnx_runner(system: str, onnx_dir: Path, job: str):
    threads = os.cpu_count()
    if system.startswith("ort"):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        name = "model.int8.onnx" if system == "ort-int8" else "model.opt.onnx"
        sess = ort.InferenceSession(str(onnx_dir / name), so, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        return lambda i, m, t: sess.run(None, dict(zip(names, (i, m, t))))[0]
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(onnx_dir / "model.onnx")), "CPU",
                                  {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32",
                                   "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    return lambda i, m, t: request.infer({"input_ids": i, "attention_mask": m, "token_type_ids": t})[0]


# ---------------------------------------------------------------- run (timed)

def command(system: str, job: str, input_path: Path, output: Path) -> list:
    spec = JOBS[job]
    if system.startswith("mcinfer"):
        cmd = [str(MCINFER), "run", str(WORK / spec["model"]), "--input", str(input_path),
               "--output", str(output), "--quiet",
               "--precision", "int8" if system == "mcinfer-int8" else "fp32"]
        if job == "ce":
            cmd += ["--text-pair-col", "pair"]
        return cmd
    # fastembed pins its own onnxruntime and tokenizers: a venv of its own (pip install fastembed).
    python = REPO / ".venv-fastembed/bin/python" if system == "fastembed" else Path(sys.executable)
    return [str(python), __file__, "peer", system, job, str(input_path), str(output)]


def timed(cmd: list, output: Path):
    """Wall seconds from the start to the process's exit (its output in place) and its peak RSS."""
    output.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0 or not output.exists():
        sys.exit(f"retrieval: {' '.join(cmd)} failed:\n{err[-3000:]}")
    return seconds, usage.ru_maxrss / 1024.0


def compare_outputs(job: str, outputs: dict) -> dict:
    """Each system's largest difference to `st`'s output (scores; sparse: of any token weight)."""
    def load(path: Path):
        if job == "ce":
            with open(path, newline="") as f:
                return {r[0]: float(r[1]) for r in list(csv.reader(f))[1:]}  # id, then the score
        rows = {}
        with open(path) as f:
            for line in f:
                j = json.loads(line)
                rows[j["id"]] = dict(zip(j["indices"], j["values"]))
        return rows
    ref = load(outputs["st"]) if "st" in outputs else None
    diffs = {}
    for system, path in outputs.items():
        if ref is None:
            break
        got = load(path)
        worst = 0.0
        for k, want in ref.items():
            if job == "ce":
                worst = max(worst, abs(got[k] - want))
            else:
                row = got[k]
                for idx in set(row) | set(want):
                    worst = max(worst, abs(row.get(idx, 0.0) - want.get(idx, 0.0)))
        diffs[system] = worst
    return diffs


def cpu_facts() -> str:
    model, flags = platform.processor(), []
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                flags = [x for x in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni",
                                     "amx_bf16", "amx_int8") if x in have]
                break
    return f"{model}, {os.cpu_count()} cores, flags: {' '.join(flags)}"


def run(job: str, reps: int, systems: list, limit: int) -> None:
    """`limit`: the input's first rows only (a smoke test, not the floors' workload)."""
    spec = JOBS[job]
    input_path = WORK / spec["input"]
    if limit:
        # Records, not lines: a quoted passage may hold line breaks.
        with open(input_path, newline="", encoding="utf-8") as f:
            records = [r for _, r in zip(range(limit + 1), csv.reader(f))]
        input_path = WORK / f"first{limit}-{spec['input']}"
        with open(input_path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerows(records)
    with open(input_path, newline="", encoding="utf-8") as f:
        rows = sum(1 for _ in csv.reader(f)) - 1
    times = {s: [] for s in systems}
    rss = {s: 0.0 for s in systems}
    outputs = {}
    for rep in range(reps):
        for s in systems:
            out = WORK / f"out-{job}-{s}.{spec['output']}"
            seconds, peak = timed(command(s, job, input_path, out), out)
            times[s].append(seconds)
            rss[s] = max(rss[s], peak)
            outputs[s] = out
            log(f"rep {rep + 1}/{reps} {s}: {seconds:.1f} s, {rows / seconds:.1f} rows/s, peak RSS {peak:.0f} MiB")
    diffs = compare_outputs(job, outputs)
    sys.path.insert(0, str(REPO / "bench"))
    from bench_common import git_revision
    print(f"\n{job}: {spec['model']}, {rows} rows of {input_path.name}; {cpu_facts()}; commit "
          f"{git_revision(REPO)}; {reps} repetitions, systems alternating\n")
    print("| system | median s | min-max s | rows/s | mcinfer fp32 / it | peak RSS MiB | max diff to st |")
    print("|---|---|---|---|---|---|---|")
    base = statistics.median(times[systems[0]])
    for s in systems:
        med = statistics.median(times[s])
        diff = f"{diffs[s]:.2e}" if s in diffs else "-"
        print(f"| {s} | {med:.1f} | {min(times[s]):.1f}-{max(times[s]):.1f} | {rows / med:.1f} | "
              f"{med / base:.2f} | {rss[s]:.0f} | {diff} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--pairs", type=int, default=20000)
    m.add_argument("--rows", type=int, default=4000)
    m.add_argument("--seed", type=int, default=45)
    r = sub.add_parser("run")
    r.add_argument("--job", choices=list(JOBS), required=True)
    r.add_argument("--reps", type=int, default=5)
    r.add_argument("--systems", help="comma-separated, in this order (default: all of the job's)")
    r.add_argument("--limit", type=int, default=0, help="the input's first rows only (smoke test)")
    p = sub.add_parser("peer")
    p.add_argument("system")
    p.add_argument("job", choices=list(JOBS))
    p.add_argument("input", type=Path)
    p.add_argument("output", type=Path)
    args = ap.parse_args()
    if args.cmd == "make":
        make_models(args.seed)
        make_inputs(args.pairs, args.rows)
    elif args.cmd == "run":
        systems = args.systems.split(",") if args.systems else JOBS[args.job]["systems"]
        run(args.job, args.reps, systems, args.limit)
    else:
        peer(args.system, args.job, args.input, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
