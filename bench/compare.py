#!/usr/bin/env python3
"""mcinfer side by side with its peers: same models, same inputs, same machine, one invocation.

Systems (each run is its own process; peers live in bench/compare_peers.py):
  mcinfer-fp32   the CLI with --precision fp32 (`mcinfer` is accepted for it): `mcinfer bench` for
                 (a), `mcinfer run` for (b); replicas = cores, 1 thread each
  mcinfer-bf16   the same with --precision bf16 (bf16 GEMM inputs and weights, f32 elsewhere)
  mcinfer-int8   the same with --precision int8
  torch          PyTorch + transformers eager, torch.inference_mode, one process with threads = cores
  torch-bf16     the same under torch.autocast("cpu", dtype=torch.bfloat16)
  torch-compile  torch through torch.compile (inductor, default mode), fp32; workload (a) only (it
                 specializes to each batch shape)
  torch-mp       torch, one process per core (one thread and one model copy each)
  ort            ONNX Runtime, optimum's ONNX export (ModernBERT: torch.onnx.export's dynamo
                 exporter) + ORT's transformer fusions (their counts are read back; on a BERT-like
                 family no Attention or SkipLayerNormalization fusion fails the system; the others,
                 which it has no attention fusion for, run what it fused), ORT_ENABLE_ALL, one
                 session with intra-op threads = cores
  ort-noopt      ONNX Runtime on the ONNX export without its transformer optimizer, ORT_ENABLE_ALL
  ort-mp         ONNX Runtime, one process per core, one session with one intra-op thread each
  openvino       OpenVINO IR (fp32 weights), f32 inference precision forced and read back,
                 THROUGHPUT hint, AsyncInferQueue; the IR is converted from the ONNX export, except
                 ModernBERT's in (a): from the PyTorch module (its SDPA as OpenVINO's own op; see
                 compare_peers.py's OV_FROM_TORCH for why not in (b))
  openvino-bf16  the same IR in OpenVINO's default PERFORMANCE execution mode, no precision forced;
                 the inference precision it chose (bf16 on CPUs with native bf16) is read back
  ct2            CTranslate2 Encoder, inter_threads = cores, intra_threads = 1; the classifier head
                 (BERT pooler+classifier, XLM-R dense+tanh+out_proj) runs in numpy, timed with it
  ort-int8       `ort`'s fused graph through ONNX Runtime's quantize_dynamic (per-channel QInt8)
  openvino-int8  the IR quantized by NNCF (nncf.quantize, model_type TRANSFORMER), calibrated on the
                 inputs judged: (a) the random batch, (b) the test set's first rows; f32 elsewhere
  ct2-int8       `ct2`'s conversion with compute_type int8_float32
                 (the int8 peers: bench/compare_int8.py)
The bf16 systems are left out of the default list on a CPU without native bf16 dot products, the
int8 ones on a CPU without AVX2 (mcinfer runs int8 on every AVX2 CPU, natively with VNNI or AMX,
else on its own AVX2 kernels; ONNX Runtime, OpenVINO and CTranslate2 have AVX2 int8 kernels too). A model's systems that cannot run
it are left out and said so (CTranslate2 on DeBERTa and ModernBERT).
Models (--models): bert-base, xlmr-base, mpnet-base, minilm, deberta-v3-base, modernbert-base (see
MODELS). This script and the peers of the first five run in .venv-legacy (bench/requirements.txt:
transformers 4.46, optimum 1.23); modernbert-base needs transformers >= 4.48, so its checkpoint is
written and its peers run by .venv's interpreter (`tools/venv.sh bench/requirements-tf5.txt`:
transformers 5, torch.onnx.export, no CTranslate2), each model's versions stated in RESULTS.
Workloads:
  (a) fixed B x S random token ids (default 32 x 128), forward passes only: sequences/s, measured
      inside each process after warm-up; swept over 1..cores threads / processes / replicas
  (b) the long-tailed test set (bench/gen_testset.py), end to end: wall time from process start
      to the output file in place (imports, model load, CSV, tokenisation, output included);
      every peer sorts by length and pads per batch. OpenVINO compiles through its model cache
      (warmed before the timed runs), so no run is charged for compiling the model.
Every system's outputs (a: the batch; b: every row, every repetition) are compared with PyTorch
fp32's (b: an untimed `torch` run, cached per test set): fp32 systems within 1e-3, bf16 systems
within 0.01 on class probabilities or at cosine >= 0.999 on embeddings, int8 systems within 0.05
on class probabilities (argmax agreement reported) or at a mean cosine >= 0.99 on embeddings (the
minimum reported; the int8 accuracy is shown beside the speed). A disagreement or a failed run
fails the comparison (exit 1). On an embedding model mcinfer-int8's mean cosine is checked against
ort-int8's and ct2-int8's on the same rows.
Repetitions are interleaved (the order rotates each repetition); a speed check is PASS only when
its figure clears the target in every repetition (a ratio of two systems per repetition, the two
run in the same round), FAIL only when it misses in every one, else "within noise", and with
fewer than 5 repetitions it is reported, not judged; int8 is timed as the run of its accuracy
guard builds it (`mcinfer bench --calibrate-on`). Medians are reported, with
ratios mcinfer / peer against the mcinfer of the peer's precision (above 1 favours mcinfer), the
target checks, peak RSS of each run's process tree, a PNG of throughput against threads and a
`## compare:` section in RESULTS.md with the CPU's flags. With mcinfer-bf16 the section also
shows which oneDNN implementation (AMX or not) each primitive ran on (bench/onednn_isa.py) and,
with (a), where mcinfer's time goes per op (`mcinfer bench --profile`) in each precision.
With (a), every system's kernels are read back from the system itself after the timed runs (one
untimed forward pass each: mcinfer's device line, which says which GEMMs are its own, and oneDNN's
verbose names; PyTorch's CPU capability, MKL_VERBOSE and ONEDNN_VERBOSE; ONNX Runtime's profiler;
OpenVINO's runtime primitive types and PERF_COUNT; CTranslate2's CT2_VERBOSE) and each system's
share of this CPU's peak is shown beside them: bench/isa_peak_avx2 (built next to --mcinfer) is run
at the start and at the end, and the model's operations (mcinfer's count) are held against it
(bench/compare_kernels.py says how).

    bench/compare --quick --models minilm --no-results   # smoke test, about a minute
    bench/compare --quick --no-results                   # every model and system, tiny sizes (~7 min on 2 cores)
    bench/compare                                        # the full comparison, 5 repetitions: on 2 cores about
                                                         # 2.5 h of (a) and a day of (b), mostly bert-base (b)
    bench/compare --b-reps 1 --rows 2000                 # a 2-core machine in about 2.5 h
    bench/compare --workloads a --systems mcinfer-fp32,mcinfer-bf16,openvino-bf16,torch-bf16
    bench/compare --models bert-base --workloads a --systems mcinfer,ort,openvino --reps 5
    bench/compare --models modernbert-base --workloads a --cores-only              # issue 33's floors at 32 x 128
    bench/compare --models modernbert-base --workloads a --cores-only --batch 4 --seq 2048   # and at 4 x 2,048

Model conversions (ONNX, OpenVINO IR, CTranslate2) are cached in bench/work/compare/<model>/
and redone only when the checkpoint changes.
"""

