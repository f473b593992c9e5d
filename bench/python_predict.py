#!/usr/bin/env python3
"""Issue 34's `predict` floor: `mcinfer.Model.predict` on a bert-base classifier against the
Python pipelines a user writes with optimum, on the same machine in one run, repetitions
interleaved:

- mcinfer: `Model(dir, precision=P).predict(texts)` for P = fp32 and bf16 (what "auto" resolves to
  is read back and reported).
- optimum-ORT (optimum-onnx): `ORTModelForSequenceClassification` exported once by optimum, then
  optimized by `ORTOptimizer` (AutoOptimizationConfig --ort-level, O3 by default: the highest level
  for CPU, O4 being fp16 for GPUs), one session with intra_op_num_threads = the cores.
- optimum-intel OpenVINO: `OVModelForSequenceClassification` exported once by optimum-intel,
  compiled with ov_config {"PERFORMANCE_HINT": --ov-hint}, at OpenVINO's default inference
  precision (bf16 on CPUs with native bf16, read back from the compiled model) and with
  INFERENCE_PRECISION_HINT=f32 forced.

Each peer runs two ways: `pipeline` is transformers' `pipeline("text-classification",
model=..., tokenizer=..., top_k=None, batch_size=B, truncation=True, max_length=512)` in the rows'
own order, its list of dicts turned into a numpy [N, labels] array (optimum's documented usage);
`loop` is the hand loop of a performance-minded user: the fast tokenizer over all rows at once
(no padding), rows sorted by token count, batches of B rows padded to their longest row in numpy,
`model(**inputs).logits` (numpy in, numpy out), softmax in numpy. OpenVINO also has `async`
(optional): the same sorted batches through `openvino.AsyncInferQueue` on the compiled model
that optimum-intel holds, as OpenVINO's documentation asks for the THROUGHPUT hint.

The systems themselves are in bench/predict_peers.py (one process per measurement).

Timed: from "texts in a Python list, model loaded (and warmed up on 16 rows)" to "probabilities as
numpy [N, labels]". Each system runs in a process of its own, in its own interpreter (optimum-onnx
and optimum-intel need incompatible optimum/transformers releases):

    .venv/bin/python bench/python_predict.py [--reps 3] [--rows N] [--results bench/RESULTS.md]
        [--mcinfer-python build/python/venv-test-3.12/bin/python]
        [--ort-python .venv-optimum-ort/bin/python] [--ov-python .venv-optimum-ov/bin/python]

The peers' venvs: bench/requirements-optimum-ort.txt and bench/requirements-optimum-ov.txt (their
first lines say how to create them); mcinfer's is one with the wheel installed
(scripts/test_python.sh 3.12). The exports are cached in bench/work/optimum/ (redone when the
checkpoint changes). Prints a markdown section; --results appends it to that file. Outputs are
compared with mcinfer fp32's (or, without mcinfer, with the first fp32 system's): a system off by
more than 1e-2 (fp32) or 5e-2 (bf16) in any probability fails the run (exit 1, nothing appended).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from predict_peers import MAX_LENGTH, REPO, WARMUP_ROWS, Spec, cores, parse_system

PEERS = Path(__file__).resolve().parent / "predict_peers.py"
TOLERANCE = {"fp32": 1e-2, "bf16": 5e-2}


def measure(cmd: list[str]) -> dict[str, Any]:
    """The JSON a child process prints (its last line)."""
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


def cpu_facts() -> tuple[str, str]:
    """lscpu's model name and the flags that matter here (avx512*, amx*, *vnni*, *bf16*)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model, flags, family = "?", [], ""
    for line in out.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "Model name":
            model = value.strip()
        elif key == "Flags":
            flags = [
                f
                for f in value.split()
                if f.startswith(("avx512", "amx")) or "vnni" in f or "bf16" in f
            ]
        elif key in ("CPU family", "Model"):
            family += f"{key.lower()} {value.strip()}, "
    amx = "AMX" if any(f.startswith("amx") for f in flags) else "no AMX"
    return f"{model} ({family}{cores()} cores, {amx})", " ".join(flags) or "none"


