#!/usr/bin/env python3
"""Two mcinfer binaries side by side on the (a) workload of bench/compare: `mcinfer bench MODEL
--batch B --seq L --replicas K --precision P --json`, the same command compare (a) times, for each
model and precision, the two binaries run back to back with the order swapped every repetition.
Each repetition gives a ratio new ÷ old of mcinfer's own seq/s (the timed batches only: loading
and packing are not in it); the verdict is compare_report's: PASS when the lowest ratio clears the
target, FAIL when the highest misses it, else "within noise", and no verdict under 5 repetitions.

Used for issue 31's floor: the redesign (one encoder description, one CPU layer loop) within 3% of
the binary before it, in fp32, bf16 and int8, on bert-base and MiniLM.

    bench/ab_binaries.py --old OLD/build/tools/mcinfer/mcinfer --new build/tools/mcinfer/mcinfer \\
        --models bert-base,minilm --precisions fp32,bf16,int8 --reps 5
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
import compare_report as report  # noqa: E402
from compare import MODELS  # noqa: E402
from seed_recipe import physical_cores  # noqa: E402


def seq_per_s(binary: Path, model: Path, precision: str, a: argparse.Namespace) -> float:
    cmd = [str(binary), "bench", str(model), "--batch", str(a.batch), "--seq", str(a.seq), "--threads", "1",
           "--replicas", str(a.replicas), "--warmup", str(a.warmup), "--iters", str(a.iters), "--precision",
           precision, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(json.loads(out)["seq_per_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the baseline binary")
    ap.add_argument("--new", type=Path, default=REPO / "build/tools/mcinfer/mcinfer")
    ap.add_argument("--models", default="bert-base,minilm", help=f"of {', '.join(MODELS)}")
    ap.add_argument("--precisions", default="fp32,bf16,int8")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--replicas", type=int, default=physical_cores())
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--target", type=float, default=0.97)
    a = ap.parse_args()
    failed = False
    for name in a.models.split(","):
        model = MODELS[name]["dir"]
        if not model.exists():
            print(f"{name}: {model} is missing (bench/compare makes it)", file=sys.stderr)
            return 2
        for precision in a.precisions.split(","):
            old, new = [], []
            for rep in range(a.reps):
                order = [("old", a.old), ("new", a.new)] if rep % 2 == 0 else [("new", a.new), ("old", a.old)]
                for label, binary in order:
                    (old if label == "old" else new).append(seq_per_s(binary, model, precision, a))
            ratios = [n / o for n, o in zip(new, old)]
            c = report.check(f"{name} {precision}, {a.replicas} replica(s): new ÷ old", statistics.median(ratios),
                             a.target, f"new {statistics.median(new):.2f}, old {statistics.median(old):.2f} seq/s "
                             f"(medians)", spread=report.ratio_spread(new, old))
            verdict = "within noise" if c["noise"] else "PASS" if c["ok"] else "FAIL" if c["ok"] is False else "—"
            failed |= c["ok"] is False
            print(f"| {c['name']} | {c['value']:.3f} | {verdict} | {c['detail']} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
