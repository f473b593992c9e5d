#!/usr/bin/env python3
"""Benchmark driver for `mcinfer run` against its peer, the seed recipe, in one invocation.

On the same machine and test set, interleaved over --reps repetitions (median of each):
  dynamic       mcinfer run MODEL --schedule dynamic --max-len 224
  static        mcinfer run MODEL --schedule static --batch-size 16 --max-len 224
  seed          bench/seed_recipe.py (one process per physical core, batches of 16 padded to 224)
  seed-sorted   bench/seed_recipe.py --sorted
  dynamic-1     mcinfer run MODEL --schedule dynamic --max-len 224 --replicas 1
Wall time is measured here, around each process, the same way for every system. mcinfer's
--report gives replicas and real/padded tokens; the seed recipe prints its own JSON line.

Prints a table and appends a section to bench/RESULTS.md (the exact command, machine facts,
versions, the table with ratios, the checks and the output agreement with the seed recipe).

    .venv-legacy/bin/python bench/run_benchmark.py                      # full size: 20,000 rows, 3 reps
    .venv-legacy/bin/python bench/run_benchmark.py --rows 300 --reps 1 --no-results   # quick look
    .venv-legacy/bin/python bench/run_benchmark.py --rows 300 --skip-seed            # mcinfer only
"""

import argparse
import csv
import datetime as dt
import hashlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))
from seed_recipe import physical_cores  # noqa: E402  (light: no torch at import)
from bench_common import git_revision, sh  # noqa: E402

SYSTEMS = ["dynamic", "static", "seed", "seed-sorted", "dynamic-1"]
LABELS = {
    "dynamic": "mcinfer --schedule dynamic",
    "static": "mcinfer --schedule static --batch-size 16",
    "seed": "seed recipe (PyTorch)",
    "seed-sorted": "seed recipe --sorted (PyTorch)",
    "dynamic-1": "mcinfer dynamic --replicas 1",
}


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def machine_facts() -> dict:
    model = ""
    for line in sh(["lscpu"]).splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    mem_kib = 0
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {"cpu": model or platform.processor(), "physical_cores": physical_cores(),
            "logical_cpus": len(os.sched_getaffinity(0)), "memory_gib": round(mem_kib / 2**20, 1),
            "kernel": platform.release()}


def versions(mcinfer: Path) -> dict:
    out = {"python": platform.python_version()}
    for mod in ["torch", "transformers", "tokenizers", "pandas"]:
        out[mod] = sh([sys.executable, "-c", f"import {mod}; print({mod}.__version__)"]) or "?"
    out["mcinfer"] = sh([str(mcinfer), "--version"]) or "?"
    out["git"] = git_revision(REPO)
    return out


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def length_quantiles(model: Path, data: Path) -> dict:
    """Token lengths of the test set (special tokens included, untruncated) with the model's tokenizer."""
    code = (
        "import csv,json,sys\n"
        "from tokenizers import Tokenizer\n"
        "t=Tokenizer.from_file(sys.argv[1]); t.no_truncation(); t.no_padding()\n"
        "rows=[r['text'] for r in csv.DictReader(open(sys.argv[2],newline='',encoding='utf-8'))]\n"
        "n=sorted(len(e.ids) for e in t.encode_batch(rows))\n"
        "q=lambda p:n[max(0,-(-len(n)*p//100)-1)]\n"
        "print(json.dumps({'p10':q(10),'p50':q(50),'p90':q(90),'p99':q(99),'max':n[-1],"
        "'mean':round(sum(n)/len(n),1),'over_224':sum(x>224 for x in n)}))\n")
    tok = model / "tokenizer.json"
    if not tok.is_file():
        return {}
    out = sh([sys.executable, "-c", code, str(tok), str(data)])
    return json.loads(out) if out else {}


def first_rows(src: Path, dst: Path, n: int) -> None:
    with open(src, newline="", encoding="utf-8") as f, open(dst, "w", newline="", encoding="utf-8") as g:
        r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
        w.writerow(next(r))
        for i, row in enumerate(r):
            if i >= n:
                break
            w.writerow(row)


def count_rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as f:
        return sum(1 for _ in csv.reader(f)) - 1


def warm_page_cache(paths: list[Path]) -> None:
    """Read model and data once so that the first measured system does not pay for the disk."""
    for p in paths:
        files = [p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()]
        for q in files:
            with open(q, "rb") as f:
                while f.read(1 << 24):
                    pass