def git_commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
        ).stdout.strip()

    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rows", type=int, default=0, help="the first N rows of the test set (0: all)")
    ap.add_argument("--model", default=str(REPO / "bench/work/models/bert-base-cls"))
    ap.add_argument("--testset", default=str(REPO / "bench/work/testset.csv"))
    ap.add_argument(
        "--mcinfer-python", default=str(REPO / "build/python/venv-test-3.12/bin/python")
    )
    ap.add_argument("--ort-python", default=str(REPO / ".venv-optimum-ort/bin/python"))
    ap.add_argument("--ov-python", default=str(REPO / ".venv-optimum-ov/bin/python"))
    ap.add_argument(
        "--systems",
        help="comma-separated (default: mcinfer-fp32, mcinfer-bf16, ort-pipeline, ort-loop and "
        "ov-{default,f32}-HINT-{pipeline,loop} for --ov-hint)",
    )
    ap.add_argument("--ov-hint", choices=["tput", "lat"], default="lat")
    ap.add_argument("--ort-level", choices=["O1", "O2", "O3"], default="O3")
    ap.add_argument("--pipeline-batch", type=int, default=32, help="pipeline batch_size")
    ap.add_argument("--loop-batch", type=int, default=32, help="rows per batch of the hand loops")
    ap.add_argument("--results", type=Path, help="append the markdown section to this file")
    ap.add_argument("--note", default="", help="a line added under the section's facts")
    return ap.parse_args()


@dataclass
class Measured:
    """Every repetition's result and probabilities per system, and the run's circumstances."""

    specs: list[Spec]
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    outputs: dict[str, list[Any]] = field(default_factory=dict)
    prepared: dict[str, Any] = field(default_factory=dict)
    auto: str | None = None
    load_before: str = ""
    load_after: str = ""
    minutes: float = 0.0

    def seconds(self, name: str) -> dict[str, float]:
        return spread([r["seconds"] for r in self.runs[name]])


def measure_all(a: argparse.Namespace, specs: list[Spec], python: dict[str, str]) -> Measured:
    """Prepares the peers' models, then runs every system once per repetition, in a rotated
    (and every other time reversed) order, each in a fresh process."""
    import numpy as np

    m = Measured(specs, {s.name: [] for s in specs}, {s.name: [] for s in specs})
    base = ["--model", a.model, "--testset", a.testset, "--ort-level", a.ort_level]
    for family in ("ort", "ov"):
        if any(s.family == family for s in specs):
            m.prepared[family] = measure([python[family], str(PEERS), f"prepare-{family}", *base])
            log(f"{family} model: {m.prepared[family]}")
    if any(s.family == "mcinfer" for s in specs):
        m.auto = measure([python["mcinfer"], str(PEERS), "mcinfer-auto", *base])["precision"]
    m.load_before = load_average()
    began = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            order = specs[rep % len(specs) :] + specs[: rep % len(specs)]
            for spec in order[::-1] if rep % 2 else order:
                out = str(Path(tmp) / f"{spec.name}.npy")
                batch = a.loop_batch if spec.mode in ("loop", "async") else a.pipeline_batch
                cmd = [python[spec.family], str(PEERS), spec.name, *base, "--out", out]
                cmd += ["--batch-size", str(batch), "--rows", str(a.rows)]
                data = measure(cmd)
                m.runs[spec.name].append(data)
                m.outputs[spec.name].append(np.load(out))
                log(f"rep {rep + 1}/{a.reps} {spec.name}: {data['seconds']:.2f} s")
    m.load_after = load_average()
    m.minutes = (time.time() - began) / 60
    return m


def compare(m: Measured) -> tuple[str, dict[str, tuple[float, float]], list[str]]:
    """Every system's outputs against mcinfer fp32's (or the first fp32 system's): the reference,
    per system (max |Δp|, argmax agreement), and the systems beyond TOLERANCE."""
    import numpy as np

    fp32 = [s.name for s in m.specs if m.runs[s.name][0]["precision"] == "fp32"]
    ref_name = "mcinfer-fp32" if "mcinfer-fp32" in m.runs else (fp32 or [m.specs[0].name])[0]
    ref = m.outputs[ref_name][0]
    diffs: dict[str, tuple[float, float]] = {}
    failures = []
    for s in m.specs:
        worst = max(float(np.abs(o - ref).max()) for o in m.outputs[s.name])
        agree = min(float((o.argmax(1) == ref.argmax(1)).mean()) for o in m.outputs[s.name])
        diffs[s.name] = (worst, agree)
        limit = TOLERANCE.get(m.runs[s.name][0]["precision"], TOLERANCE["bf16"])
        if worst > limit:
            failures.append(f"{s.name}: max |Δp| {worst:.2e} > {limit:g}")
    return ref_name, diffs, failures