import argparse
import csv
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
WORK = BENCH / "work"
PEERS = BENCH / "compare_peers.py"
sys.path.insert(0, str(BENCH))
from seed_recipe import physical_cores  # noqa: E402  (light: no torch at import)
from bench_common import git_revision, sh  # noqa: E402
import compare_int8  # noqa: E402
import compare_kernels  # noqa: E402
import compare_report as report  # noqa: E402
import onednn_isa  # noqa: E402
from compare_report import PRECISION, fmt, mib  # noqa: E402

# The interpreter of the current stack (tools/venv.sh bench/requirements-tf5.txt): a model whose
# family transformers 4.46 lacks names it as its "python"; the others' peers run in this script's
# own interpreter (.venv-legacy).
CURRENT_PYTHON = REPO / ".venv/bin/python"
CURRENT_SETUP = "tools/venv.sh bench/requirements-tf5.txt"
# what the peers need in such an interpreter, besides torch and transformers >= 4.48
CURRENT_NEEDS = ["onnxruntime", "openvino", "nncf", "onnx", "onnxscript", "pyarrow", "pandas"]
SYSTEMS = ["mcinfer-fp32", "mcinfer-bf16", "mcinfer-int8", "torch", "torch-bf16", "torch-compile", "torch-mp", "ort",
           "ort-noopt", "ort-mp", "openvino", "openvino-bf16", "ct2", "ort-int8", "openvino-int8", "ct2-int8"]
ALIASES = {"mcinfer": "mcinfer-fp32"}
MCINFER_PRECISION = {"mcinfer-fp32": "fp32", "mcinfer-bf16": "bf16", "mcinfer-int8": "int8"}
MODELS = {
    "bert-base": {"dir": WORK / "models/bert-base-cls", "make": "bert-base-cls",
                  "about": "BertForSequenceClassification, bert-base shape, random weights (bench/make_models.py)"},
    "xlmr-base": {"dir": WORK / "models/xlmr-base-cls", "make": "xlmr-base-cls",
                  "about": "XLMRobertaForSequenceClassification, base shape, random weights, no tokenizer"},
    "mpnet-base": {"dir": WORK / "models/mpnet-base-cls", "make": "mpnet-base-cls",
                   "about": "MPNetForSequenceClassification, mpnet-base shape, random weights, no tokenizer"},
    "minilm": {"dir": REPO / "models/all-MiniLM-L6-v2", "make": None,
               "about": "sentence-transformers/all-MiniLM-L6-v2 (real weights), mean-pooled embeddings"},
    "modernbert-base": {
        "dir": WORK / "models/modernbert-base-cls", "make": "modernbert-base-cls", "python": CURRENT_PYTHON,
        "about": "ModernBertForSequenceClassification, answerdotai/ModernBERT-base's config (22 layers, global "
                 "attention every 3rd, a 128-token window in the others, GeGLU, mean pooling), random weights, "
                 "the tests' ModernBERT-layout byte-level BPE tokenizer.json (4,000 pieces)",
        "unsupported": {"ct2": "CTranslate2 4.8.5 has no ModernBERT converter or model",
                        "ct2-int8": "CTranslate2 4.8.5 has no ModernBERT converter or model"},
        # issue 33's floors, (a) at 32 x 128 and 4 x 2,048: bf16 >= 1.0x OpenVINO's default
        # (openvino-bf16; held as >= 1.0x the fastest bf16 peer, which with the next floor is the
        # same) and >= 1.5x PyTorch SDPA bf16 autocast (torch-bf16); int8 >= 1.0x the fastest int8
        # peer. The issue sets no fp32 or (b) floor: those ratios are reported, not judged.
        "targets": {"a_bf16_vs_peer": 1.0, "a_bf16_vs_torch_bf16": 1.5, "a_int8_vs_peer": 1.0, "a_vs_peer": None,
                    "b_vs_peer": None, "b_bf16_vs_peer": None, "b_int8_vs_peer": None},
    },
    "deberta-v3-base": {
        "dir": WORK / "models/deberta-v3-base-cls", "make": "deberta-v3-base-cls",
        "about": "DebertaV2ForSequenceClassification, microsoft/deberta-v3-base's config, random weights, "
                 "the tests' 3,000-piece DeBERTa-v3 tokenizer.json",
        "unsupported": {"ct2": "CTranslate2 4.8.5 has no DeBERTa converter or model",
                        "ct2-int8": "CTranslate2 4.8.5 has no DeBERTa converter or model"},
        # issue 32's floors: bf16 >= 1.0x the fastest bf16 peer (OpenVINO's default precision
        # among them) and >= 1.5x PyTorch bf16 autocast; int8 and fp32 >= 1.0x the fastest peer
        # of their precision; (b) bf16 >= 1.0x OpenVINO bf16.
        "targets": {"a_vs_peer": 1.0, "a_bf16_vs_peer": 1.0, "a_int8_vs_peer": 1.0, "a_bf16_vs_torch_bf16": 1.5,
                    "b_bf16_vs_peer": 1.0},
    },
}
# Systems that a workload cannot run as the comparison defines it, whatever the model.
NOT_IN_WORKLOAD = {("torch-compile", "b"): "torch.compile specializes the graph to each batch shape; (b)'s shapes "
                                           "change with every batch (a recompile each), so it runs in (a) only"}
PACKAGES = ["torch", "transformers", "tokenizers", "onnxruntime", "openvino", "nncf", "ctranslate2", "optimum", "onnx",
            "onnxscript", "numpy", "pyarrow", "pandas", "matplotlib", "safetensors"]
TIME = "/usr/bin/time"


