#!/usr/bin/env python3
"""Which instruction set each of mcinfer's oneDNN primitives really runs on, from oneDNN's own
verbose log, and the CPU flags that decide what it may run on.

Runs `ONEDNN_VERBOSE=1 mcinfer bench TARGET --batch 4 --seq 64 --iters 1 --precision P` for each
target (a model directory or `--shape NAME`) and counts the executed primitives by kind,
implementation and source data type: on a CPU with AMX every bf16 matmul should report an
`..._amx_...` implementation (e.g. `brg:avx512_core_amx_bf16`). The log covers the warm-up and
timed batches and `mcinfer bench`'s GEMM-alone pass over the model's GEMM shapes (oneDNN's, or
none where the device line says the GEMMs are mcinfer's own AVX2 kernels).

    bench/onednn_isa.py --shape bert-base models/all-MiniLM-L6-v2
    bench/onednn_isa.py --precision fp32 --shape bert-base

bench/compare.py imports this to put the table and the CPU flags into its RESULTS section.
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The flags that decide mcinfer's bf16 path and the targets, in the order they are shown.
RELEVANT_FLAGS = ["avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8", "avx_vnni"]
COMPUTE = {"matmul", "inner_product", "convolution"}
# mcinfer bf16 ÷ mcinfer fp32 in workload (a), from issue 12: AMX tiles do 16x the work of one
# AVX-512 FMA per instruction, avx512_bf16 dot products only 2x.
BF16_SPEEDUP_TARGET = {"amx_bf16": 3.0, "avx512_bf16": 1.7}


def cpu_flags() -> set:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def bf16_class(flags: set) -> tuple:
    """(flag that decides the bf16 speed-up target, the target) or (None, None) without native bf16."""
    for flag in ("amx_bf16", "avx512_bf16"):
        if flag in flags:
            return flag, BF16_SPEEDUP_TARGET[flag]
    return None, None


def flags_line(flags: set) -> str:
    return ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in RELEVANT_FLAGS)


def parse_verbose(text: str) -> dict:
    """{(primitive, implementation, source type): [executions, {problem shapes}]} from oneDNN's
    verbose lines; both the 2.x layout (`onednn_verbose,exec,cpu,...`) and the 3.x one
    (`onednn_verbose,primitive,exec,cpu,...`) are read."""
    table = {}
    for line in text.splitlines():
        if not line.startswith(("onednn_verbose", "dnnl_verbose")):
            continue
        f = line.split(",")
        try:
            i = next(j for j in range(1, len(f) - 1) if f[j] == "exec" and f[j + 1] == "cpu")
        except StopIteration:
            continue
        if len(f) < i + 8:
            continue
        primitive, impl, mds = f[i + 2], f[i + 3], f[i + 5]
        m = re.search(r"src[_:]([a-z0-9]+):", mds)
        src = m.group(1) if m else "?"
        problem = f[i + 8] if primitive in COMPUTE else ""
        entry = table.setdefault((primitive, impl, src), [0, set()])
        entry[0] += 1
        if problem:
            entry[1].add(problem)
    return table


def run_verbose(mcinfer: Path, target: list, precision: str, batch: int = 4, seq: int = 64) -> dict:
    """The primitive table of one `mcinfer bench` run; {"error": ...} when it fails."""
    cmd = [str(mcinfer), "bench"] + target + ["--batch", str(batch), "--seq", str(seq), "--iters", "1",
                                              "--precision", precision]
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        return {"cmd": cmd, "error": (res.stderr or res.stdout).strip()[-500:]}
    text = res.stdout + "\n" + res.stderr
    isa = next((l.split("isa:", 1)[1] for l in text.splitlines() if "info,cpu,isa:" in l), "?")
    return {"cmd": cmd, "table": parse_verbose(text), "isa": isa}


def amx_share(table: dict) -> tuple:
    """(executions of bf16 compute primitives on an AMX implementation, all bf16 compute executions)."""
    amx = total = 0
    for (primitive, impl, src), (n, _) in table.items():
        if primitive in COMPUTE and src == "bf16":
            total += n
            amx += n if "amx" in impl else 0
    return amx, total


def markdown(label: str, result: dict) -> list:
    cmd = "ONEDNN_VERBOSE=1 " + " ".join(os.path.relpath(c, REPO) if c.startswith(str(REPO)) else c
                                         for c in result["cmd"])
    if "error" in result:
        return [f"- {label}: `{cmd}` failed: `{result['error'][:300]}`"]
    amx, total = amx_share(result["table"])
    lines = [f"{label}: `{cmd}`; oneDNN's CPU ISA: {result['isa']}; bf16 compute primitives on AMX: "
             f"{amx} of {total} executions", "",
             "| primitive | implementation | source type | executions | problem shapes |", "|---|---|---|---:|---|"]
    for (primitive, impl, src), (n, shapes) in sorted(result["table"].items(), key=lambda kv: (kv[0][0], -kv[1][0])):
        shown = ", ".join(sorted(shapes)[:4]) + (f" (+{len(shapes) - 4})" if len(shapes) > 4 else "")
        lines.append(f"| {primitive} | `{impl}` | {src} | {n} | {shown} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path, help="model directories")
    ap.add_argument("--shape", action="append", default=[], help="a `mcinfer bench --shape` name (repeatable)")
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp32", "auto"])
    ap.add_argument("--mcinfer", type=Path, default=REPO / "build/tools/mcinfer/mcinfer")
    a = ap.parse_args()
    if not a.models and not a.shape:
        ap.error("give model directories and/or --shape NAME")
    flags = cpu_flags()
    flag, target = bf16_class(flags)
    print(f"CPU flags: {flags_line(flags)}")
    print(f"bf16 ÷ fp32 target in (a): {'≥ ' + str(target) + ' (' + flag + ')' if flag else 'none (no native bf16)'}\n")
    missing = 0
    targets = [(f"--shape {s}", ["--shape", s]) for s in a.shape] + [(str(m), [str(m)]) for m in a.models]
    for label, target_args in targets:
        result = run_verbose(a.mcinfer, target_args, a.precision)
        print("\n".join(markdown(label, result)) + "\n")
        if "error" in result:
            missing += 1
        elif "amx_bf16" in flags and a.precision != "fp32":
            amx, total = amx_share(result["table"])
            missing += amx < total or total == 0
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