def facts_lines(a: argparse.Namespace, m: Measured, ref_name: str) -> list[str]:
    """The section's title, command and the circumstances of the run."""
    rows = m.runs[m.specs[0].name][0]["rows"]
    cpu, flags = cpu_facts()
    interpreter = os.path.relpath(sys.executable, REPO)
    command = shlex.join([interpreter, os.path.relpath(__file__, REPO), *sys.argv[1:]])
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        (
            "## Python `predict` (issue 34): mcinfer against optimum-ORT and optimum-intel "
            f"OpenVINO pipelines, bert-base-cls — {stamp}"
        ),
        "",
        (
            f"Command: `{command}` (from the repository root, git {git_commit()}; "
            f"{m.minutes:.0f} min)"
        ),
        "",
        f"- CPU: {cpu}; flags: {flags}",
        (
            f"- Load average at the start {m.load_before}, at the end {m.load_after}, on {cores()} "
            "logical CPUs"
        ),
        (
            f"- Workload: {rows:,} rows of `{os.path.relpath(a.testset, REPO)}`, max length "
            f"{MAX_LENGTH}, model `{os.path.relpath(a.model, REPO)}` (random weights, 2 labels); "
            f"timed from texts in a Python list with the model loaded and warmed up on "
            f"{WARMUP_ROWS} rows to probabilities as numpy [N, 2]; each system in its own process; "
            f"{a.reps} repetitions, systems in a rotated order each repetition; HF_HUB_OFFLINE=1"
        ),
    ]
    if m.auto is not None:
        lines.append(f'- mcinfer precision="auto" resolves to {m.auto} on this CPU')
    if "ort" in m.prepared:
        ops = ", ".join(f"{k} {v}" for k, v in m.prepared["ort"]["ops"].items())
        lines.append(
            "- optimum-ORT: ORTModelForSequenceClassification.from_pretrained(dir, export=True), "
            f"ORTOptimizer with AutoOptimizationConfig.{a.ort_level}(); graph ops: {ops}"
        )
    if "ov" in m.prepared:
        w = ", ".join(f"{k} {v}" for k, v in m.prepared["ov"]["matrix_constants_by_type"].items())
        lines.append(
            "- optimum-intel: OVModelForSequenceClassification.from_pretrained(dir, export=True), "
            f"2-D weight constants by type: {w}"
        )
    seen: dict[str, str] = {}
    for s in m.specs:
        v = m.runs[s.name][0]["versions"]
        seen.setdefault(s.family, ", ".join(f"{k} {x}" for k, x in v.items()))
    lines.append("- Versions: " + "; ".join(f"{fam}: {v}" for fam, v in seen.items()))
    lines.append(
        f'- pipeline: transformers `pipeline("text-classification", model=..., tokenizer=..., '
        f"top_k=None, batch_size={a.pipeline_batch}, truncation=True, max_length={MAX_LENGTH})` "
        f"on the rows in their order, output dicts to numpy; loop: the fast tokenizer on all "
        f"rows, rows sorted by length, {a.loop_batch} rows per batch padded in numpy, "
        "`model(**inputs).logits`, numpy softmax"
    )
    lines.append(f"- Outputs compared with {ref_name}'s: max |Δp| over all rows and repetitions")
    if a.note:
        lines.append(f"- {a.note}")
    return lines


def mcinfer_at(m: Measured, precision: str) -> str | None:
    name = f"mcinfer-{precision}"
    return name if name in m.runs else None


