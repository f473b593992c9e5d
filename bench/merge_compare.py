#!/usr/bin/env python3
"""Benchmark (not a test): `mcinfer merge` against the seed's pandas step on the same files.

    .venv-legacy/bin/python bench/merge_compare.py [--rows 10000000] [--shards 8] [--cols 6] [--reps 3]
        [--mcinfer build/tools/mcinfer/mcinfer] [--work bench/work/merge] [--no-record]

Generates seed-style shards once (ids 0..N-1 split in order over the shards, the last shard
padded with 1% repeated ids as the seed's equal-size sharding does; values are float32
probabilities in shortest form, as `mcinfer run` writes them), then, alternating, times:
  ours:   mcinfer merge <dir> --output ours.csv
  pandas: pd.concat([pd.read_csv(f) for f in shards]).groupby("id").mean().to_csv(...)
each in a fresh child process, taking wall time and the child's peak RSS (/usr/bin/time). Reports
medians, checks the two outputs agree (same ids, values within 1e-12 relative) and writes a
section to bench/RESULTS.md.
"""
import argparse
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent

PANDAS_STEP = """
import glob, sys
import pandas as pd
files = sorted(glob.glob(sys.argv[1] + "/shard_*.csv"), key=lambda f: int(f.rsplit("_", 1)[1][:-4]))
pd.concat([pd.read_csv(f) for f in files]).groupby("id").mean().to_csv(sys.argv[2])
"""


def generate(work, rows, shards, cols, seed=1):
    stamp = work / "PARAMS"
    want = f"rows={rows} shards={shards} cols={cols} seed={seed}\n"
    if stamp.exists() and stamp.read_text() == want:
        return
    work.mkdir(parents=True, exist_ok=True)
    for f in work.glob("shard_*.csv"):
        f.unlink()
    rng = np.random.default_rng(seed)
    per = rows // shards
    dup = rows // 100
    ids = np.concatenate([np.arange(rows - dup), rng.choice(rows - dup, dup, replace=False)])
    header = "id," + ",".join(f"label_{i}" for i in range(cols)) + "\n"
    for s in range(shards):
        part = ids[s * per:(s + 1) * per] if s < shards - 1 else ids[s * per:]
        x = rng.random((len(part), cols), dtype=np.float32) + np.float32(0.01)
        x /= x.sum(axis=1, keepdims=True)
        # float32 in shortest round-trip form, as mcinfer run writes predictions
        strs = x.astype(str)
        with open(work / f"shard_{s}.csv", "w") as f:
            f.write(header)
            f.write("".join(",".join(row) + "\n"
                            for row in zip(part.astype(str).tolist(), *strs.T.tolist())))
        print(f"generated shard {s + 1}/{shards}", file=sys.stderr, flush=True)
    stamp.write_text(want)