def commands(system: str, a, data: Path, out: Path, report: Path) -> list[str]:
    if system.startswith("seed"):
        cmd = [sys.executable, str(BENCH / "seed_recipe.py"), "--model", str(a.model), "--input", str(data),
               "--output", str(out), "--procs", str(a.procs), "--batch-size", "16", "--max-length", str(a.max_len)]
        return cmd + (["--sorted"] if system == "seed-sorted" else [])
    cmd = [str(a.mcinfer), "run", str(a.model), "--input", str(data), "--output", str(out),
           "--max-len", str(a.max_len), "--report", str(report), "--quiet"]
    if system == "static":
        cmd += ["--schedule", "static", "--batch-size", "16"]
    else:
        cmd += ["--schedule", "dynamic"]
    if system == "dynamic-1":
        cmd += ["--replicas", "1"]
    elif a.replicas:
        cmd += ["--replicas", str(a.replicas)]
    return cmd


def run_once(system: str, a, data: Path, rep: int) -> dict:
    out = a.workdir / f"{system}.rep{rep}.csv"
    report = a.workdir / f"{system}.rep{rep}.report.json"
    for p in (out, report):
        p.unlink(missing_ok=True)
    cmd = commands(system, a, data, out, report)
    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout_s)
        rc, stdout, stderr = res.returncode, res.stdout, res.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = "timeout", e.stdout or "", e.stderr or ""
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
    wall = time.perf_counter() - t0
    result = {"system": system, "rep": rep, "wall": wall, "rc": rc, "output": out, "cmd": cmd}
    if rc != 0 or not out.is_file():
        result["error"] = (stderr or stdout).strip()[-2000:] or f"exit {rc}, no output"
        return result
    if system.startswith("seed"):
        lines = [l for l in stdout.splitlines() if l.startswith("{")]
        info = json.loads(lines[-1]) if lines else {}
        result.update(real_tokens=info.get("real_tokens"), padded_tokens=info.get("padded_tokens"),
                      workers=info.get("procs"), rows_computed=info.get("rows_computed"),
                      self_rows_per_second=info.get("rows_per_second"))
    elif report.is_file():
        info = json.loads(report.read_text())
        result.update(real_tokens=info.get("real_tokens"), padded_tokens=info.get("padded_tokens"),
                      workers=info.get("replicas"), rows_computed=info.get("rows_computed"),
                      self_rows_per_second=info.get("rows_per_second"), max_len=info.get("max_len"),
                      report_warnings=info.get("warnings"))
    return result


def read_predictions(path: Path):
    import pandas as pd

    return pd.read_csv(path, dtype={"id": str}, keep_default_na=False)


