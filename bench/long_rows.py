#!/usr/bin/env python3
"""Issue 33's two mcinfer-only floors on ModernBERT-base (random weights), in one run:

1. Cost growth: bf16 time per token of one 8,192-token row against 512-token rows,
   `mcinfer bench --shape modernbert-base --precision bf16` with one replica per core and one thread
   each, every replica running [1 x 8,192] or [16 x 512] (the same tokens per batch), repetitions
   interleaved; the ratio per repetition (floor: <= 2.2; ModernBERT-base's arithmetic gives about
   1.8 at equal efficiency, every layer global about 3.2).
2. Peak RSS of `mcinfer run` over 8,192-token rows (pre-tokenized JSONL: rows of 8,192 tokens among
   short ones) against weights + replicas x the memory plan's bound per replica, both read from the
   run's report (floor: peak <= that sum).

    bench/long_rows.py [--reps 5] [--model bench/work/models/modernbert-base-cls]

Prints one JSON object; the numbers go to bench/RESULTS.md by hand with the machine's facts.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MCINFER = REPO / "build/tools/mcinfer/mcinfer"


def bench(batch: int, seq: int, replicas: int) -> float:
    """Tokens per second of all replicas together."""
    out = subprocess.run(
        [str(MCINFER), "bench", "--shape", "modernbert-base", "--precision", "bf16", "--batch", str(batch),
         "--seq", str(seq), "--replicas", str(replicas), "--warmup", "1", "--iters", "2", "--json"],
        check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return float(result["seq_per_s"]) * seq


def cost_growth(reps: int, replicas: int) -> dict:
    ratios, long_rates, short_rates = [], [], []
    for _ in range(reps):
        long_rate = bench(1, 8192, replicas)
        short_rate = bench(16, 512, replicas)
        long_rates.append(long_rate)
        short_rates.append(short_rate)
        ratios.append(short_rate / long_rate)  # time per token, long over short
    return {"tokens_per_s_8192": long_rates, "tokens_per_s_512": short_rates, "ratio": ratios,
            "ratio_median": statistics.median(ratios), "floor": 2.2,
            "pass": all(r <= 2.2 for r in ratios)}


def write_rows(path: Path, long_rows: int, short_rows: int) -> None:
    rng = random.Random(33)
    rows = [8192] * long_rows + [rng.randint(8, 300) for _ in range(short_rows)]
    rng.shuffle(rows)
    with path.open("w") as out:
        for i, n in enumerate(rows):
            ids = [4002] + [rng.randint(10, 3990) for _ in range(n - 2)] + [4003]
            out.write(json.dumps({"id": f"r{i}", "input_ids": ids}) + "\n")


def peak_rss(model: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        rows = Path(tmp) / "rows.jsonl"
        write_rows(rows, 8, 200)
        out = Path(tmp) / "out.csv"
        report_path = Path(tmp) / "report.json"
        subprocess.run([str(MCINFER), "run", str(model), "--input", str(rows), "--output", str(out),
                        "--precision", "bf16", "--quiet", "--report", str(report_path)], check=True)
        report = json.loads(report_path.read_text())
    peak = int(report["peak_rss_bytes"])
    weights = int(report["weights_resident_bytes"])
    per_replica = int(report["planned_activation_bytes_per_replica"])
    replicas = int(report["replicas"])
    bound = weights + replicas * per_replica
    return {"peak_rss_bytes": peak, "weights_resident_bytes": weights, "replicas": replicas,
            "planned_activation_bytes_per_replica": per_replica, "bound_bytes": bound,
            "peak_over_bound": peak / bound, "wall_seconds": report["wall_seconds"],
            "precision_check": report["precision_check"], "pass": peak <= bound}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--model", type=Path, default=REPO / "bench/work/models/modernbert-base-cls")
    args = parser.parse_args()
    replicas = os.cpu_count() or 1
    result = {"cost_growth": cost_growth(args.reps, replicas), "replicas": replicas}
    if args.model.is_dir():
        result["peak_rss"] = peak_rss(args.model)
    print(json.dumps(result, indent=1))
    return 0 if all(v.get("pass", True) for v in result.values() if isinstance(v, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())