def table_lines(m: Measured, ref_name: str, diffs: dict[str, tuple[float, float]]) -> list[str]:
    rows = m.runs[m.specs[0].name][0]["rows"]
    lines = [
        (
            "| system | precision (read back) | median s | min–max s | rows/s | system ÷ mcinfer (same "
            f"precision) | max \\|Δp\\| vs {ref_name} | argmax same | peak RSS | setting |"
        ),
        "|---|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for s in m.specs:
        r0 = m.runs[s.name][0]
        secs = m.seconds(s.name)
        match = mcinfer_at(m, r0["precision"])
        ratio = f"{secs['median'] / m.seconds(match)['median']:.2f}" if match else "—"
        rss = max(r["peak_rss_mib"] for r in m.runs[s.name])
        extra = ""
        if "stages" in r0:
            st = {
                k: statistics.median(r["stages"][k] for r in m.runs[s.name]) for k in r0["stages"]
            }
            extra = (
                f"; stages (median s): tokenize {st['tokenize_s']:.1f}, pad "
                f"{st['pad_s']:.1f}, inference+softmax {st['infer_s']:.1f}"
            )
        lines.append(
            f"| {s.name} | {r0['precision']} | {secs['median']:.1f} | "
            f"{secs['min']:.1f}–{secs['max']:.1f} | {rows / secs['median']:.1f} | {ratio} | "
            f"{diffs[s.name][0]:.1e} | {100 * diffs[s.name][1]:.2f}% | {rss:.0f} MiB | "
            f"{r0['setting']}{extra} |"
        )
    return lines


def floor_lines(m: Measured) -> list[str]:
    """The floor: mcinfer's fastest against each peer family's fastest."""
    mc = [s.name for s in m.specs if s.family == "mcinfer"]
    if not mc:
        return []
    best_mc = min(mc, key=lambda n: m.seconds(n)["median"])
    lines = ["Floor (mcinfer `predict` ≥ 1.0× the peers' best):", ""]
    for fam, label in (("ort", "optimum-ORT"), ("ov", "optimum-intel OpenVINO")):
        peers = [s.name for s in m.specs if s.family == fam]
        if not peers:
            continue
        best = min(peers, key=lambda n: m.seconds(n)["median"])
        peer_s, mc_s = m.seconds(best)["median"], m.seconds(best_mc)["median"]
        verdict = "met" if peer_s >= mc_s else "**missed**"
        lines.append(
            f"- {label}: fastest {best} ({m.runs[best][0]['precision']}) {peer_s:.1f} s; "
            f"mcinfer's fastest {best_mc} {mc_s:.1f} s: {peer_s / mc_s:.2f}× ({verdict})"
        )
        same = mcinfer_at(m, m.runs[best][0]["precision"])
        if same and same != best_mc:
            r = peer_s / m.seconds(same)["median"]
            lines.append(f"  - at the same precision ({same}): {r:.2f}×")
    return [*lines, ""]


def log(message: str) -> None:
    print(f"[python_predict] {message}", file=sys.stderr, flush=True)


def main() -> int:
    a = parse_args()
    if a.systems:
        names = a.systems.split(",")
    else:
        names = ["mcinfer-fp32", "mcinfer-bf16", "ort-pipeline", "ort-loop"]
        names += [
            f"ov-{p}-{a.ov_hint}-{m}" for p in ("default", "f32") for m in ("pipeline", "loop")
        ]
    specs = [parse_system(n) for n in names]
    python = {"mcinfer": a.mcinfer_python, "ort": a.ort_python, "ov": a.ov_python}
    missing = sorted({s.family for s in specs if not Path(python[s.family]).is_file()})
    if missing:
        raise SystemExit(f"no interpreter for {missing}: {[python[f] for f in missing]}")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"

    m = measure_all(a, specs, python)
    ref_name, diffs, failures = compare(m)
    lines = [
        *facts_lines(a, m, ref_name),
        "",
        *table_lines(m, ref_name, diffs),
        "",
        *floor_lines(m),
    ]
    if failures:
        lines += ["**Outputs disagree**: " + "; ".join(failures), ""]
    section = "\n".join(lines)
    print(section)
    print(json.dumps({"runs": m.runs}, indent=1), file=sys.stderr)
    if failures:
        log("outputs disagree, nothing appended: " + "; ".join(failures))
        return 1
    if a.results:
        with a.results.open("a", encoding="utf-8") as f:
            f.write("\n" + section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