def timed(cmd):
    """Runs cmd in a child; returns (seconds, peak RSS in MiB of that child).

    The RSS comes from /usr/bin/time, which forks a small process: ru_maxrss of a child
    forked from this (large, pandas-loaded) Python would count the parent's pages it held
    before exec."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit(f"failed: {shlex.join(cmd)}\n{proc.stderr}")
        kib = int(rss.read().split()[-1])
    return seconds, kib / 1024


def compare(ours, theirs):
    a = pd.read_csv(ours, dtype={"id": str}).sort_values("id").reset_index(drop=True)
    b = pd.read_csv(theirs, dtype={"id": str}).sort_values("id").reset_index(drop=True)
    if list(a.columns) != list(b.columns) or not a["id"].equals(b["id"]):
        return "DIFFERENT ids or columns"
    va, vb = a.drop(columns="id").to_numpy(), b.drop(columns="id").to_numpy()
    rel = np.max(np.abs(va - vb) / np.maximum(np.maximum(np.abs(va), np.abs(vb)), 1e-300))
    return f"same {len(a)} ids and columns; max relative difference {rel:.1e}"


def machine_facts():
    facts = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for key in ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket"):
            m = re.search(rf"^{re.escape(key)}:\s*(.+)$", out, re.M)
            if m:
                facts[key] = m.group(1).strip()
    except OSError:
        pass
    mem = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
    facts["Memory"] = f"{int(mem) // 1024 // 1024} GiB"
    return facts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--cols", type=int, default=6)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mcinfer", default=str(REPO / "build/tools/mcinfer/mcinfer"))
    ap.add_argument("--work", default=str(REPO / "bench/work/merge"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    work = Path(args.work)
    generate(work, args.rows, args.shards, args.cols)
    size = sum(f.stat().st_size for f in work.glob("shard_*.csv"))
    ours_out, pandas_out = work / "ours.csv", work / "pandas.csv"
    ours_cmd = [args.mcinfer, "merge", str(work), "--output", str(ours_out)]
    pandas_cmd = [sys.executable, "-c", PANDAS_STEP, str(work), str(pandas_out)]
    ours, theirs = [], []
    for rep in range(args.reps):
        ours.append(timed(ours_cmd))
        theirs.append(timed(pandas_cmd))
        print(f"rep {rep + 1}: mcinfer {ours[-1][0]:.2f} s {ours[-1][1]:.0f} MiB; "
              f"pandas {theirs[-1][0]:.2f} s {theirs[-1][1]:.0f} MiB", file=sys.stderr, flush=True)
    agree = compare(ours_out, pandas_out)
    t_ours = statistics.median(t for t, _ in ours)
    t_pd = statistics.median(t for t, _ in theirs)
    rss_ours = max(r for _, r in ours)
    rss_pd = max(r for _, r in theirs)
    version = subprocess.run([args.mcinfer, "--version"], capture_output=True, text=True).stdout.strip()
    facts = machine_facts()
    command = "bench/merge_compare.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    section = f"""## merge: `mcinfer merge` vs pandas concat + groupby mean

- Command: `.venv-legacy/bin/python {command}` (run from the repo root; {time.strftime('%Y-%m-%d')})
- Data: {args.rows:,} rows x {args.cols} value columns in {args.shards} CSV shards ({size / 2**20:.0f} MiB), seed-style: ids in order, last shard padded with 1% repeated ids
- Machine: {facts.get('Model name', '?')}, {facts.get('CPU(s)', '?')} logical CPUs ({facts.get('Core(s) per socket', '?')} cores/socket, {facts.get('Thread(s) per core', '?')} threads/core), {facts.get('Memory', '?')} RAM; shared with other work during the run
- Versions: {version}; Python {platform.python_version()}, pandas {pd.__version__}, numpy {np.__version__}
- Peer, same files, same run, alternating: `pd.concat([pd.read_csv(f) for f in shards]).groupby("id").mean().to_csv(out)`
- Reps: {args.reps}; median wall time; peak RSS of each child process (`/usr/bin/time -f %M`, the max over reps)

| | wall time (median) | peak RSS |
|---|---|---|
| mcinfer merge | {t_ours:.2f} s | {rss_ours:.0f} MiB |
| pandas | {t_pd:.2f} s | {rss_pd:.0f} MiB |
| ratio (pandas / mcinfer) | **{t_pd / t_ours:.1f}x faster** | {rss_pd / rss_ours:.1f}x less memory |

All times (s): mcinfer {', '.join(f'{t:.2f}' for t, _ in ours)}; pandas {', '.join(f'{t:.2f}' for t, _ in theirs)}.
Outputs compared (sorted by id): {agree}.
mcinfer merge also fsyncs its output before renaming it into place; pandas does not.
"""
    print(section)
    if not args.no_record:
        results = REPO / "bench/RESULTS.md"
        text = results.read_text() if results.exists() else "# Benchmark results\n"
        start = text.find("## merge: ")
        if start >= 0:
            end = text.find("\n## ", start + 1)
            text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
        else:
            text = text.rstrip("\n") + "\n\n" + section
        results.write_text(text)
        print(f"recorded in {results}", file=sys.stderr)


if __name__ == "__main__":
    main()
