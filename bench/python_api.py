#!/usr/bin/env python3
"""Issue 34's floors for the Python package, in one run, repetitions interleaved:

1. `mcinfer.Model.encode` on all-MiniLM-L6-v2 over the 20,000 long-tailed rows of
   bench/work/testset.csv (bench/gen_testset.py) against `mcinfer run` on the same rows (the CLI,
   wall time of the whole command) and against `SentenceTransformer.encode` at its defaults (fp32,
   batch_size 32, torch on every core). Each system runs in a process of its own; encode's time is
   the call (the model loaded before it, as in a notebook) and also load + call.
2. Peak RSS (ru_maxrss) of the encode process against the `mcinfer run` process; with
   `--compare-cli`, also against a second CLI binary's `run` (e.g. a build configured with
   -DMCINFER_ARROW=OFF, whose process does not map the Arrow libraries).

    .venv/bin/python bench/python_api.py [--reps 5] [--mcinfer-python build/python/venv-test-3.12/bin/python]
        [--compare-cli build-noarrow/tools/mcinfer/mcinfer]

The mcinfer Python is one with the wheel installed (scripts/test_python.sh 3.12 makes it); the
sentence-transformers side runs in this interpreter (tools/venv.sh). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MCINFER = REPO / "build/tools/mcinfer/mcinfer"


def read_texts(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return [row["text"] for row in csv.DictReader(f)]


def child(system: str, model: str, rows: str) -> None:
    """One measurement, printed as JSON: runs in its own process."""
    texts = read_texts(Path(rows))
    began = time.perf_counter()
    if system == "encode":
        import mcinfer

        m = mcinfer.Model(model)
        loaded = time.perf_counter()
        out = m.encode(texts)
        precision = m.precision
    else:
        import torch
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(model, device="cpu")
        loaded = time.perf_counter()
        out = st.encode(texts)
        precision = f"fp32, torch {torch.__version__}, {torch.get_num_threads()} threads"
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "call_s": done - loaded,
                "load_and_call_s": done - began,
                "rows": len(out),
                "precision": precision,
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def measure(cmd: list[str]) -> dict[str, Any]:
    """The JSON a child process prints."""
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def rss_of(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a command, from wait4."""
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(
            f"{cmd} failed: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
        )
    return wall, usage.ru_maxrss / 1024


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--model", default=str(REPO / "models/all-MiniLM-L6-v2"))
    ap.add_argument("--rows", default=str(REPO / "bench/work/testset.csv"))
    ap.add_argument(
        "--mcinfer-python", default=str(REPO / "build/python/venv-test-3.12/bin/python")
    )
    ap.add_argument("--compare-cli", help="a second mcinfer binary whose run is measured too")
    ap.add_argument("--child", choices=["encode", "st"])
    args = ap.parse_args()
    if args.child:
        child(args.child, args.model, args.rows)
        return 0
    runs: dict[str, list[dict[str, float]]] = {"run": [], "encode": [], "st": []}
    clis = {"run": MCINFER}
    if args.compare_cli:
        clis["compare_cli_run"] = Path(args.compare_cli)
        runs["compare_cli_run"] = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            for name, cli in clis.items():
                wall, rss = rss_of(
                    [
                        str(cli),
                        "run",
                        args.model,
                        "--input",
                        args.rows,
                        "--output",
                        str(Path(tmp) / "out.csv"),
                        "--quiet",
                    ]
                )
                runs[name].append({"wall_s": wall, "peak_rss_mib": rss})
            for system, python in (("encode", args.mcinfer_python), ("st", sys.executable)):
                data = measure(
                    [
                        python,
                        __file__,
                        "--child",
                        system,
                        "--model",
                        args.model,
                        "--rows",
                        args.rows,
                    ]
                )
                runs[system].append(data)
    rows = len(read_texts(Path(args.rows)))
    n = args.reps
    result: dict[str, Any] = {
        "rows": rows,
        "reps": n,
        "run_wall_s": spread([r["wall_s"] for r in runs["run"]]),
        "encode_call_s": spread([r["call_s"] for r in runs["encode"]]),
        "encode_load_and_call_s": spread([r["load_and_call_s"] for r in runs["encode"]]),
        "st_call_s": spread([r["call_s"] for r in runs["st"]]),
        "encode_precision": runs["encode"][0]["precision"],
        "st": runs["st"][0]["precision"],
        # Speed ratios per repetition (higher: encode faster).
        "encode_vs_run": spread(
            [runs["run"][i]["wall_s"] / runs["encode"][i]["call_s"] for i in range(n)]
        ),
        "encode_with_load_vs_run": spread(
            [runs["run"][i]["wall_s"] / runs["encode"][i]["load_and_call_s"] for i in range(n)]
        ),
        "encode_vs_st": spread(
            [runs["st"][i]["call_s"] / runs["encode"][i]["call_s"] for i in range(n)]
        ),
        "peak_rss_mib": {
            "run": spread([r["peak_rss_mib"] for r in runs["run"]]),
            "encode": spread([r["peak_rss_mib"] for r in runs["encode"]]),
        },
        "encode_rss_vs_run": spread(
            [runs["encode"][i]["peak_rss_mib"] / runs["run"][i]["peak_rss_mib"] for i in range(n)]
        ),
    }
    if args.compare_cli:
        compare = runs["compare_cli_run"]
        result["compare_cli"] = args.compare_cli
        result["compare_cli_run_wall_s"] = spread([r["wall_s"] for r in compare])
        result["peak_rss_mib"]["compare_cli_run"] = spread([r["peak_rss_mib"] for r in compare])
        result["encode_rss_vs_compare_cli_run"] = spread(
            [runs["encode"][i]["peak_rss_mib"] / compare[i]["peak_rss_mib"] for i in range(n)]
        )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
