#!/usr/bin/env python3
"""mcinfer side by side with its peers: same models, same inputs, same machine, one invocation.

Systems (each run is its own process; peers live in bench/compare_peers.py):
  mcinfer    the CLI: `mcinfer bench` for (a), `mcinfer run` for (b); replicas = cores, 1 thread each
  torch      PyTorch + transformers eager, torch.inference_mode, one process with threads = cores
  torch-mp   the same, one process per core (one thread and one model copy each)
  ort        ONNX Runtime, optimum's ONNX export + ORT's transformer fusions, ORT_ENABLE_ALL,
             one session with intra-op threads = cores
  ort-mp     ONNX Runtime, one process per core, one session with one intra-op thread each
  openvino   OpenVINO IR (fp32 weights, f32 inference precision), THROUGHPUT hint, AsyncInferQueue
  ct2        CTranslate2 Encoder, inter_threads = cores, intra_threads = 1; the classifier head
             (BERT pooler+classifier, XLM-R dense+tanh+out_proj) runs in numpy, timed with it
Workloads:
  (a) fixed B x S random token ids (default 32 x 128), forward passes only: sequences/s, measured
      inside each process after warm-up; swept over 1..cores threads / processes / replicas;
      every system's outputs for the batch are compared with PyTorch's (max abs diff, flag > 1e-3)
  (b) the long-tailed test set (bench/gen_testset.py), end to end: wall time from process start
      to the output file in place (imports, model load, CSV, tokenisation, output included);
      every peer sorts by length and pads per batch; outputs compared with mcinfer's
Repetitions are interleaved (the order rotates each repetition); medians are reported, with
ratios mcinfer / peer (above 1 favours mcinfer), the target checks, peak RSS of each run's
process tree, a PNG of throughput against threads and a `## compare:` section in RESULTS.md.

    bench/compare --quick --models minilm --no-results   # smoke test, about a minute
    bench/compare --quick --no-results                   # every model and system, tiny sizes (~7 min on 2 cores)
    bench/compare                                        # the full comparison: on 2 cores about 1 h of (a)
                                                         # and 10+ h of (b), mostly bert-base (b)
    bench/compare --b-reps 1 --rows 2000                 # a 2-core machine in about 1.5 h
    bench/compare --models bert-base --workloads a --systems mcinfer,ort,openvino --reps 5

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
import statistics
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

SYSTEMS = ["mcinfer", "torch", "torch-mp", "ort", "ort-mp", "openvino", "ct2"]
MULTI_PROCESS = {"torch-mp", "ort-mp"}
MODELS = {
    "bert-base": {"dir": WORK / "models/bert-base-cls", "make": "bert-base-cls",
                  "about": "BertForSequenceClassification, bert-base shape, random weights (bench/make_models.py)"},
    "xlmr-base": {"dir": WORK / "models/xlmr-base-cls", "make": "xlmr-base-cls",
                  "about": "XLMRobertaForSequenceClassification, base shape, random weights, no tokenizer"},
    "minilm": {"dir": REPO / "models/all-MiniLM-L6-v2", "make": None,
               "about": "sentence-transformers/all-MiniLM-L6-v2 (real weights), mean-pooled embeddings"},
}
PACKAGES = ["torch", "transformers", "tokenizers", "onnxruntime", "openvino", "ctranslate2", "optimum", "onnx",
            "numpy", "pyarrow", "pandas", "matplotlib", "safetensors"]
TOLERANCE = 1e-3
TARGETS = {"single_thread_eff": 0.90, "scaling": 0.95, "a_vs_peer": 1.12, "b_vs_peer": 1.3, "rss": 1.1}
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
            "hypervisor": lscpu.get("Hypervisor vendor", "")}


def versions(mcinfer: Path) -> dict:
    out = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    out["mcinfer"] = sh([str(mcinfer), "--version"]) or "?"
    out["git"] = git_revision(REPO)
    return out


def ensure_model(name: str) -> Path:
    spec = MODELS[name]
    d = spec["dir"]
    if (d / "config.json").is_file():
        return d
    if spec["make"] is None:
        sys.exit(f"compare: {rel(d)} is missing (run scripts/get_minilm.sh)")
    log(f"writing {rel(d)} (bench/make_models.py)")
    subprocess.run([sys.executable, str(BENCH / "make_models.py"), "--only", spec["make"]], check=True,
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
        self.python = sys.executable
        self.models = {}  # name -> {"dir", "art", "kind", "max_len", "mcinfer_guard": {...}}


def peer_cmd(ctx, mode: str, system: str, model: dict, k: int, extra: list) -> list:
    return [ctx.python, str(PEERS), mode, system, "--k", str(k), "--model-dir", str(model["dir"]),
            "--art", str(model["art"])] + extra


def run_a(ctx, model: dict, system: str, k: int, rep: int) -> dict:
    a = ctx.a
    first = model["art"] / f"first_{system}_k{k}_{a.batch}x{a.seq}.npy"
    if system == "mcinfer":
        cmd = [str(a.mcinfer), "bench", str(model["dir"]), "--batch", str(a.batch), "--seq", str(a.seq),
               "--threads", "1", "--replicas", str(k), "--warmup", str(a.warmup), "--iters", str(a.iters), "--json"]
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
    out.update(seq_per_s=info["seq_per_s"], setting=info.get("setting"))
    if system == "mcinfer":
        out.update(gflops=info.get("gflops"), gemm_gflops=info.get("gemm_gflops"),
                   efficiency=info.get("efficiency_vs_gemm"), setting=f"{k} replicas x 1 thread (mcinfer bench)")
    elif first.is_file():
        out["diff"] = max_abs_diff(first, model["art"] / f"ref_{a.batch}x{a.seq}.npy")
    return out


def run_b(ctx, model: dict, system: str, rep: int) -> dict:
    a = ctx.a
    k = a.cores
    outdir = WORK / "compare" / "runs"
    outdir.mkdir(parents=True, exist_ok=True)
    output = outdir / f"{model['name']}_{system}_rep{rep}.csv"
    report = outdir / f"{model['name']}_{system}_rep{rep}.report.json"
    for p in (output, report):
        p.unlink(missing_ok=True)
    if system == "mcinfer":
        cmd = [str(a.mcinfer), "run", str(model["dir"]), "--input", str(model["testset"]), "--output", str(output),
               "--replicas", "auto" if a.cores == physical_cores() else str(a.cores), "--max-len",
               str(model["max_len"]), "--report", str(report), "--quiet"]
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
    written = info.get("written_at") if system != "mcinfer" else None
    out["wall"] = (min(written, res["end"]) if written else res["end"]) - res["start"]
    out["rows_per_s"] = model["rows"] / out["wall"]
    if system == "mcinfer" and report.is_file():
        r = json.loads(report.read_text())
        out.update(real_tokens=r.get("real_tokens"), padded_tokens=r.get("padded_tokens"), workers=r.get("replicas"),
                   peak_rss_report=r.get("peak_rss_bytes"), weights=r.get("weights_resident_bytes"),
                   act_per_replica=r.get("planned_activation_bytes_per_replica"), max_len=r.get("max_len"),
                   setting=f"{r.get('replicas')} replicas x 1 thread, --schedule {r.get('schedule')}",
                   pipeline="mcinfer run: streaming CSV, own tokenizer, length-sorted dynamic batches "
                            "(token budget), one shared weight copy")
    else:
        out.update(real_tokens=info.get("real_tokens"), padded_tokens=info.get("padded_tokens"), workers=k,
                   setting=info.get("setting"), pipeline=info.get("pipeline"))
    return out


def max_abs_diff(a_path: Path, b_path: Path) -> float:
    import numpy as np

    x, y = np.load(a_path), np.load(b_path)
    if x.shape != y.shape:
        return float("inf")
    return float(np.abs(x.astype(np.float64) - y.astype(np.float64)).max())


def compare_outputs(mine: Path, peer: Path) -> dict:
    """Max abs difference per id between two prediction files (columns matched by name)."""
    import numpy as np
    import pandas as pd

    a = pd.read_csv(mine, dtype={"id": str}, keep_default_na=False).set_index("id")
    b = pd.read_csv(peer, dtype={"id": str}, keep_default_na=False).set_index("id")
    out = {"rows": len(b), "same_ids": bool(set(a.index) == set(b.index) and b.index.is_unique),
           "same_columns": list(a.columns) == list(b.columns)}
    if out["same_ids"] and out["same_columns"]:
        out["max_abs_diff"] = float(np.abs(a.to_numpy(float) - b.loc[a.index].to_numpy(float)).max())
    return out


def mcinfer_guard(ctx, model: dict) -> dict:
    """mcinfer's outputs for the (a) batch: `mcinfer bench` prints none, so the same ids go through
    `mcinfer run` as pre-tokenised JSONL rows (one replica, no activation)."""
    import numpy as np

    a = ctx.a
    ids = np.load(model["art"] / f"ids_{a.batch}x{a.seq}.npy")
    d = WORK / "compare" / "runs"
    d.mkdir(parents=True, exist_ok=True)
    src, dst, rep = (d / f"{model['name']}_guard_{a.batch}x{a.seq}{s}" for s in (".jsonl", ".out.jsonl", ".report.json"))
    with open(src, "w") as f:
        for i, row in enumerate(ids.tolist()):
            f.write(json.dumps({"id": f"r{i}", "input_ids": row}) + "\n")
    cmd = [str(a.mcinfer), "run", str(model["dir"]), "--input", str(src), "--output", str(dst), "--replicas", "1",
           "--report", str(rep), "--quiet"] + (["--activation", "none"] if model["kind"] == "classify" else [])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return {"error": res.stderr.strip()[-500:]}
    rows = {}
    for line in open(dst):
        r = json.loads(line)
        rid = r.pop("id")
        rows[rid] = r["embedding"] if "embedding" in r else list(r.values())  # JSONL embeds as one list
    out = np.array([rows[f"r{i}"] for i in range(len(ids))], dtype=np.float32)
    np.save(model["art"] / f"first_mcinfer_{a.batch}x{a.seq}.npy", out)
    report = json.loads(rep.read_text())
    return {"diff": max_abs_diff(model["art"] / f"first_mcinfer_{a.batch}x{a.seq}.npy",
                                 model["art"] / f"ref_{a.batch}x{a.seq}.npy"),
            "weights": report.get("weights_resident_bytes")}


# ---------------------------------------------------------------- summaries

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".1f", none="—"):
    return none if x is None else format(x, spec)


def mib(b):
    return None if not b else b / 2**20


def check(name: str, value, target, detail: str) -> dict:
    ok = None if value is None else value >= target
    return {"name": name, "value": value, "target": target, "ok": ok, "detail": detail}


def summarise_a(ctx, model: dict, runs: list) -> dict:
    a = ctx.a
    by = {}
    for r in runs:
        by.setdefault((r["system"], r["k"]), []).append(r)
    s = {}
    for key, rs in by.items():
        ok = [r for r in rs if "error" not in r]
        s[key] = {"seq_per_s": med([r["seq_per_s"] for r in ok]), "all": [r.get("seq_per_s") for r in rs],
                  "rss": max((r["rss"] for r in ok), default=None), "setting": (ok or rs)[-1].get("setting"),
                  "diff": next((r["diff"] for r in ok if "diff" in r), None), "errors": [r["error"] for r in rs if "error" in r],
                  "efficiency": med([r.get("efficiency") for r in ok]), "gflops": med([r.get("gflops") for r in ok]),
                  "gemm_gflops": med([r.get("gemm_gflops") for r in ok])}
    guard = model.get("guard", {})
    if ("mcinfer", 1) in s or ("mcinfer", a.cores) in s:
        for k in {1, a.cores}:
            if ("mcinfer", k) in s:
                s[("mcinfer", k)]["diff"] = guard.get("diff")
    checks = []
    one, allc = s.get(("mcinfer", 1), {}), s.get(("mcinfer", a.cores), {})
    if one:
        # per-run ratio (same process, same moment), then the median over repetitions
        checks.append(check("(a) single thread: mcinfer GFLOP/s ÷ oneDNN GEMM GFLOP/s on the same shapes",
                            one["efficiency"], TARGETS["single_thread_eff"],
                            f"{fmt(one['gflops'])} ÷ {fmt(one['gemm_gflops'])} GFLOP/s"))
    if one.get("seq_per_s") and allc.get("seq_per_s") and a.cores > 1:
        v = allc["seq_per_s"] / (a.cores * one["seq_per_s"])
        checks.append(check(f"(a) all cores: mcinfer {a.cores} replicas ÷ ({a.cores} × one replica)", v,
                            TARGETS["scaling"], f"{allc['seq_per_s']:.2f} ÷ ({a.cores} × {one['seq_per_s']:.2f}) seq/s"))
    peers = [(sys_, v) for (sys_, k), v in s.items() if k == a.cores and sys_ != "mcinfer" and v["seq_per_s"]]
    if allc.get("seq_per_s") and peers:
        best = max(peers, key=lambda p: p[1]["seq_per_s"])
        checks.append(check(f"(a) fp32, all cores: mcinfer ÷ fastest peer ({best[0]})",
                            allc["seq_per_s"] / best[1]["seq_per_s"], TARGETS["a_vs_peer"],
                            f"{allc['seq_per_s']:.2f} ÷ {best[1]['seq_per_s']:.2f} seq/s"))
    if allc.get("rss") and guard.get("weights") and model.get("act_per_1000"):
        act = model["act_per_1000"] * a.batch * a.seq / 1000
        budget = guard["weights"] + a.cores * act
        checks.append(check(f"(a) peak RSS, {a.cores} replicas: {TARGETS['rss']} × (weights + activations) ÷ RSS",
                            TARGETS["rss"] * budget / allc["rss"], 1.0,
                            f"RSS {mib(allc['rss']):.0f} MiB vs weights {mib(guard['weights']):.0f} MiB + "
                            f"{a.cores} × {mib(act):.0f} MiB activations (estimate from `mcinfer inspect`)"))
    return {"systems": s, "checks": checks}


def summarise_b(ctx, model: dict, runs: list) -> dict:
    by = {}
    for r in runs:
        by.setdefault(r["system"], []).append(r)
    s = {}
    for sys_, rs in by.items():
        ok = [r for r in rs if "error" not in r]
        last = (ok or rs)[-1]
        s[sys_] = {"rows_per_s": med([r["rows_per_s"] for r in ok]), "wall": med([r["wall"] for r in ok]),
                   "walls": [round(r["wall"], 2) for r in ok], "rss": max((r["rss"] for r in ok), default=None),
                   "setting": last.get("setting"), "pipeline": last.get("pipeline"),
                   "real_tokens": last.get("real_tokens"), "padded_tokens": last.get("padded_tokens"),
                   "errors": [r["error"] for r in rs if "error" in r], "output": last.get("output") if ok else None,
                   "peak_rss_report": max((r.get("peak_rss_report") or 0 for r in ok), default=None),
                   "weights": last.get("weights"), "act_per_replica": last.get("act_per_replica"),
                   "workers": last.get("workers"), "max_len": last.get("max_len")}
    mc = s.get("mcinfer", {})
    for sys_, v in s.items():
        if sys_ != "mcinfer" and v.get("output") and mc.get("output"):
            v["agreement"] = compare_outputs(mc["output"], v["output"])
    checks = []
    peers = [(k, v) for k, v in s.items() if k != "mcinfer" and v["rows_per_s"]]
    if mc.get("rows_per_s") and peers:
        best = max(peers, key=lambda p: p[1]["rows_per_s"])
        checks.append(check(f"(b) fp32, all cores, CSV to CSV: mcinfer ÷ fastest peer ({best[0]})",
                            mc["rows_per_s"] / best[1]["rows_per_s"], TARGETS["b_vs_peer"],
                            f"{mc['rows_per_s']:.1f} ÷ {best[1]['rows_per_s']:.1f} rows/s"))
    if mc.get("peak_rss_report") and mc.get("weights") and mc.get("act_per_replica"):
        budget = mc["weights"] + (mc["workers"] or 1) * mc["act_per_replica"]
        checks.append(check(f"(b) peak RSS, {mc['workers']} replicas: {TARGETS['rss']} × (weights + activations) ÷ RSS",
                            TARGETS["rss"] * budget / mc["peak_rss_report"], 1.0,
                            f"RSS {mib(mc['peak_rss_report']):.0f} MiB (report; /usr/bin/time {fmt(mib(mc['rss']), '.0f')} MiB) "
                            f"vs weights {mib(mc['weights']):.0f} MiB + {mc['workers']} × {mib(mc['act_per_replica']):.0f} MiB "
                            f"planned activations"))
    return {"systems": s, "checks": checks}


# ---------------------------------------------------------------- output

def tables(ctx, results: dict) -> tuple[list, list]:
    """(lines for the terminal, lines of markdown)."""
    a = ctx.a
    term, md = [], []
    for name, per in results.items():
        model = ctx.models[name]
        if "a" in per:
            sa = per["a"]["systems"]
            mc = sa.get(("mcinfer", a.cores), {}).get("seq_per_s")
            mc1 = sa.get(("mcinfer", 1), {}).get("seq_per_s")
            title = f"{name} — (a) {a.batch} × {a.seq} tokens, fp32, forward only"
            term += ["", title]
            md += ["", f"### {title}", "",
                   f"| system | setting ({a.cores} cores) | seq/s | mcinfer ÷ system | 1 thread/process: seq/s | "
                   f"mcinfer ÷ system (1) | peak RSS | max abs diff vs PyTorch | runs (seq/s) |",
                   "|---|---|---:|---:|---:|---:|---:|---:|---|"]
            head = f"  {'system':<10} {'seq/s':>9} {'÷':>6} {'1-thr':>8} {'÷':>6} {'RSS MiB':>8} {'diff':>9}  setting"
            term.append(head)
            for system in a.systems:
                v, v1 = sa.get((system, a.cores)), sa.get((system, 1))
                if v is None:
                    continue
                thr = v["seq_per_s"]
                one = v1["seq_per_s"] if v1 else None
                ratio = mc / thr if mc and thr else None
                ratio1 = mc1 / one if mc1 and one else None
                diff = v["diff"] if v["diff"] is not None else (v1 or {}).get("diff")
                flag = " FLAG" if diff is not None and diff > TOLERANCE else ""
                err = f" FAILED: {v['errors'][0]}" if not thr and v["errors"] else ""
                term.append(f"  {system:<10} {fmt(thr, '.2f'):>9} {fmt(ratio, '.2f'):>6} {fmt(one, '.2f'):>8} "
                            f"{fmt(ratio1, '.2f'):>6} {fmt(mib(v['rss']), '.0f'):>8} {fmt(diff, '.1e'):>9}{flag}  "
                            f"{v['setting'] or ''}{err}")
                md.append(f"| {system} | {v['setting'] or ''} | {fmt(thr, '.2f') if thr else 'FAILED'} | "
                          f"{fmt(ratio, '.2f')} | {fmt(one, '.2f')} | {fmt(ratio1, '.2f')} | "
                          f"{fmt(mib(v['rss']), '.0f')} MiB | {fmt(diff, '.1e')}{' **> 1e-3**' if flag else ''} | "
                          f"{', '.join(fmt(x, '.2f', 'fail') for x in v['all'])} |")
            ks = sorted({k for (_, k) in sa})
            if len(ks) > 2 or ks != [1, a.cores]:
                md += ["", "Sweep (seq/s; threads, processes, streams or replicas = k):", "",
                       "| system | " + " | ".join(f"k={k}" for k in ks) + " |", "|---|" + "---:|" * len(ks)]
                for system in a.systems:
                    if any((system, k) in sa for k in ks):
                        md.append(f"| {system} | " + " | ".join(fmt(sa.get((system, k), {}).get("seq_per_s"), ".2f")
                                                                for k in ks) + " |")
            errs = [(k, e) for k, v in sa.items() for e in v["errors"]]
            for (system, k), e in errs:
                md.append(f"\n- {system} (k={k}) failed: `{e[:300]}`")
        if "b" in per:
            sb = per["b"]["systems"]
            mc = sb.get("mcinfer", {}).get("rows_per_s")
            title = f"{name} — (b) {model['rows']} rows, CSV to CSV, max length {model['max_len']}, fp32, {a.cores} cores"
            term += ["", title]
            term.append(f"  {'system':<10} {'rows/s':>9} {'÷':>6} {'wall s':>8} {'RSS MiB':>8} {'padded':>7} {'diff':>9}  pipeline")
            md += ["", f"### {title}", "",
                   "| system | rows/s | mcinfer ÷ system | wall s (median) | peak RSS | padded-token share | "
                   "max abs diff vs mcinfer | pipeline | walls (s) |", "|---|---:|---:|---:|---:|---:|---:|---|---|"]
            for system in a.systems:
                v = sb.get(system)
                if v is None:
                    continue
                r = v["rows_per_s"]
                ratio = mc / r if mc and r else None
                padded = (1 - v["real_tokens"] / v["padded_tokens"]) if v.get("real_tokens") and v.get("padded_tokens") else None
                ag = v.get("agreement", {})
                diff = ag.get("max_abs_diff")
                bad = ag and (diff is None or diff > TOLERANCE)
                err = f" FAILED: {v['errors'][0]}" if not r and v["errors"] else ""
                term.append(f"  {system:<10} {fmt(r, '.1f'):>9} {fmt(ratio, '.2f'):>6} {fmt(v['wall'], '.2f'):>8} "
                            f"{fmt(mib(v['rss']), '.0f'):>8} {fmt(None if padded is None else 100 * padded, '.1f'):>6}% "
                            f"{fmt(diff, '.1e'):>9}{' FLAG' if bad else ''}  {v['pipeline'] or ''}{err}")
                md.append(f"| {system} | {fmt(r, '.1f') if r else 'FAILED'} | {fmt(ratio, '.2f')} | {fmt(v['wall'], '.2f')} | "
                          f"{fmt(mib(v['rss']), '.0f')} MiB | {fmt(None if padded is None else 100 * padded, '.1f')}% | "
                          f"{fmt(diff, '.1e')}{' **FLAG**' if bad else ''} | {v['pipeline'] or ''} | "
                          f"{', '.join(map(str, v['walls']))} |")
            for system, v in sb.items():
                for e in v["errors"]:
                    md.append(f"\n- {system} failed: `{e[:300]}`")
        checks = per.get("a", {}).get("checks", []) + per.get("b", {}).get("checks", [])
        if checks:
            term.append("  checks:")
            md += ["", f"Checks ({name}, from this run):", ""]
            for c in checks:
                verdict = "—" if c["ok"] is None else ("PASS" if c["ok"] else "FAIL")
                term.append(f"    {verdict:<4} {c['name']}: {fmt(c['value'], '.3f')} (target ≥ {c['target']}); {c['detail']}")
                md.append(f"- **{verdict}** {c['name']}: {fmt(c['value'], '.3f')} (target ≥ {c['target']}); {c['detail']}")
    return term, md


def plot(ctx, results: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot")
        return False
    names = [n for n in results if "a" in results[n]]
    if not names:
        return False
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        sa = results[name]["a"]["systems"]
        for system in ctx.a.systems:
            pts = sorted((k, v["seq_per_s"]) for (s, k), v in sa.items() if s == system and v["seq_per_s"])
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        linewidth=2.5 if system == "mcinfer" else 1.3, label=system)
        ax.set_title(f"{name}: {ctx.a.batch}×{ctx.a.seq} tokens, fp32")
        ax.set_xlabel("threads / processes / replicas")
        ax.set_ylabel("sequences / s")
        ax.set_xticks(sorted({k for (_, k) in sa}))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"mcinfer vs peers, workload (a), same run ({time.strftime('%Y-%m-%d')})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return True


def write_results(path: Path, section: list, scope: str) -> None:
    """Replaces this script's own section for the same scope (`## compare: <scope> — <date>`), or
    appends one; every other section, other scopes of this script included, stays as it is."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith(f"## compare: {scope} — ")), None)
    if start is None:
        new = text.rstrip("\n") + "\n\n" + "\n".join(section).rstrip("\n") + "\n"
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        tail = lines[end:]
        new = "\n".join(lines[:start] + section + ([""] if tail else []) + tail).rstrip("\n") + "\n"
    path.write_text(new, encoding="utf-8")


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--models", default="bert-base,xlmr-base,minilm")
    ap.add_argument("--workloads", default="a,b")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--reps", type=int, help="repetitions (default 3; --quick: 1)")
    ap.add_argument("--b-reps", type=int, help="repetitions of workload (b) (default: --reps); (b) is the long part")
    ap.add_argument("--rows", type=int, help="(b) test-set rows (default 20000)")
    ap.add_argument("--batch", type=int, help="(a) sequences per batch (default 32)")
    ap.add_argument("--seq", type=int, help="(a) tokens per sequence (default 128)")
    ap.add_argument("--warmup", type=int, help="(a) untimed batches per thread/replica (default 1)")
    ap.add_argument("--iters", type=int, help="(a) timed batches per thread/replica (default 3)")
    ap.add_argument("--cores", type=int, default=physical_cores(), help="all cores (default: physical cores)")
    ap.add_argument("--sweep", help="(a) k values besides 1 and --cores, comma-separated "
                                    "(default: every k up to 8 cores, then powers of two)")
    ap.add_argument("--max-len", type=int, help="(b) tokens per row (default: the model's, as mcinfer run)")
    ap.add_argument("--peer-batch-tokens", type=int, default=4096, help="(b) padded tokens per peer batch")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: batch 4 x 32, 200 rows, 1 rep, 1 timed batch, sweep 1 and cores")
    ap.add_argument("--no-results", action="store_true", help="print only: no RESULTS.md section, plot in bench/work")
    ap.add_argument("--results", type=Path, default=BENCH / "RESULTS.md")
    ap.add_argument("--mcinfer", type=Path, default=REPO / "build/tools/mcinfer/mcinfer")
    ap.add_argument("--timeout-s", type=float, help="limit per process (default: none)")
    a = ap.parse_args()
    quick = {"reps": 1, "rows": 200, "batch": 4, "seq": 32, "warmup": 1, "iters": 1}
    full = {"reps": 3, "rows": 20000, "batch": 32, "seq": 128, "warmup": 1, "iters": 3}
    for k, v in (quick if a.quick else full).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.models = [m.strip() for m in a.models.split(",") if m.strip()]
    a.workloads = [w.strip() for w in a.workloads.split(",") if w.strip()]
    a.systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    bad = [m for m in a.models if m not in MODELS] + [w for w in a.workloads if w not in ("a", "b")] + \
          [s for s in a.systems if s not in SYSTEMS]
    if bad:
        ap.error(f"unknown: {bad}")
    a.b_reps = a.b_reps or a.reps
    if min(a.reps, a.b_reps, a.rows, a.batch, a.seq, a.iters, a.cores) < 1 or a.warmup < 0:
        ap.error("sizes must be positive")
    a.mcinfer = a.mcinfer.resolve()
    if "mcinfer" in a.systems and not os.access(a.mcinfer, os.X_OK):
        sys.exit(f"compare: no mcinfer binary at {a.mcinfer} (build it: ninja -C build)")
    if a.sweep:
        ks = {int(x) for x in a.sweep.split(",") if x.strip()}
    elif a.quick:
        ks = set()
    elif a.cores <= 8:
        ks = set(range(1, a.cores + 1))
    else:
        ks = {2 ** i for i in range(1, a.cores.bit_length()) if 2 ** i < a.cores}
    a.ks = sorted({1, a.cores} | {k for k in ks if 1 <= k <= a.cores})
    command = shlex.join(["bench/compare"] + sys.argv[1:])
    ctx = Ctx(a)
    t_start = time.monotonic()
    facts, vers = machine_facts(), versions(a.mcinfer)
    log(f"{facts['cpu']}, {a.cores} cores; models {a.models}, workloads {a.workloads}, systems {a.systems}, "
        f"reps {a.reps} (b: {a.b_reps}), sweep {a.ks}")

    # ---- models, conversions, inputs (not timed)
    testset = ensure_testset(a.rows) if "b" in a.workloads else None
    for name in a.models:
        d = ensure_model(name).resolve()
        art = (WORK / "compare" / name).resolve()
        has_tok = (d / "tokenizer.json").is_file()
        m = {"name": name, "dir": d, "art": art, "tokenizer": has_tok, "max_len": a.max_len or model_max_len(d)}
        peers = [s for s in a.systems if s != "mcinfer"]
        cmd = [sys.executable, str(PEERS), "prepare", "--model-dir", str(d), "--art", str(art),
               "--systems", ",".join(peers or ["torch"])]
        if "a" in a.workloads:
            cmd += ["--batch", str(a.batch), "--seq", str(a.seq)]
        log(f"preparing {name} (conversions are cached in {rel(art)})")
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"compare: preparing {name} failed:\n{res.stderr[-3000:]}")
        info = last_json(res.stdout)
        m["kind"] = info.get("kind")
        inspect = json.loads(sh([str(a.mcinfer), "inspect", str(d), "--json"]) or "{}")
        m["act_per_1000"] = inspect.get("activation_bytes_per_1000_tokens")
        if "a" in a.workloads and "mcinfer" in a.systems:
            m["guard"] = mcinfer_guard(ctx, m)
            if "error" in m["guard"]:
                log(f"{name}: mcinfer's correctness run failed: {m['guard']['error']}")
        if "b" in a.workloads:
            if not has_tok:
                log(f"{name}: no tokenizer, so no workload (b) (pre-tokenised workload (a) only)")
            else:
                m["testset"] = testset.resolve()
                m["rows"] = count_rows(testset)
        ctx.models[name] = m
    log(f"prepared in {time.monotonic() - t_start:.0f} s")

    # ---- measurements, interleaved
    results = {}
    timings = {}
    for name, m in ctx.models.items():
        results[name] = {}
        warm_page_cache([m["dir"], m["art"]] + ([m["testset"]] if m.get("testset") else []))
        for w in a.workloads:
            if w == "b" and not m.get("testset"):
                continue
            entries = [(s, k) for s in a.systems for k in (a.ks if w == "a" else [a.cores])]
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
                    if "error" in r:
                        log(f"{name} ({w}) rep {rep} {system} k={k}: FAILED ({dt_:.1f} s): {r['error'][-300:]}")
                    elif w == "a":
                        log(f"{name} (a) rep {rep} {system} k={k}: {r['seq_per_s']:.2f} seq/s, "
                            f"RSS {mib(r['rss']):.0f} MiB, diff {fmt(r.get('diff'), '.1e')} ({dt_:.1f} s)")
                    else:
                        log(f"{name} (b) rep {rep} {system}: {r['rows_per_s']:.1f} rows/s, wall {r['wall']:.2f} s, "
                            f"RSS {mib(r['rss']):.0f} MiB")
            results[name][w] = (summarise_a if w == "a" else summarise_b)(ctx, m, runs)

    term, md_tables = tables(ctx, results)
    print("\n".join(term))
    total = time.monotonic() - t_start
    print(f"\ntotal {total:.0f} s; time per system (s, all its runs): " +
          ", ".join(f"{k} {sum(v):.0f}" for k, v in timings.items()))

    date = dt.datetime.now(dt.timezone.utc)
    # next to the RESULTS file, which links it by name; a partial run's plot says which models
    tag = "" if a.models == list(MODELS) else "_" + "-".join(a.models)
    png = (a.results.parent / f"compare_{date:%Y-%m-%d}{tag}.png") if not a.no_results else WORK / "compare" / "plot.png"
    has_plot = plot(ctx, results, png)
    if has_plot:
        print(f"plot: {rel(png)}")
    flagged = [f"{n}/{s}" for n, per in results.items()
               for (s, k), v in per.get("a", {}).get("systems", {}).items() if v["diff"] is not None and v["diff"] > TOLERANCE]
    if flagged:
        print(f"\nCORRECTNESS FLAG (max abs diff > {TOLERANCE} vs PyTorch): {', '.join(sorted(set(flagged)))}")
    if a.no_results:
        return 1 if flagged else 0

    # ---- RESULTS.md
    v = vers
    # One section per scope (workloads x models), so that a run split in parts keeps every part.
    scope = f"workload{'s' if len(a.workloads) > 1 else ''} {', '.join(a.workloads)} on {', '.join(a.models)}"
    sec = [f"## compare: {scope} — {date:%Y-%m-%d %H:%M} UTC", "",
           "mcinfer vs PyTorch, ONNX Runtime, OpenVINO and CTranslate2 (bench/compare.py).", "",
           f"Command: `{command}` (from the repository root; {total / 60:.0f} min)", "",
           f"- Machine: {facts['cpu']}; {facts['physical_cores']} physical cores, {facts['logical_cpus']} logical CPUs "
           f"({facts['threads_per_core']} thread(s)/core), L3 {facts['l3']}; {facts['memory_gib']} GiB memory; "
           f"Linux {facts['kernel']}{', ' + facts['hypervisor'] + ' guest' if facts['hypervisor'] else ''}; "
           f"all cores = {a.cores}",
           f"- Versions: mcinfer `{v['mcinfer']}` (git {v['git']}); Python {v['python']}; "
           + ", ".join(f"{p} {v[p]}" for p in PACKAGES),
           "- Models: " + "; ".join(f"{n} = {MODELS[n]['about']} (`{rel(ctx.models[n]['dir'])}`)" for n in ctx.models),
           f"- (a): {a.batch} × {a.seq} random token ids (the same for every peer; mcinfer bench draws its own), "
           f"{a.warmup} warm-up and {a.iters} timed batches per thread/process/replica (k × {a.iters} batches at k), "
           f"throughput measured inside each process; k = {', '.join(map(str, a.ks))}. Outputs of the batch vs "
           f"PyTorch eager (classifier logits; MiniLM: mean-pooled last hidden state); mcinfer's through "
           f"`mcinfer run` on the same ids as pre-tokenised JSONL.",
           f"- (b): test set from bench/gen_testset.py ({a.rows} rows); wall time from process start to output file "
           f"in place, model load and tokenisation included; outputs (probabilities / embeddings) vs mcinfer's. "
           f"Peers use HF tokenizers with truncation at the model's length, sort by length, and batch up to "
           f"{a.peer_batch_tokens} padded tokens; openvino and ct2 keep several batches in flight.",
           f"- {', '.join(f'{n} repetition(s) of ({w})' for w, n in (('a', a.reps), ('b', a.b_reps)) if w in a.workloads)}, systems interleaved with the order rotated each repetition; medians. "
           f"Peak RSS: the child's own peak (/usr/bin/time) or, for process trees, the sampled sum over the tree "
           f"(shared library pages counted once per process), the max over repetitions.",
           "- Ratios are mcinfer ÷ system: above 1 favours mcinfer."]
    if a.quick:
        sec.append("- **--quick: smoke-test sizes (one tiny timed batch); these numbers are not a measurement.**")
    sec += md_tables
    if has_plot:
        sec += ["", f"![throughput vs threads]({png.name})"]
    write_results(a.results, sec, scope)
    print(f"\nwrote the `## compare:` section of {rel(a.results)}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