def compare(a_path: Path, b_path: Path, input_ids) -> dict:
    """Max abs difference per id between two prediction files (label columns matched by name)."""
    import numpy as np

    a, b = read_predictions(a_path), read_predictions(b_path)
    out = {"a_rows": len(a), "b_rows": len(b)}
    cols_a, cols_b = [c for c in a.columns if c != "id"], [c for c in b.columns if c != "id"]
    if cols_a != cols_b:
        out["note"] = f"label columns differ: {cols_a} vs {cols_b}; compared by position"
        if len(cols_a) != len(cols_b):
            out["error"] = "different number of label columns"
            return out
        b = b.rename(columns=dict(zip(cols_b, cols_a)))
    ids = set(input_ids)
    for name, df in (("a", a), ("b", b)):
        out[f"{name}_ids_once"] = bool(df["id"].is_unique and set(df["id"]) == ids and len(df) == len(ids))
    a, b = a.drop_duplicates("id").set_index("id"), b.drop_duplicates("id").set_index("id")
    common = a.index.intersection(b.index)
    out["common_ids"] = len(common)
    if len(common):
        d = np.abs(a.loc[common, cols_a].to_numpy(float) - b.loc[common, cols_a].to_numpy(float))
        out["max_abs_diff"] = float(d.max())
        out["mean_abs_diff"] = float(d.mean())
    out["a_in_input_order"] = bool(list(a.index) == [i for i in input_ids if i in a.index]) if out["a_ids_once"] else False
    return out


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x, spec=".1f", none="—"):
    return none if x is None else format(x, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--mcinfer", type=Path, default=REPO / "build/tools/mcinfer/mcinfer")
    ap.add_argument("--model", type=Path, default=REPO / "bench/work/models/bert-base-cls")
    ap.add_argument("--input", type=Path, default=REPO / "bench/work/testset.csv",
                    help="test set (generated with bench/gen_testset.py if absent)")
    ap.add_argument("--rows", type=int, help="generate and use a test set of this many rows (quick runs)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-len", type=int, default=224)
    ap.add_argument("--procs", type=int, default=physical_cores(), help="seed recipe processes")
    ap.add_argument("--replicas", type=int, help="mcinfer replicas for dynamic/static (default: its auto)")
    ap.add_argument("--one-replica-rows", type=int, default=2000,
                    help="rows (first N of the test set) for the --replicas 1 run; 0: all. One replica is "
                         "cores times slower, so the full set would dominate the benchmark's time")
    ap.add_argument("--skip-seed", action="store_true", help="mcinfer only (no PyTorch peers)")
    ap.add_argument("--skip-one-replica", action="store_true")
    ap.add_argument("--timeout-s", type=float, help="per-process limit")
    ap.add_argument("--workdir", type=Path, default=REPO / "bench/work/run")
    ap.add_argument("--results", type=Path, default=REPO / "bench/RESULTS.md")
    ap.add_argument("--no-results", action="store_true", help="print only; do not append to RESULTS.md")
    a = ap.parse_args()
    if a.reps < 1 or a.procs < 1 or (a.rows is not None and a.rows < 1):
        ap.error("--reps, --procs and --rows must be positive")
    a.mcinfer, a.model, a.workdir = a.mcinfer.resolve(), a.model.resolve(), a.workdir.resolve()
    a.workdir.mkdir(parents=True, exist_ok=True)
    command = shlex.join([os.path.relpath(sys.executable, REPO) if sys.executable.startswith(str(REPO)) else sys.executable,
                          os.path.relpath(__file__, REPO)] + sys.argv[1:])

    if not (a.model / "config.json").is_file():
        if a.model == (REPO / "bench/work/models/bert-base-cls").resolve():
            log("writing bench/work/models/bert-base-cls")
            subprocess.run([sys.executable, str(BENCH / "make_models.py"), "--only", "bert-base-cls"], check=True)
        else:
            sys.exit(f"run_benchmark: no model at {a.model}")
    data = a.input
    if a.rows is not None:
        data = REPO / f"bench/work/testset_{a.rows}.csv"
    if a.rows is not None or not data.is_file():
        gen = [sys.executable, str(BENCH / "gen_testset.py"), "--out", str(data)]
        if a.rows is not None:
            gen += ["--rows", str(a.rows)]
        log("generating " + shlex.join(gen))
        subprocess.run(gen, check=True, stdout=sys.stderr)
    data = data.resolve()

    systems = ["dynamic", "static"]
    if not a.skip_seed:
        systems += ["seed", "seed-sorted"]
    if not a.skip_one_replica:
        systems.append("dynamic-1")
    n_rows = count_rows(data)
    data_one = data
    if "dynamic-1" in systems and 0 < a.one_replica_rows < n_rows:
        data_one = a.workdir / f"first{a.one_replica_rows}.csv"
        first_rows(data, data_one, a.one_replica_rows)
    rows_of = {s: (count_rows(data_one) if s == "dynamic-1" else n_rows) for s in systems}

    facts, vers = machine_facts(), versions(a.mcinfer)
    log(f"{n_rows} rows, {a.reps} reps, systems {systems}; {facts['cpu']}, {facts['physical_cores']} cores")
    warm_page_cache([a.model, data])
    results = {s: [] for s in systems}
    for rep in range(a.reps):
        order = systems[rep % len(systems):] + systems[:rep % len(systems)]  # rotate: no fixed position bias
        for s in order:
            r = run_once(s, a, data_one if s == "dynamic-1" else data, rep)
            results[s].append(r)
            if "error" in r:
                log(f"rep {rep} {s}: FAILED ({r['rc']}): {r['error'][-400:]}")
            else:
                log(f"rep {rep} {s}: {r['wall']:.2f} s, {rows_of[s] / r['wall']:.1f} rows/s")

    # Summaries: median wall over successful reps; tokens from the last successful one (deterministic).
    summary = {}
    for s in systems:
        ok = [r for r in results[s] if "error" not in r]
        if not ok:
            summary[s] = {"failed": results[s][-1].get("error", "failed")}
            continue
        wall = median([r["wall"] for r in ok])
        last = ok[-1]
        real, padded = last.get("real_tokens"), last.get("padded_tokens")
        summary[s] = {"wall": wall, "rows": rows_of[s], "rows_per_second": rows_of[s] / wall,
                      "walls": [round(r["wall"], 2) for r in results[s] if "error" not in r],
                      "failed_reps": len(results[s]) - len(ok), "real_tokens": real, "padded_tokens": padded,
                      "padded_share": (1 - real / padded) if real is not None and padded else None,
                      "workers": last.get("workers"), "output": last["output"], "max_len": last.get("max_len"),
                      "cmd": last["cmd"], "report_warnings": last.get("report_warnings")}

    def rps(s):
        return summary.get(s, {}).get("rows_per_second")

    def ratio(x, y):
        return rps(x) / rps(y) if rps(x) and rps(y) else None

    checks = {"dynamic / seed": ratio("dynamic", "seed"),
              "dynamic / seed --sorted": ratio("dynamic", "seed-sorted"),
              "dynamic / static": ratio("dynamic", "static"),
              "padded share (dynamic)": summary.get("dynamic", {}).get("padded_share")}
    scaling_note = ""
    d, d1 = summary.get("dynamic", {}), summary.get("dynamic-1", {})
    if d.get("wall") and d1.get("wall") and d.get("workers"):
        if data_one == data or not (d.get("real_tokens") and d1.get("real_tokens")):
            one = d1["rows_per_second"]
            all_ = d["rows_per_second"]
            scaling_note = "rows/s on the same test set"
        else:
            # Different row sets: compare real tokens per second so that a subset's slightly
            # different mean length does not pass for a scaling effect.
            one = d1["real_tokens"] / d1["wall"]
            all_ = d["real_tokens"] / d["wall"]
            scaling_note = (f"real tokens/s; one replica on the first {rows_of['dynamic-1']} rows "
                            f"({d1['real_tokens'] / rows_of['dynamic-1']:.1f} tokens/row vs "
                            f"{d['real_tokens'] / n_rows:.1f} for the full set)")
        checks[f"all-cores / (cores × one-replica)"] = all_ / (d["workers"] * one)
    else:
        checks["all-cores / (cores × one-replica)"] = None

    agreement = {}
    if "output" in summary.get("dynamic", {}):
        input_ids = read_predictions(data)["id"].tolist()
        for peer in ["seed", "static"]:
            if "output" in summary.get(peer, {}):
                agreement[f"dynamic vs {peer}"] = compare(summary["dynamic"]["output"], summary[peer]["output"], input_ids)
    tokens_note = ""
    st, sd = summary.get("static", {}), summary.get("seed", {})
    if st.get("real_tokens") is not None and sd.get("real_tokens") is not None:
        same = st["real_tokens"] == sd["real_tokens"]
        tokens_note = (f"real tokens, mcinfer static vs seed recipe (same sampler padding, same truncation): "
                       f"{st['real_tokens']} vs {sd['real_tokens']} ({'equal' if same else 'DIFFERENT: tokenizer or truncation mismatch'})")

    # ---- print ----
    head = f"{'system':<42} {'rows/s':>9} {'wall s':>8} {'vs seed':>8} {'padded share':>13} {'workers':>8}"
    lines = [head, "-" * len(head)]
    for s in systems:
        m = summary[s]
        if "failed" in m:
            lines.append(f"{LABELS[s]:<42} {'FAILED':>9}")
            continue
        lines.append(f"{LABELS[s]:<42} {m['rows_per_second']:>9.1f} {m['wall']:>8.2f} {fmt(ratio(s, 'seed'), '.2f'):>8} "
                     f"{fmt(None if m['padded_share'] is None else 100 * m['padded_share'], '.1f'):>12}% {fmt(m['workers'], 'd'):>8}")
    print("\n".join(lines))
    for k, v in checks.items():
        print(f"{k:<36} {fmt(v, '.3f')}")
    if scaling_note:
        print(f"  (scaling measured in {scaling_note})")
    for k, v in agreement.items():
        print(f"{k}: {json.dumps(v)}")
    if tokens_note:
        print(tokens_note)
    for s in systems:
        if summary[s].get("max_len") not in (None, a.max_len):
            print(f"WARNING: {s} ran with max_len {summary[s]['max_len']}, not {a.max_len}")
        if summary[s].get("report_warnings"):
            print(f"{s} report warnings: {summary[s]['report_warnings']}")

    failed = [s for s in systems if "failed" in summary[s]]
    if failed:
        for s in failed:
            print(f"\n{s} failed: {summary[s]['failed']}", file=sys.stderr)
        print(f"\nnot appended to {a.results}: {', '.join(failed)} failed", file=sys.stderr)
        return 1
    if a.no_results:
        return 0

    # ---- RESULTS.md ----
    q = length_quantiles(a.model, data)
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = [f"\n## run: {a.model.name}, {n_rows} rows, max length {a.max_len} — {now}\n",
          f"Command: `{command}`\n",
          f"- Machine: {facts['cpu']}; {facts['physical_cores']} physical cores, {facts['logical_cpus']} logical CPUs; "
          f"{facts['memory_gib']} GiB memory; Linux {facts['kernel']}",
          f"- Versions: mcinfer `{vers['mcinfer']}` (git {vers['git']}), torch {vers['torch']}, "
          f"transformers {vers['transformers']}, tokenizers {vers['tokenizers']}, pandas {vers['pandas']}, "
          f"Python {vers['python']}",
          f"- Test set: `{os.path.relpath(data, REPO)}`, {n_rows} rows, sha256 {sha256(data)[:16]}…"
          + (f"; tokens per row (special tokens included, before truncation) p10 {q['p10']}, p50 {q['p50']}, "
             f"p90 {q['p90']}, p99 {q['p99']}, max {q['max']}, mean {q['mean']}; {q['over_224']} rows over 224" if q else ""),
          f"- {a.reps} repetitions, systems interleaved (order rotated each repetition), median wall time per system, "
          f"measured around each process (start-up, tokenisation, model load and output included); page cache warmed first.",
          "", "| system | rows/s | wall s (median) | vs seed recipe | padded-token share | real tokens | padded tokens | workers | walls (s) |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in systems:
        m = summary[s]
        name = LABELS[s] + (f" (first {m['rows']} rows)" if m["rows"] != n_rows else "")
        md.append(f"| {name} | {m['rows_per_second']:.1f} | "
                  f"{m['wall']:.2f} | {fmt(ratio(s, 'seed') if s != 'dynamic-1' or data_one == data else None, '.2f')} | "
                  f"{fmt(None if m['padded_share'] is None else 100 * m['padded_share'], '.1f')}% | {fmt(m['real_tokens'], 'd')} | "
                  f"{fmt(m['padded_tokens'], 'd')} | {fmt(m['workers'], 'd')} | {', '.join(map(str, m['walls']))} |")
    md += ["", "Commands (last repetition):", ""]
    for s in systems:
        md.append(f"- {s}: `{shlex.join([os.path.relpath(c, REPO) if c.startswith(str(REPO)) else c for c in summary[s]['cmd']])}`")
    md += ["", "Checks:", ""]
    for k, v in checks.items():
        md.append(f"- `{k}` = {fmt(v, '.3f')}")
    if scaling_note:
        md.append(f"  (scaling in {scaling_note})")
    if agreement or tokens_note:
        md += ["", "Outputs:", ""]
        for k, v in agreement.items():
            md.append(f"- {k}: max abs difference {fmt(v.get('max_abs_diff'), '.2e')} over {v.get('common_ids')} ids "
                      f"(mean {fmt(v.get('mean_abs_diff'), '.2e')}); every input id exactly once: mcinfer {v.get('a_ids_once')}, "
                      f"peer {v.get('b_ids_once')}; mcinfer in input order: {v.get('a_in_input_order')}"
                      + (f"; {v['note']}" if v.get("note") else ""))
        if tokens_note:
            md.append(f"- {tokens_note}")
    new = not a.results.exists()
    with open(a.results, "a", encoding="utf-8") as f:
        if new:
            f.write("# Benchmark results\n\nAppended by `bench/run_benchmark.py`; each section is one invocation, "
                    "peers measured in the same run. Ratios above 1 favour mcinfer.\n")
        f.write("\n".join(md) + "\n")
    print(f"\nappended to {a.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
