#!/usr/bin/env python3
"""Tokens per second on one core, mcinfer vs Hugging Face tokenizers, measured in one run.

For each tokenizer kind (WordPiece: MiniLM's real tokenizer.json; Unigram and byte-level BPE:
the trained fixtures) both sides encode every line of tests/fixtures/tokenizer/corpus.txt with
special tokens and no truncation:
  * mcinfer: bench/tokenizer_bench.cc (a C++ loop over Tokenizer::encode), one process per run;
  * HF: tokenizers.Tokenizer.from_file(...).encode_batch(lines) with TOKENIZERS_PARALLELISM=false
    and RAYON_NUM_THREADS=1.
Both are pinned to the same CPU; runs alternate between the two; medians are compared. Token
counts must match (the ids themselves are checked by the parity tests). Appends a section to
bench/RESULTS.md.

Usage: .venv-legacy/bin/python bench/tokenizer_compare.py [--bin build/src/tokenizer/tokenizer_bench]
                                                   [--repeat 7] [--cpu 0] [--no-write]
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests/fixtures/tokenizer/models"
CORPUS = ROOT / "tests/fixtures/tokenizer/corpus.txt"
KINDS = [("WordPiece", "minilm_json"), ("Unigram", "unigram_json"), ("byte-level BPE", "bpe_json")]


def lscpu_facts():
    try:
        out = subprocess.check_output(["lscpu"], text=True)
    except (OSError, subprocess.CalledProcessError):
        return []
    keep = ("Model name", "CPU(s)", "Thread(s) per core", "CPU max MHz", "L2 cache", "L3 cache")
    return [" ".join(line.split()) for line in out.splitlines() if line.split(":")[0].strip() in keep]


def ours(binary, model, cpu):
    cmd = ["taskset", "-c", str(cpu), str(binary), str(model), str(CORPUS), "--repeat", "1"]
    out = subprocess.check_output(cmd, text=True)
    r = json.loads(out)
    return r["tokens"], r["median_s"]


def hf(tok, lines):
    t0 = time.perf_counter()
    encodings = tok.encode_batch(lines)
    dt = time.perf_counter() - t0
    return sum(len(e.ids) for e in encodings), dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "build/src/tokenizer/tokenizer_bench"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--no-write", action="store_true", help="print only, do not append to RESULTS.md")
    args = ap.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    lines = [l.decode("utf-8") for l in CORPUS.read_bytes()[:-1].split(b"\n")]
    rows = []
    for kind, variant in KINDS:
        tok = Tokenizer.from_file(str(MODELS / variant / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        hf(tok, lines[:200])  # warm-up
        ours_s, hf_s = [], []
        ours_tokens = hf_tokens = 0
        for _ in range(args.repeat):
            ours_tokens, s = ours(args.bin, MODELS / variant, args.cpu)
            ours_s.append(s)
            hf_tokens, s = hf(tok, lines)
            hf_s.append(s)
        if ours_tokens != hf_tokens:
            sys.exit(f"{variant}: token counts differ (mcinfer {ours_tokens}, HF {hf_tokens})")
        o, h = statistics.median(ours_s), statistics.median(hf_s)
        rows.append((kind, variant, ours_tokens, ours_tokens / o, hf_tokens / h, h / o))
        print(f"{kind:15s} {variant:13s} tokens {ours_tokens:7d}  mcinfer {ours_tokens / o:12,.0f}/s  "
              f"HF {hf_tokens / h:10,.0f}/s  ratio {h / o:6.2f}x")
    if args.no_write:
        return
    cmd = " ".join(shlex.quote(a) for a in [".venv-legacy/bin/python", "bench/tokenizer_compare.py"] + sys.argv[1:])
    lines_out = [
        "",
        f"## Tokenizer throughput, one core ({datetime.date.today().isoformat()})",
        "",
        f"Command: `{cmd}` (from the repository root, after building `tokenizer_bench`).",
        "",
        f"Corpus: `tests/fixtures/tokenizer/corpus.txt`, {len(lines)} lines; special tokens included, no "
        f"truncation; both sides pinned to CPU {args.cpu}; median of {args.repeat} alternating runs "
        f"(mcinfer: a fresh process each run, so its BPE cache starts cold; HF: one tokenizer object, "
        f"warmed up).",
        f"Peer: HF tokenizers {tokenizers.__version__} `encode_batch`, TOKENIZERS_PARALLELISM=false, "
        f"RAYON_NUM_THREADS=1; Python {platform.python_version()}.",
        "",
        "Machine: " + "; ".join(lscpu_facts()),
        "",
        "| kind | tokenizer | tokens | mcinfer tokens/s | HF tokens/s | mcinfer / HF |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for kind, variant, n, o, h, ratio in rows:
        lines_out.append(f"| {kind} | {variant} | {n} | {o:,.0f} | {h:,.0f} | {ratio:.2f}x |")
    results = ROOT / "bench/RESULTS.md"
    if not results.exists():
        results.write_text("# Benchmark results\n\nEach section records its command, the machine and the peer "
                           "measured in the same run.\n")
    with open(results, "a") as f:
        f.write("\n".join(lines_out) + "\n")
    print(f"appended to {results}")


if __name__ == "__main__":
    main()