def log(msg: str) -> None:
    print(f"[compare {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rel(p) -> str:
    p = str(p)
    return os.path.relpath(p, REPO) if p.startswith(str(REPO)) else p


# ---------------------------------------------------------------- processes and their memory

def _ppid_map() -> dict:
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def tree_rss(root: int) -> int:
    """Sum of the resident set sizes of `root` and all its descendants, in bytes."""
    children = _ppid_map()
    page = os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            pass
    return total


class TreeSampler(threading.Thread):
    """Peak of tree_rss(pid), sampled every `interval` seconds while the process runs."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.interval, self.peak = pid, interval, 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self.stop.wait(self.interval)


def launch(cmd: list, timeout: float | None) -> dict:
    """Runs cmd under /usr/bin/time (so that the child's own peak RSS is not inflated by this
    Python parent, as a fork of it would be) and samples the RSS of the whole process tree, for
    the multi-process peers whose processes each hold a model copy."""
    with tempfile.NamedTemporaryFile(prefix="compare_time_", delete=False) as tf:
        tfile = tf.name
    full = [TIME, "-f", "%M", "-o", tfile] + cmd if os.access(TIME, os.X_OK) else cmd
    start = time.monotonic()
    # Own session: a timeout or Ctrl-C ends the whole tree (time, the peer, its workers).
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = "timeout"
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    end = time.monotonic()
    sampler.stop.set()
    sampler.join()
    direct = 0
    try:
        lines = [l for l in Path(tfile).read_text().split("\n") if l.strip().isdigit()]
        direct = int(lines[-1]) * 1024 if lines else 0
    except OSError:
        pass
    os.unlink(tfile)
    # The direct child's peak (/usr/bin/time) is exact for one process; for a process tree it is
    # the largest single process, so take the sampled sum over the tree where that is larger.
    return {"rc": rc, "stdout": out, "stderr": err, "start": start, "end": end,
            "rss": max(direct, sampler.peak), "rss_direct": direct, "rss_tree": sampler.peak}


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return {}


def failure(res: dict) -> str:
    tail = (res["stderr"] or res["stdout"] or "").strip().splitlines()
    keep = [l for l in tail if "warn" not in l.lower()][-6:] or tail[-6:]
    return f"exit {res['rc']}: " + " | ".join(keep)[-800:]


# ---------------------------------------------------------------- machine, versions, inputs

def machine_facts() -> dict:
    lscpu = {}
    for line in sh(["lscpu"]).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            lscpu[k.strip()] = v.strip()
    mem_kib = 0
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    return {"cpu": lscpu.get("Model name", platform.processor()), "physical_cores": physical_cores(),
            "logical_cpus": len(os.sched_getaffinity(0)), "threads_per_core": lscpu.get("Thread(s) per core", "?"),
            "l3": lscpu.get("L3 cache", "?"), "memory_gib": round(mem_kib / 2**20, 1), "kernel": platform.release(),
            "hypervisor": lscpu.get("Hypervisor vendor", ""), "flags": onednn_isa.cpu_flags()}


def versions_here() -> dict:
    """Python's and PACKAGES' versions in this interpreter."""
    out = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def versions(mcinfer: Path) -> dict:
    return {**versions_here(), "mcinfer": sh([str(mcinfer), "--version"]) or "?", "git": git_revision(REPO)}


def model_python(name: str) -> str:
    """The interpreter that writes a model's checkpoint and runs its peers."""
    return str(MODELS[name].get("python", sys.executable))


def interpreter_versions(python: str) -> dict | None:
    """Python's and PACKAGES' versions as `python` sees them (None: it does not run)."""
    code = ("import importlib.metadata as m, json, platform\n"
            "def v(p):\n"
            "    try:\n"
            "        return m.version(p)\n"
            "    except m.PackageNotFoundError:\n"
            "        return 'not installed'\n"
            f"print(json.dumps({{'python': platform.python_version(), **{{p: v(p) for p in {PACKAGES!r}}}}}))")
    out = sh([python, "-c", code])
    return json.loads(out) if out.startswith("{") else None


def check_interpreters(models: list) -> dict:
    """{interpreter: its versions} for the models' interpreters; exits when one that a model names
    (the current stack's) is missing or lacks what its peers need."""
    found = {}
    for name in models:
        python = model_python(name)
        if python in found:
            continue
        if python == sys.executable:
            found[python] = versions_here()
            continue
        vers = interpreter_versions(python) if os.access(python, os.X_OK) else None
        if vers is None:
            sys.exit(f"compare: {name} runs its peers with {rel(python)}, which does not run; make it: {CURRENT_SETUP}")
        tf = tuple(int(x) for x in vers["transformers"].split(".")[:2]) if vers["transformers"][0].isdigit() else (0,)
        missing = [p for p in CURRENT_NEEDS if vers[p] == "not installed"]
        if tf < (4, 48) or missing:
            sys.exit(f"compare: {rel(python)} has transformers {vers['transformers']}"
                     + (f" and lacks {', '.join(missing)}" if missing else "")
                     + f" ({name} needs transformers >= 4.48 and its peers): run {CURRENT_SETUP}")
        found[python] = vers
    return found


def ensure_model(name: str) -> Path:
    spec = MODELS[name]
    d = spec["dir"]
    if (d / "config.json").is_file():
        return d
    if spec["make"] is None:
        sys.exit(f"compare: {rel(d)} is missing (run scripts/get_minilm.sh)")
    log(f"writing {rel(d)} (bench/make_models.py)")
    subprocess.run([model_python(name), str(BENCH / "make_models.py"), "--only", spec["make"]], check=True,
                   stdout=sys.stderr)
    return d


def ensure_testset(rows: int) -> Path:
    default = WORK / "testset.csv"
    path = default if rows == 20000 else WORK / f"testset_{rows}.csv"
    if path.is_file():
        return path
    log(f"generating {rel(path)} ({rows} rows)")
    subprocess.run([sys.executable, str(BENCH / "gen_testset.py"), "--rows", str(rows), "--out", str(path)],
                   check=True, stdout=sys.stderr)
    return path


def count_rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as f:
        return sum(1 for _ in csv.reader(f)) - 1


def model_max_len(model_dir: Path) -> int:
    """The length `mcinfer run` uses by default: sentence-transformers' max_seq_length, else the
    model's positions (RoBERTa's two offset positions excluded), at most 512."""
    st = model_dir / "sentence_bert_config.json"
    if st.is_file():
        v = json.loads(st.read_text()).get("max_seq_length")
        if v:
            return int(v)
    cfg = json.loads((model_dir / "config.json").read_text())
    n = cfg.get("max_position_embeddings", 512)
    if cfg.get("model_type") in ("roberta", "xlm-roberta", "camembert"):
        n -= cfg.get("pad_token_id", 1) + 1
    return min(512, n)


def warm_page_cache(paths: list) -> None:
    for p in paths:
        if not p.exists():
            continue
        for q in ([p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()]):
            with open(q, "rb") as f:
                while f.read(1 << 24):
                    pass


# ---------------------------------------------------------------- one run of one system

class Ctx:
    """What every run needs: options, paths, per-model facts."""

    def __init__(self, a):
        self.a = a
        self.models = {}  # name -> {"dir", "art", "python", "kind", "max_len", "mcinfer_guard": {...}}
        self.interpreters = {}  # the models' interpreters -> their versions (check_interpreters)
        self.peak_runs, self.peak = [], {"error": "not measured"}  # bench/isa_peak_avx2 (compare_kernels)


def peer_cmd(ctx, mode: str, system: str, model: dict, k: int, extra: list) -> list:
    return [model["python"], str(PEERS), mode, system, "--k", str(k), "--model-dir", str(model["dir"]),
            "--art", str(model["art"])] + extra


def calibration(model: dict, system: str) -> list:
    """int8: `--calibrate-on` the guard run's rows, so that the speed timed is that of the model
    whose accuracy the guard reports (calibrated input smoothing, the GEMMs its check keeps)."""
    src = model.get("guard_input", {}).get(system)
    return ["--calibrate-on", str(src)] if MCINFER_PRECISION[system] == "int8" and src else []


def skipped(model: dict, system: str, workload: str) -> str | None:
    """Why `system` does not run `workload` on `model` (said in the log and in RESULTS), or None."""
    return MODELS[model["name"]].get("unsupported", {}).get(system) or NOT_IN_WORKLOAD.get((system, workload))


def run_a(ctx, model: dict, system: str, k: int, rep: int) -> dict:
    a = ctx.a
    first = model["art"] / f"first_{system}_k{k}_{a.batch}x{a.seq}.npy"
    if system in MCINFER_PRECISION:
        cmd = [str(a.mcinfer), "bench", str(model["dir"]), "--batch", str(a.batch), "--seq", str(a.seq),
               "--threads", "1", "--replicas", str(k), "--warmup", str(a.warmup), "--iters", str(a.iters),
               "--precision", MCINFER_PRECISION[system], "--json"] + calibration(model, system)
    else:
        first.unlink(missing_ok=True)
        cmd = peer_cmd(ctx, "a", system, model, k, ["--batch", str(a.batch), "--seq", str(a.seq), "--warmup",
                                                    str(a.warmup), "--iters", str(a.iters), "--first-out", str(first)])
    res = launch(cmd, a.timeout_s)
    out = {"system": system, "k": k, "rep": rep, "cmd": cmd, "rss": res["rss"], "rss_direct": res["rss_direct"],
           "rss_tree": res["rss_tree"], "process_s": res["end"] - res["start"]}
    info = last_json(res["stdout"])
    if res["rc"] != 0 or "seq_per_s" not in info:
        out["error"] = failure(res)
        return out
    out.update(seq_per_s=info["seq_per_s"], setting=info.get("setting"), precision=info.get("precision"))
    if system in MCINFER_PRECISION:
        out.update(gflops=info.get("gflops"), gemm_gflops=info.get("gemm_gflops"),
                   efficiency=info.get("efficiency_vs_gemm"), device=info.get("device"),
                   setting=f"{k} replicas x 1 thread (mcinfer bench), threads pinned one per core; "
                           f"{info.get('precision_reason')}")
    elif first.is_file():
        import numpy as np

        out["agreement"] = report.agreement(np.load(first), np.load(model["art"] / f"ref_{a.batch}x{a.seq}.npy"),
                                            model["kind"], PRECISION[system], probabilities=False)
    return out


def run_b(ctx, model: dict, system: str, rep: int) -> dict:
    a = ctx.a
    k = a.cores
    outdir = WORK / "compare" / "runs"
    outdir.mkdir(parents=True, exist_ok=True)
    output = outdir / f"{model['name']}_{system}_rep{rep}.csv"
    report_path = outdir / f"{model['name']}_{system}_rep{rep}.report.json"
    for p in (output, report_path):
        p.unlink(missing_ok=True)
    if system in MCINFER_PRECISION:
        cmd = [str(a.mcinfer), "run", str(model["dir"]), "--input", str(model["testset"]), "--output", str(output),
               "--replicas", "auto" if a.cores == physical_cores() else str(a.cores), "--max-len",
               str(model["max_len"]), "--precision", MCINFER_PRECISION[system], "--report", str(report_path),
               "--quiet"] + EMBED_AS_PEERS.get(model["kind"], [])
    else:
        cmd = peer_cmd(ctx, "b", system, model, k, ["--input", str(model["testset"]), "--output", str(output),
                                                    "--max-len", str(model["max_len"]),
                                                    "--batch-tokens", str(a.peer_batch_tokens)])
    res = launch(cmd, a.timeout_s)
    out = {"system": system, "k": k, "rep": rep, "cmd": cmd, "rss": res["rss"], "rss_direct": res["rss_direct"],
           "rss_tree": res["rss_tree"], "output": output}
    if res["rc"] != 0 or not output.is_file():
        out["error"] = failure(res)
        return out
    info = last_json(res["stdout"])
    # Wall time from the process start to the output file in place. A peer stamps that moment
    # (CLOCK_MONOTONIC, shared by all processes) so that interpreter teardown is not charged to
    # it; mcinfer exits right after its atomic rename, so its process end is used.
    written = info.get("written_at") if system not in MCINFER_PRECISION else None
    out["wall"] = (min(written, res["end"]) if written else res["end"]) - res["start"]
    out["rows_per_s"] = model["rows"] / out["wall"]
    if system in MCINFER_PRECISION and report_path.is_file():
        r = json.loads(report_path.read_text())
        out.update(real_tokens=r.get("real_tokens"), padded_tokens=r.get("padded_tokens"), workers=r.get("replicas"),
                   peak_rss_report=r.get("peak_rss_bytes"), weights=r.get("weights_resident_bytes"),
                   act_per_replica=r.get("planned_activation_bytes_per_replica"), max_len=r.get("max_len"),
                   precision=r.get("precision"),
                   setting=f"{r.get('replicas')} replicas x 1 thread, --schedule {r.get('schedule')}, "
                           f"--precision {MCINFER_PRECISION[system]}",
                   pipeline="mcinfer run: streaming CSV, own tokenizer, length-sorted dynamic batches "
                            "(token budget), one shared weight copy")
    else:
        out.update(real_tokens=info.get("real_tokens"), padded_tokens=info.get("padded_tokens"), workers=k,
                   setting=info.get("setting"), pipeline=info.get("pipeline"), precision=info.get("precision"))
    out["agreement"] = report.file_agreement(output, model["b_ref"], model["kind"], PRECISION[system])
    return out



# The peers' embeddings are the mean-pooled last hidden state, not normalised; mcinfer applies a
# sentence-transformers directory's own modules by default (MiniLM: mean pooling, then Normalize),
# so its runs are asked for the same vectors as the peers compute.
EMBED_AS_PEERS = {"embed": ["--pooling", "mean", "--no-normalize"]}


def mcinfer_guard(ctx, model: dict, system: str) -> dict:
    """mcinfer's outputs for the (a) batch: `mcinfer bench` prints none, so the same ids go through
    `mcinfer run` as pre-tokenised JSONL rows (one replica, no activation), in the system's precision."""
    import numpy as np

    a = ctx.a
    ids = np.load(model["art"] / f"ids_{a.batch}x{a.seq}.npy")
    d = WORK / "compare" / "runs"
    d.mkdir(parents=True, exist_ok=True)
    src, dst, rep = (d / f"{model['name']}_guard_{system}_{a.batch}x{a.seq}{s}"
                     for s in (".jsonl", ".out.jsonl", ".report.json"))
    with open(src, "w") as f:
        for i, row in enumerate(ids.tolist()):
            f.write(json.dumps({"id": f"r{i}", "input_ids": row}) + "\n")
    # int8 is timed as this run builds it: calibrated on these rows (mcinfer bench --calibrate-on).
    model.setdefault("guard_input", {})[system] = src
    cmd = [str(a.mcinfer), "run", str(model["dir"]), "--input", str(src), "--output", str(dst), "--replicas", "1",
           "--precision", MCINFER_PRECISION[system], "--report", str(rep), "--quiet"] + \
        (["--activation", "none"] if model["kind"] == "classify" else EMBED_AS_PEERS["embed"])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return {"error": res.stderr.strip()[-500:]}
    rows = {}
    for line in open(dst):
        r = json.loads(line)
        rid = r.pop("id")
        rows[rid] = r["embedding"] if "embedding" in r else list(r.values())  # JSONL embeds as one list
    out = np.array([rows[f"r{i}"] for i in range(len(ids))], dtype=np.float32)
    np.save(model["art"] / f"first_{system}_{a.batch}x{a.seq}.npy", out)
    r = json.loads(rep.read_text())
    return {"agreement": report.agreement(out, np.load(model["art"] / f"ref_{a.batch}x{a.seq}.npy"), model["kind"],
                                          MCINFER_PRECISION[system], probabilities=False),
            "weights": r.get("weights_resident_bytes")}


def b_reference(ctx, model: dict) -> Path:
    """PyTorch fp32's predictions for the (b) test set, the reference every (b) output is judged
    against: one untimed `torch` run, cached next to the model's conversions (which `prepare`
    drops when the checkpoint changes) and redone when the test set or the length changes."""
    a = ctx.a
    testset = model["testset"]
    path = model["art"] / f"ref_b_{testset.stem}_L{model['max_len']}.csv"
    stamp_path = path.with_suffix(".json")
    st = testset.stat()
    stamp = {"testset": testset.name, "size": st.st_size, "mtime": int(st.st_mtime), "max_len": model["max_len"],
             "peer_batch_tokens": a.peer_batch_tokens}
    if path.is_file() and stamp_path.is_file() and json.loads(stamp_path.read_text()) == stamp:
        return path
    log(f"{model['name']}: PyTorch fp32 reference outputs for (b) ({model['rows']} rows; untimed, cached in "
        f"{rel(path)})")
    cmd = peer_cmd(ctx, "b", "torch", model, a.cores, ["--input", str(testset), "--output", str(path),
                                                       "--max-len", str(model["max_len"]),
                                                       "--batch-tokens", str(a.peer_batch_tokens)])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 or not path.is_file():
        sys.exit(f"compare: the PyTorch reference run for (b) failed:\n{res.stderr[-3000:]}")
    stamp_path.write_text(json.dumps(stamp) + "\n")
    return path


def diagnostics(ctx) -> tuple[list, list, list]:
    """mcinfer-bf16's evidence: which oneDNN implementation each primitive ran on (AMX or not),
    and, with (a), where mcinfer's time goes per op in each precision measured.
    Returns (terminal lines, markdown lines, checks)."""
    a = ctx.a
    flags = onednn_isa.cpu_flags()
    term, md, checks = [], ["", "### mcinfer bf16: oneDNN primitives by implementation", "",
                            "From oneDNN's own verbose log (`ONEDNN_VERBOSE=1`): executions per primitive, "
                            "implementation and source type (bench/onednn_isa.py). Attention, LayerNorm and the "
                            "conversions run in mcinfer's own kernels and do not appear here; the f32 matmuls are "
                            "the classifier head's, the reorders pack the weights once.", ""], []
    targets = [("--shape bert-base", ["--shape", "bert-base"])] + \
              [(f"{name} (`{rel(m['dir'])}`)", [str(m["dir"])]) for name, m in ctx.models.items()]
    for label, args in targets:
        res = onednn_isa.run_verbose(a.mcinfer, args, "bf16")
        md += onednn_isa.markdown(label, res) + [""]
        if "error" in res:
            term.append(f"  oneDNN verbose, {label}: FAILED {res['error'][-200:]}")
            continue
        amx, total = onednn_isa.amx_share(res["table"])
        term.append(f"  oneDNN verbose, {label}: bf16 compute primitives on AMX: {amx} of {total}")
        if "amx_bf16" in flags:
            checks.append(report.check(f"bf16 on AMX ({label}): oneDNN bf16 matmul executions on an AMX implementation",
                                       amx / total if total else 0.0, 1.0, f"{amx} of {total} (ONEDNN_VERBOSE=1)"))
    if "a" not in a.workloads:
        return term, md, checks
    md += ["### mcinfer: where the time goes (1 replica, `--profile`)", "",
           f"`mcinfer bench MODEL --batch {a.batch} --seq {a.seq} --threads 1 --iters {a.iters} --precision P "
           f"--profile --json`, run after the measurements above; shares of the profiled forward time.", "",
           "| model | precision | seq/s | GFLOP/s | GEMM GFLOP/s inside the model | GEMM alone GFLOP/s (whose) | "
           "model ÷ GEMM alone | " + " | ".join(PROFILE_OPS) + " |",
           "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(PROFILE_OPS)]
    for name, m in ctx.models.items():
        for system in (s for s in MCINFER_PRECISION if s in a.systems):
            cmd = [str(a.mcinfer), "bench", str(m["dir"]), "--batch", str(a.batch), "--seq", str(a.seq), "--threads",
                   "1", "--warmup", str(a.warmup), "--iters", str(a.iters), "--precision", MCINFER_PRECISION[system],
                   "--profile", "--json"] + calibration(m, system)
            info = last_json(sh(cmd, timeout=a.timeout_s or 3600))
            if not info:
                md.append(f"| {name} | {MCINFER_PRECISION[system]} | failed: `{shlex.join(cmd)}` |")
                continue
            share = info.get("op_share", {})
            md.append(f"| {name} | {info.get('precision')} | {info['seq_per_s']:.2f} | {info['gflops']:.1f} | "
                      f"{fmt(info.get('gemm_achieved_gflops_in_model'))} | {info['gemm_gflops']:.1f} "
                      f"({report.gemm_owner(info.get('device'), MCINFER_PRECISION[system])}) | "
                      f"{100 * info['efficiency_vs_gemm']:.1f}% | "
                      + " | ".join(f"{100 * share.get(op, 0):.1f}%" for op in PROFILE_OPS) + " |")
            term.append(f"  profile {name} {info.get('precision')}: " +
                        ", ".join(f"{op} {100 * share.get(op, 0):.1f}%" for op in PROFILE_OPS))
    return term, md, checks


PROFILE_OPS = ["gemm", "attention", "layernorm", "activation", "embedding", "pooling+head", "convert"]
# the verbose logs each peer family is run with for its kernel read-back (ONEDNN_VERBOSE is not
# given to OpenVINO: its own oneDNN fork fails a Reorder with it set, 2026.4)
READBACK_ENV = {"torch": {"MKL_VERBOSE": "1", "ONEDNN_VERBOSE": "1"}, "ct2": {"CT2_VERBOSE": "1"}}


def kernels_readback(ctx) -> dict:
    """{model: {system: {"summary"} or {"error"}, "_flops": mcinfer's operation count}}: one
    untimed forward pass of the (a) batch per system with its own read-back of the kernels it ran
    (bench/compare_kernels.py), after the timed runs so as not to disturb them."""
    a = ctx.a
    out = {}
    for name, m in ctx.models.items():
        kern = out[name] = {}
        for system in a.systems:
            if skipped(m, system, "a"):
                continue
            if system in MCINFER_PRECISION:
                r = compare_kernels.mcinfer_readback(a.mcinfer, m["dir"], MCINFER_PRECISION[system], a.batch,
                                                     a.seq, calibration(m, system), a.timeout_s)
                if "error" not in r:
                    kern.setdefault("_flops", r)
                    r["summary"] = f"{r['summary']}; {r['precision_reason']}"
                kern[system] = r
            else:
                env = dict(os.environ, **READBACK_ENV.get(system.split("-")[0], {}))
                cmd = peer_cmd(ctx, "kernels", system, m, a.cores, ["--batch", str(a.batch), "--seq", str(a.seq)])
                try:
                    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout_s,
                                         check=False)
                    info = last_json(res.stdout)
                    kern[system] = ({"summary": compare_kernels.peer_summary(system, info, res.stdout + res.stderr)}
                                    if res.returncode == 0 and info else {"error": "read-back failed: " + failure(
                                        {"rc": res.returncode, "stdout": res.stdout, "stderr": res.stderr})})
                except subprocess.TimeoutExpired:
                    kern[system] = {"error": "read-back timed out"}
            log(f"{name} kernels, {system}: {kern[system].get('summary', kern[system].get('error'))[:300]}")
        if "_flops" not in kern and "mcinfer-fp32" not in a.systems and os.access(a.mcinfer, os.X_OK):
            r = compare_kernels.mcinfer_readback(a.mcinfer, m["dir"], "fp32", a.batch, a.seq, [], a.timeout_s)
            if "error" not in r:
                kern["_flops"] = r
    return out


# ---------------------------------------------------------------- main

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--models", default="bert-base,xlmr-base,minilm")
    ap.add_argument("--workloads", default="a,b")
    ap.add_argument("--systems", help="comma-separated (default: all; the bf16 ones only on a CPU with native bf16, "
                                      "the int8 ones only with AVX2)")
    ap.add_argument("--reps", type=int, help="repetitions (default 5, the fewest a speed verdict takes; --quick: 1)")
    ap.add_argument("--b-reps", type=int, help="repetitions of workload (b) (default: --reps); (b) is the long part")
    ap.add_argument("--rows", type=int, help="(b) test-set rows (default 20000)")
    ap.add_argument("--batch", type=int, help="(a) sequences per batch (default 32)")
    ap.add_argument("--seq", type=int, help="(a) tokens per sequence (default 128)")
    ap.add_argument("--warmup", type=int, help="(a) untimed batches per thread/replica (default 1)")
    ap.add_argument("--iters", type=int, help="(a) timed batches per thread/replica (default 3)")
    ap.add_argument("--cores", type=int, default=physical_cores(), help="all cores (default: physical cores)")
    ap.add_argument("--cores-only", action="store_true",
                    help="(a) at all cores only: no sweep, no single-thread figures (a shorter run)")
    ap.add_argument("--sweep", help="(a) k values besides 1 and --cores, comma-separated "
                                    "(default: every k up to 8 cores, then powers of two)")
    ap.add_argument("--max-len", type=int, help="(b) tokens per row (default: the model's, as mcinfer run)")
    ap.add_argument("--peer-batch-tokens", type=int, default=4096, help="(b) padded tokens per peer batch")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: batch 4 x 32, 200 rows, 1 rep, 1 timed batch, sweep 1 and cores")
    ap.add_argument("--no-results", action="store_true", help="print only: no RESULTS.md section, plot in bench/work")
    ap.add_argument("--note", help="a remark for the RESULTS section (e.g. what else ran on the machine)")
    ap.add_argument("--results", type=Path, default=BENCH / "RESULTS.md")
    ap.add_argument("--mcinfer", type=Path, default=REPO / "build/tools/mcinfer/mcinfer")
    ap.add_argument("--timeout-s", type=float, help="limit per process (default: none)")
    a = ap.parse_args()
    quick = {"reps": 1, "rows": 200, "batch": 4, "seq": 32, "warmup": 1, "iters": 1}
    full = {"reps": 5, "rows": 20000, "batch": 32, "seq": 128, "warmup": 1, "iters": 3}
    for k, v in (quick if a.quick else full).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.models = [m.strip() for m in a.models.split(",") if m.strip()]
    a.workloads = [w.strip() for w in a.workloads.split(",") if w.strip()]
    a.default_systems = a.systems is None
    if a.systems is None:
        flags = onednn_isa.cpu_flags()
        native = {"fp32": True, "bf16": onednn_isa.bf16_class(flags)[0], "int8": "avx2" in flags}
        a.systems = [s for s in SYSTEMS if native[PRECISION[s]]]
        if not native["bf16"]:
            log("no native bf16 on this CPU (neither amx_bf16 nor avx512_bf16): the bf16 systems are left out")
        if not native["int8"]:
            log("no AVX2 on this CPU: the int8 systems are left out")
    else:
        a.systems = list(dict.fromkeys(ALIASES.get(s.strip(), s.strip()) for s in a.systems.split(",") if s.strip()))
    bad = [m for m in a.models if m not in MODELS] + [w for w in a.workloads if w not in ("a", "b")] + \
          [s for s in a.systems if s not in SYSTEMS]
    if bad:
        ap.error(f"unknown: {bad}")
    a.b_reps = a.b_reps or a.reps
    if min(a.reps, a.b_reps, a.rows, a.batch, a.seq, a.iters, a.cores) < 1 or a.warmup < 0:
        ap.error("sizes must be positive")
    a.mcinfer = a.mcinfer.resolve()
    if set(a.systems) & set(MCINFER_PRECISION) and not os.access(a.mcinfer, os.X_OK):
        sys.exit(f"compare: no mcinfer binary at {a.mcinfer} (build it: ninja -C build)")
    if a.sweep:
        ks = {int(x) for x in a.sweep.split(",") if x.strip()}
    elif a.quick:
        ks = set()
    elif a.cores <= 8:
        ks = set(range(1, a.cores + 1))
    else:
        ks = {2 ** i for i in range(1, a.cores.bit_length()) if 2 ** i < a.cores}
    a.ks = [a.cores] if a.cores_only else sorted({1, a.cores} | {k for k in ks if 1 <= k <= a.cores})
    return a


def prepare_models(ctx) -> None:
    """Checkpoints, conversions, inputs, mcinfer's outputs for (a) and PyTorch's for (b); not timed."""
    a = ctx.a
    testset = ensure_testset(a.rows) if "b" in a.workloads else None
    for name in a.models:
        d = ensure_model(name).resolve()
        art = (WORK / "compare" / name).resolve()
        has_tok = (d / "tokenizer.json").is_file()
        m = {"name": name, "dir": d, "art": art, "tokenizer": has_tok, "max_len": a.max_len or model_max_len(d),
             "targets": MODELS[name].get("targets", {}), "python": model_python(name)}
        peers = [s for s in a.systems if s not in MCINFER_PRECISION and s not in MODELS[name].get("unsupported", {})]
        cmd = [m["python"], str(PEERS), "prepare", "--model-dir", str(d), "--art", str(art),
               "--systems", ",".join(peers or ["torch"])]
        if "a" in a.workloads:
            cmd += ["--batch", str(a.batch), "--seq", str(a.seq)]
        if "b" in a.workloads and has_tok:
            cmd += ["--warm-ov-cache", str(a.cores), "--input", str(testset.resolve()), "--max-len", str(m["max_len"])]
        log(f"preparing {name} (conversions are cached in {rel(art)})")
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"compare: preparing {name} failed:\n{res.stderr[-3000:]}")
        for line in res.stderr.splitlines():
            if line.startswith("[prepare"):
                log(line)
        m["kind"] = last_json(res.stdout).get("kind")
        inspect = json.loads(sh([str(a.mcinfer), "inspect", str(d), "--json"]) or "{}")
        m["act_per_1000"] = inspect.get("activation_bytes_per_1000_tokens")
        m["guard"] = {}
        for system in (s for s in a.systems if s in MCINFER_PRECISION and "a" in a.workloads):
            m["guard"][system] = g = mcinfer_guard(ctx, m, system)
            if "error" in g:
                log(f"{name}: {system}'s correctness run failed: {g['error']}")
        if "b" in a.workloads:
            if not has_tok:
                log(f"{name}: no tokenizer, so no workload (b) (pre-tokenised workload (a) only)")
            else:
                m["testset"] = testset.resolve()
                m["rows"] = count_rows(testset)
                m["b_ref"] = b_reference(ctx, m)
        ctx.models[name] = m


def measure(ctx) -> tuple[dict, dict]:
    """Every run, interleaved: (results per model and workload, seconds per system)."""
    a = ctx.a
    bf16_target = onednn_isa.bf16_class(onednn_isa.cpu_flags())
    results, timings = {}, {}
    for name, m in ctx.models.items():
        results[name] = {}
        warm_page_cache([m["dir"], m["art"]] + ([m["testset"]] if m.get("testset") else []))
        for w in a.workloads:
            if w == "b" and not m.get("testset"):
                continue
            entries = [(s, k) for s in a.systems for k in (a.ks if w == "a" else [a.cores]) if not skipped(m, s, w)]
            for s in a.systems:
                if skipped(m, s, w):
                    log(f"{name} ({w}) {s}: not run: {skipped(m, s, w)}")
            runs = []
            reps = a.reps if w == "a" else a.b_reps
            for rep in range(reps):
                shift = (rep * max(1, len(entries) // reps)) % len(entries)
                for system, k in entries[shift:] + entries[:shift]:  # rotate: no fixed position bias
                    t = time.monotonic()
                    r = run_a(ctx, m, system, k, rep) if w == "a" else run_b(ctx, m, system, rep)
                    dt_ = time.monotonic() - t
                    timings.setdefault(f"{name}/{w}/{system}", []).append(dt_)
                    runs.append(r)
                    ag = (r.get("agreement") or {}).get("text", "—")
                    if "error" in r:
                        log(f"{name} ({w}) rep {rep} {system} k={k}: FAILED ({dt_:.1f} s): {r['error'][-300:]}")
                    elif w == "a":
                        log(f"{name} (a) rep {rep} {system} k={k}: {r['seq_per_s']:.2f} seq/s, "
                            f"RSS {mib(r['rss']):.0f} MiB, outputs {ag} ({dt_:.1f} s)")
                    else:
                        log(f"{name} (b) rep {rep} {system}: {r['rows_per_s']:.1f} rows/s, wall {r['wall']:.2f} s, "
                            f"RSS {mib(r['rss']):.0f} MiB, outputs {ag}")
            summarise = report.summarise_a if w == "a" else report.summarise_b
            results[name][w] = summarise(a, m, runs, bf16_target)
    return results, timings


def section_head(ctx, facts: dict, vers: dict, command: str, minutes: float, load: tuple) -> list:
    """The RESULTS section's title and its description of what was measured and how."""
    a = ctx.a
    scope = scope_of(a)
    flag, target = onednn_isa.bf16_class(facts["flags"])
    sec = [f"## compare: {scope} — {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", "",
           f"mcinfer ({', '.join(s for s in a.systems if s in MCINFER_PRECISION)}) vs "
           f"{', '.join(s for s in a.systems if s not in MCINFER_PRECISION)} (bench/compare.py).", "",
           f"Command: `{command}` (from the repository root; {minutes:.0f} min)", "",
           f"- Machine: {facts['cpu']}; {facts['physical_cores']} physical cores, {facts['logical_cpus']} logical CPUs "
           f"({facts['threads_per_core']} thread(s)/core), L3 {facts['l3']}; {facts['memory_gib']} GiB memory; "
           f"Linux {facts['kernel']}{', ' + facts['hypervisor'] + ' guest' if facts['hypervisor'] else ''}; "
           f"all cores = {a.cores}",
           f"- CPU flags: {onednn_isa.flags_line(facts['flags'])}"
           + ("" if "a" not in a.workloads else "; bf16 ÷ fp32 target in (a): "
              + (f"≥ {target} ({flag})" if flag else "none (no native bf16)")),
           f"- Load average (1 min) at the start {load[0]:.1f}, at the end {load[1]:.1f}, on {facts['logical_cpus']} "
           f"logical CPUs" + (f"; {a.note}" if a.note else ""),
           f"- Versions: mcinfer `{vers['mcinfer']}` (git {vers['git']}); " + versions_line(ctx),
           "- Models: " + "; ".join(f"{n} = {MODELS[n]['about']} (`{rel(ctx.models[n]['dir'])}`)" for n in ctx.models)]
    not_run = sorted({f"{s} on {n} ({w}): {why}" for n, m in ctx.models.items() for w in a.workloads for s in a.systems
                      if (why := skipped(m, s, w))})
    if not_run:
        sec.append("- Not run: " + "; ".join(not_run))
    if "a" in a.workloads:
        sec.append(f"- (a): {a.batch} × {a.seq} random token ids (the same for every peer; mcinfer bench draws its own), "
                   f"{a.warmup} warm-up and {a.iters} timed batches per thread/process/replica (k × {a.iters} batches "
                   f"at k), throughput measured inside each process; k = {', '.join(map(str, a.ks))}. Outputs of the "
                   f"batch vs PyTorch fp32 eager (classifier logits, as probabilities for bf16 and int8; MiniLM: mean-pooled "
                   f"last hidden state); mcinfer's through `mcinfer run` on the same ids as pre-tokenised JSONL, in "
                   f"the system's precision. GEMM share: `mcinfer bench` times the GEMMs alone on the model's "
                   f"four GEMM shapes in the same precision, same process, right after the model's batches: "
                   f"oneDNN's, or mcinfer's own AVX2 kernels where its device line says they run the precision "
                   f"(the checks name which).")
        sec.append(f"- Peak of this CPU (bench/isa_peak_avx2, run at the start and at the end of this "
                   f"comparison): {compare_kernels.peak_text(ctx.peak)}")
    if "b" in a.workloads:
        sec.append(f"- (b): test set from bench/gen_testset.py ({a.rows} rows); wall time from process start to "
                   f"output file in place, model load and tokenisation included; every row's output (probabilities / "
                   f"embeddings), every repetition, vs PyTorch fp32's (one untimed `torch` run, cached). Peers use HF "
                   f"tokenizers with truncation at the model's length, sort by length, and batch up to "
                   f"{a.peer_batch_tokens} padded tokens; openvino and ct2 keep several batches in flight. OpenVINO "
                   f"loads its compiled model from its model cache (CACHE_DIR bench/work/compare/<model>/ov_cache/<system>, "
                   f"compiled into it afresh before the timed runs), so compile time is not charged to any run.")
    if "openvino-int8" in a.systems:
        nncf = ", ".join(sorted({v["nncf"] for v in ctx.interpreters.values()}))
        sec.append(f"- openvino-int8: NNCF post-training quantization (nncf {nncf}, model_type TRANSFORMER) "
                   f"calibrated on the inputs it is judged on ((a): the batch's {a.batch} rows; (b): the test set's "
                   f"first {compare_int8.CALIB_ROWS} rows), one sample per row; f32 forced for the ops left unquantized.")
    sec += [f"- {', '.join(f'{n} repetition(s) of ({w})' for w, n in (('a', a.reps), ('b', a.b_reps)) if w in a.workloads)}, "
            f"systems interleaved with the order rotated each repetition; medians. Peak RSS: the child's own peak "
            f"(/usr/bin/time) or, for process trees, the sampled sum over the tree (shared library pages counted once "
            f"per process), the max over repetitions.",
            f"- Agreement with PyTorch fp32: fp32 systems max abs diff ≤ {report.TOL_FP32}; bf16 systems max abs diff "
            f"of class probabilities ≤ {report.TOL_BF16_PROB}, embeddings cosine ≥ {report.MIN_COS_BF16}; int8 systems "
            f"max abs diff of class probabilities ≤ {report.TOL_INT8_PROB}, embeddings mean cosine ≥ "
            f"{report.MIN_MEAN_COS_INT8} (their accuracy column: mean cosine, or max |Δp| and argmax agreement); a "
            f"disagreement fails the comparison.",
            "- Ratios are mcinfer ÷ system, against the mcinfer of the system's precision (fp32 peers vs mcinfer-fp32, "
            "bf16 peers vs mcinfer-bf16, int8 peers vs mcinfer-int8): above 1 favours mcinfer."]
    if a.quick:
        sec.append("- **--quick: smoke-test sizes (one tiny timed batch); these numbers are not a measurement.**")
    if "b" in a.workloads and (a.rows < 20000 or a.b_reps < 2):
        sec.append(f"- **(b) below its publication size ({a.rows} rows, {a.b_reps} repetition(s); published: 20000 "
                   f"rows, ≥ 2 repetitions): start-up weighs more here than in the full run.**")
    return sec


def versions_line(ctx) -> str:
    """The peers' Python and packages, per interpreter when the models use more than one."""
    groups = {}
    for name, m in ctx.models.items():
        groups.setdefault(m["python"], []).append(name)

    def pkgs(v: dict) -> str:
        return f"Python {v['python']}; " + ", ".join(f"{p} {v[p]}" for p in PACKAGES if v[p] != "not installed")

    if len(groups) == 1:
        return pkgs(ctx.interpreters[next(iter(groups))])
    return "; ".join(f"peers of {', '.join(names)} (`{rel(py)}`): {pkgs(ctx.interpreters[py])}"
                     for py, names in groups.items())


def scope_of(a) -> str:
    """One RESULTS section per scope (workloads x models, and the systems when not the default
    list), so that a run split in parts keeps every part."""
    scope = f"workload{'s' if len(a.workloads) > 1 else ''} {', '.join(a.workloads)} on {', '.join(a.models)}"
    if "a" in a.workloads and (a.batch, a.seq) != (32, 128):  # an (a) shape of its own keeps its own section
        scope += f" at {a.batch} × {a.seq}"
    return scope if a.default_systems else f"{scope} ({', '.join(a.systems)})"


def main() -> int:
    a = parse_args()
    command = shlex.join(["bench/compare"] + sys.argv[1:])
    ctx = Ctx(a)
    t_start = time.monotonic()
    load_start = os.getloadavg()[0]
    facts, vers = machine_facts(), versions(a.mcinfer)
    ctx.interpreters = check_interpreters(a.models)
    flag, target = onednn_isa.bf16_class(facts["flags"])
    log(f"{facts['cpu']}, {a.cores} cores; models {a.models}, workloads {a.workloads}, systems {a.systems}, "
        f"reps {a.reps} (b: {a.b_reps}), sweep {a.ks}")
    log(f"CPU flags: {onednn_isa.flags_line(facts['flags'])}; bf16 ÷ fp32 target in (a): "
        + (f"≥ {target} ({flag} present)" if flag else "none (no native bf16)"))
    # the CPU's arithmetic peak, measured again at the end (the ceiling is the higher)
    peak_bin = compare_kernels.isa_peak_binary(a.mcinfer)
    ctx.peak_runs = [compare_kernels.measure_peak(peak_bin, a.cores)] if "a" in a.workloads else []
    ctx.peak = compare_kernels.best_peak(ctx.peak_runs)
    if ctx.peak_runs:
        log(f"peak: {compare_kernels.peak_text(ctx.peak)}")
    prepare_models(ctx)
    log(f"prepared in {time.monotonic() - t_start:.0f} s")
    results, timings = measure(ctx)
    term, md_tables = report.tables(a, ctx.models, results)
    if "a" in a.workloads:
        kern = kernels_readback(ctx)
        ctx.peak = compare_kernels.best_peak(ctx.peak_runs + [compare_kernels.measure_peak(peak_bin, a.cores)])
        log(f"peak (start / end): {compare_kernels.peak_text(ctx.peak)}")
        for name in ctx.models:
            t, m = report.kernels_table(a, name, results[name].get("a", {}).get("systems"), kern[name], ctx.peak)
            term, md_tables = term + t, md_tables + m
    diag_term, diag_md, diag_checks = diagnostics(ctx) if "mcinfer-bf16" in a.systems else ([], [], [])
    if diag_checks:
        t, m = report.check_lines("bf16 on AMX", diag_checks)
        diag_term, diag_md = diag_term + t, diag_md + m
    print("\n".join(term + diag_term))
    total = time.monotonic() - t_start
    print(f"\ntotal {total:.0f} s; time per system (s, all its runs): " +
          ", ".join(f"{k} {sum(v):.0f}" for k, v in timings.items()))

    date = dt.datetime.now(dt.timezone.utc)
    # next to the RESULTS file, which links it by name; a partial run's plot says which models, and
    # the time keeps a later run of the same day from replacing the image an earlier section shows
    tag = "" if a.models == list(MODELS) else "_" + "-".join(a.models)
    png = (a.results.parent / f"compare_{date:%Y-%m-%d_%H%M}{tag}.png") if not a.no_results else WORK / "compare" / "plot.png"
    has_plot = report.plot(a, results, png, log)
    if has_plot:
        print(f"plot: {rel(png)}")
    # bf16 that does not run on AMX on an AMX CPU is a broken build, not a slow one
    problems = report.problems(results) + [f"{c['name']}: {c['detail']}" for c in diag_checks if c["ok"] is False]
    if problems:
        print("\nCOMPARISON FAILED:\n  " + "\n  ".join(problems))
    if a.no_results:
        return 1 if problems else 0
    sec = section_head(ctx, facts, vers, command, total / 60, (load_start, os.getloadavg()[0]))
    sec += md_tables + diag_md
    if problems:
        sec += ["", "**The comparison failed:**", ""] + [f"- {p}" for p in problems]
    if has_plot:
        sec += ["", f"![throughput vs threads]({png.name})"]
    report.write_results(a.results, sec, scope_of(a))
    print(f"\nwrote the `## compare:` section of {rel(a.results)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
