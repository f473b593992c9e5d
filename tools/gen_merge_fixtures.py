#!/usr/bin/env python3
"""Writes tests/fixtures/merge/<case>/: prediction shards and what `mcinfer merge` must make of
them, with every expected table computed by pandas (concat + groupby(...).mean() / median() /
max() / min() / first(), weighted means as sum(w*x)/sum(w)). Seeded; run with the repo venv:

    .venv-legacy/bin/python tools/gen_merge_fixtures.py

Each case has case.json: {"runs": [...]}, one run per merge invocation:
  inputs        files or directories, relative to the case directory
  output        output file name (its extension picks the format)
  reduce, weights, expect, id_col, order, allow_missing: the merge options
  expected      pandas' table (CSV, id column first), or absent when the run must fail
  exit          0, 1 (error) or 3 (ids missing)
  error_contains, warnings_contain: substrings the message / warnings must have
  missing, first_missing, unexpected, first_unexpected: the --expect report
Ids are compared as exact strings, rows in order, values with a relative tolerance of 1e-12.
"""
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent / "tests/fixtures/merge"
rng = np.random.default_rng(20261130)


def f32(x):
    """Values as run writes them: float32, shortest repr (numpy's str of a float32)."""
    return [str(np.float32(v)) for v in x]


def write_csv(path, ids, columns, values, torn_tail=None):
    """A shard as mcinfer run writes it: header, one row per line, LF endings."""
    lines = ["id," + ",".join(columns)]
    for i, row in zip(ids, values):
        lines.append(csv_field(str(i)) + "," + ",".join(row))
    text = "\n".join(lines) + "\n"
    if torn_tail is not None:
        text += torn_tail  # a killed writer: no newline at the end
    path.write_text(text, encoding="utf-8", newline="")


def csv_field(s):
    if any(c in s for c in ',"\r\n') or s != s.strip(" \t"):
        return '"' + s.replace('"', '""') + '"'
    return s


def write_jsonl(path, ids, columns, values, embedding=False, numeric_ids=False):
    with path.open("w", encoding="utf-8", newline="") as f:
        for i, row in zip(ids, values):
            rid = str(i) if numeric_ids else json.dumps(str(i), ensure_ascii=False)
            if embedding:
                f.write('{"id":%s,"embedding":[%s]}\n' % (rid, ",".join(row)))
            else:
                f.write("{\"id\":%s,%s}\n" % (rid, ",".join(
                    json.dumps(c) + ":" + v for c, v in zip(columns, row))))


def read_shard(path):
    """pandas reading a shard back, ids kept as exact strings."""
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        out = []
        for r in rows:
            rid = r.pop("id")
            rid = rid if isinstance(rid, str) else json.dumps(rid)
            if "embedding" in r:
                r = {f"e{k}": v for k, v in enumerate(r.pop("embedding"))}
            out.append({"id": rid, **r})
        return pd.DataFrame(out)
    return csv_frame(pd.read_csv(path, dtype=str, keep_default_na=False))


def csv_frame(df):
    """Values through Python's float(), which rounds correctly, ids untouched."""
    for c in df.columns:
        if c != "id":
            df[c] = df[c].map(float)
    return df


def save_expected(df, path):
    """pandas' result, id column first, floats in repr (round-trip) form."""
    df = df.reset_index()
    df.to_csv(path, index=False, float_format=None, lineterminator="\n")


def reduce(frames, how, order_ids=None):
    df = pd.concat(frames, ignore_index=True)
    g = df.groupby("id", sort=False)
    out = getattr(g, how)()
    if order_ids is not None:
        out = out.loc[order_ids]
    return out


def weighted_mean(frames, weights):
    parts = []
    for df, w in zip(frames, weights):
        df = df.copy()
        df["__w"] = w
        parts.append(df)
    df = pd.concat(parts, ignore_index=True)
    cols = [c for c in df.columns if c not in ("id", "__w")]
    num = df[cols].mul(df["__w"], axis=0)
    num["id"] = df["id"]
    sums = num.groupby("id", sort=False)[cols].sum()
    wsum = df.groupby("id", sort=False)["__w"].sum()
    return sums.div(wsum, axis=0)


def int_sorted(ids):
    return sorted(ids, key=lambda s: (int(s), s))


def fresh(name):
    d = ROOT / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def save_case(d, runs):
    (d / "case.json").write_text(json.dumps({"runs": runs}, indent=1, ensure_ascii=False) + "\n",
                                 encoding="utf-8")


def probs(n, k):
    x = rng.random((n, k)) + 0.05
    return x / x.sum(axis=1, keepdims=True)


# 1. The seed's layout: a dataset split into equal shards, the last padded by repeating the
# first rows (so those ids appear twice, with float noise from a different batch).
def case_seed_padding():
    d = fresh("seed_padding")
    n, world = 1001, 4
    per = -(-n // world)
    order = list(range(n)) + list(range(per * world - n))
    p = probs(n, 2)
    frames = []
    for r in range(world):
        ids = order[r * per:(r + 1) * per]
        vals = [f32(p[i] + (rng.normal(0, 1e-7, 2) if k >= n else 0))
                for k, i in zip(range(r * per, (r + 1) * per), ids)]
        write_csv(d / f"shard_{r}.csv", ids, ["neg", "pos"], vals)
        frames.append(read_shard(d / f"shard_{r}.csv"))
    (d / "input.csv").write_text("text\n" + "".join(f"sentence {i}\n" for i in range(n)))
    save_expected(reduce(frames, "mean"), d / "expected_mean.csv")
    save_case(d, [
        {"inputs": ["."], "output": "out.csv", "expected": "expected_mean.csv", "exit": 0},
        {"inputs": ["."], "output": "out.csv", "expect": "input.csv", "expected": "expected_mean.csv",
         "exit": 0, "missing": 0, "unexpected": 0},
    ])


# 2. An ensemble: three models' outputs for the same ids, one with its columns in another
# order and one in JSONL, combined with weights that do not sum to 1.
def case_ensemble():
    d = fresh("ensemble_weights")
    ids = [f"doc-{i}" for i in range(300)]
    cols = ["neg", "neu", "pos"]
    frames = []
    for name, perm in (("model_a.csv", None), ("model_b.csv", [2, 1, 0]), ("model_c.jsonl", None)):
        order = list(rng.permutation(len(ids)))
        p = probs(len(ids), 3)
        rows = [ids[i] for i in order]
        vals = [f32(p[k]) for k in range(len(ids))]
        if name.endswith(".jsonl"):
            write_jsonl(d / name, rows, cols, vals)
        elif perm:
            write_csv(d / name, rows, [cols[j] for j in perm], [[v[j] for j in perm] for v in vals])
        else:
            write_csv(d / name, rows, cols, vals)
        frames.append(read_shard(d / name)[["id"] + cols])
    weights = [2.0, 1.0, 0.5]
    save_expected(weighted_mean(frames, weights), d / "expected_weighted.csv")
    save_expected(reduce(frames, "mean"), d / "expected_mean.csv")
    inputs = ["model_a.csv", "model_b.csv", "model_c.jsonl"]
    save_case(d, [
        {"inputs": inputs, "output": "out.csv", "weights": weights,
         "expected": "expected_weighted.csv", "exit": 0},
        {"inputs": inputs, "output": "out.csv", "expected": "expected_mean.csv", "exit": 0},
    ])


# 3. Every reducer over ids seen one to five times across three shards.
def case_reducers():
    d = fresh("reducers")
    cols = ["a", "b", "c", "d"]
    rows = []
    for i in range(200):
        rows += [i] * int(rng.integers(1, 6))
    rows = list(rng.permutation(rows))
    cuts = sorted(rng.choice(range(1, len(rows)), 2, replace=False))
    frames = []
    for s, (lo, hi) in enumerate(zip([0] + cuts, cuts + [len(rows)])):
        part = rows[lo:hi]
        vals = [f32(rng.normal(0, 10, len(cols))) for _ in part]
        write_csv(d / f"shard_{s}.csv", part, cols, vals)
        frames.append(read_shard(d / f"shard_{s}.csv"))
    runs = []
    for how in ("mean", "median", "max", "min", "first"):
        save_expected(reduce(frames, how), d / f"expected_{how}.csv")
        runs.append({"inputs": ["."], "output": "out.csv", "reduce": how,
                     "expected": f"expected_{how}.csv", "exit": 0})
    runs.append({"inputs": ["."], "output": "out.jsonl", "reduce": "median",
                 "expected": "expected_median.csv", "exit": 0})
    save_case(d, runs)


# 4. String ids that need CSV quoting, sorted by bytes, and written to JSONL too.
def case_string_ids():
    d = fresh("string_ids")
    pool = ["plain", "with,comma", 'say "hi"', " leading", "trailing ", "two\nlines", "é-accent",
            "😀", "Zebra", "apple", "10", "9", "", "tab\tin", "a\r\nb"]
    ids = pool + [f"id-{i:03d}" for i in range(40)]
    rows = list(rng.permutation(ids + list(rng.choice(ids, 30))))
    half = len(rows) // 2
    frames = []
    for s, part in enumerate((rows[:half], rows[half:])):
        vals = [f32(rng.random(2)) for _ in part]
        write_csv(d / f"shard_{s}.csv", part, ["x", "y"], vals)
        frames.append(read_shard(d / f"shard_{s}.csv"))
    first_seen = reduce(frames, "mean")
    save_expected(first_seen, d / "expected_first_seen.csv")
    by_id = first_seen.loc[sorted(first_seen.index, key=lambda s: s.encode("utf-8"))]
    save_expected(by_id, d / "expected_by_id.csv")
    save_case(d, [
        {"inputs": ["."], "output": "out.csv", "expected": "expected_first_seen.csv", "exit": 0},
        {"inputs": ["."], "output": "out.csv", "order": "id", "expected": "expected_by_id.csv",
         "exit": 0},
        {"inputs": ["."], "output": "out.jsonl", "order": "id", "expected": "expected_by_id.csv",
         "exit": 0},
    ])


# 5. Integer ids sorted numerically (2 before 10, negatives first), also beyond 64 bits.
def case_integer_ids():
    d = fresh("integer_ids")
    ids = [str(i) for i in rng.choice(range(-50, 5000), 120, replace=False)]
    rows = list(rng.permutation(ids + list(rng.choice(ids, 20))))
    vals = [f32(rng.random(3)) for _ in rows]
    write_csv(d / "shard_0.csv", rows, ["p", "q", "r"], vals)
    frames = [read_shard(d / "shard_0.csv")]
    m = reduce(frames, "mean")
    save_expected(m.loc[int_sorted(m.index)], d / "expected_by_id.csv")
    big = ["18446744073709551616", "-99999999999999999999", "5", "12345678901234567890123", "0"]
    bvals = [f32(rng.random(3)) for _ in big]
    write_csv(d / "big.csv", big, ["p", "q", "r"], bvals)
    b = reduce([read_shard(d / "big.csv")], "mean")
    save_expected(b.loc[int_sorted(b.index)], d / "expected_big_by_id.csv")
    save_case(d, [
        {"inputs": ["shard_0.csv"], "output": "out.csv", "order": "id",
         "expected": "expected_by_id.csv", "exit": 0},
        {"inputs": ["big.csv"], "output": "out.csv", "order": "id",
         "expected": "expected_big_by_id.csv", "exit": 0},
    ])


# 6. --expect: ids missing from the shards, ids not in the input, duplicates in the input.
def case_missing():
    d = fresh("missing_ids")
    inp = [f"r{i}" for i in range(100)]
    inp_rows = inp + ["r5", "r17"]  # the input itself repeats two ids
    lines = ["key,text"] + [f"{k},text of {k}" for k in inp_rows]
    (d / "input.csv").write_text("\n".join(lines) + "\n")
    missing = sorted(rng.choice(range(100), 15, replace=False))
    present = [k for i, k in enumerate(inp) if i not in set(missing)]
    extra = ["x1", "x2", "x3"]
    rows = list(rng.permutation(present + extra + list(rng.choice(present, 10))))
    frames = []
    for s, part in enumerate((rows[:50], rows[50:])):
        vals = [f32(rng.random(2)) for _ in part]
        write_csv(d / f"shard_{s}.csv", part, ["neg", "pos"], vals)
        frames.append(read_shard(d / f"shard_{s}.csv"))
    m = reduce(frames, "mean")
    want_missing = [k for k in inp if k not in set(m.index)]
    unexpected = [k for k in m.index if k not in set(inp)]  # first-seen order
    in_order = [k for k in inp if k in set(m.index)] + unexpected
    save_expected(m.loc[in_order], d / "expected_input_order.csv")
    save_expected(m, d / "expected_first_seen.csv")
    report = {"missing": len(want_missing), "first_missing": want_missing[:10],
              "unexpected": len(unexpected), "first_unexpected": unexpected[:10]}
    save_case(d, [
        {"inputs": ["."], "output": "out.csv", "expect": "input.csv", "id_col": "key",
         "exit": 3, **report},
        {"inputs": ["."], "output": "out.csv", "expect": "input.csv", "id_col": "key",
         "allow_missing": True, "expected": "expected_input_order.csv", "exit": 0, **report},
        {"inputs": ["."], "output": "out.csv", "expect": "input.csv", "id_col": "key",
         "allow_missing": True, "order": "first-seen", "expected": "expected_first_seen.csv",
         "exit": 0, **report},
    ])


# 7. Files whose column sets differ.
def case_mismatched():
    d = fresh("mismatched_columns")
    write_csv(d / "a.csv", ["1", "2"], ["neg", "pos"], [f32(rng.random(2)) for _ in range(2)])
    write_csv(d / "b.csv", ["3"], ["neg", "neutral"], [f32(rng.random(2))])
    save_case(d, [{"inputs": ["a.csv", "b.csv"], "output": "out.csv", "exit": 1,
                   "error_contains": ["b.csv", "columns differ from", "a.csv", "lacks pos",
                                      "has neutral"]}])


# 8. A shard torn by a killed writer: its last line has no newline and is cut short.
def case_torn():
    d = fresh("torn_last_line")
    ids0, ids1 = list(range(0, 40)), list(range(40, 80))
    v0 = [f32(rng.random(2)) for _ in ids0]
    v1 = [f32(rng.random(2)) for _ in ids1]
    write_csv(d / "shard_0.csv", ids0, ["neg", "pos"], v0)
    write_csv(d / "shard_1.csv", ids1, ["neg", "pos"], v1, torn_tail="80," + v1[0][0][:4])
    frames = [read_shard(d / "shard_0.csv"),
              csv_frame(pd.read_csv(d / "shard_1.csv", dtype=str, keep_default_na=False,
                                    nrows=len(ids1)))]
    save_expected(reduce(frames, "mean"), d / "expected_mean.csv")
    save_case(d, [{"inputs": ["."], "output": "out.csv", "expected": "expected_mean.csv",
                   "exit": 0, "warnings_contain": [f"shard_1.csv:{len(ids1) + 2}: last line is torn"]}])


# 9. NaN and infinity are errors naming file:line (pandas would silently skip a NaN).
def case_nan():
    d = fresh("nan_values")
    ids = list(range(30))
    vals = [f32(rng.random(2)) for _ in ids]
    write_csv(d / "shard_0.csv", ids, ["neg", "pos"], vals)
    bad = [list(v) for v in vals]
    bad[12][1] = "nan"
    write_csv(d / "shard_1.csv", ids, ["neg", "pos"], bad)
    inf = [list(v) for v in vals]
    inf[3][0] = "-inf"
    write_csv(d / "shard_2.csv", ids, ["neg", "pos"], inf)
    write_jsonl(d / "shard_3.jsonl", ids, ["neg", "pos"],
                [v if k != 7 else [v[0], "null"] for k, v in enumerate(vals)], numeric_ids=True)
    save_case(d, [
        {"inputs": ["shard_0.csv", "shard_1.csv"], "output": "out.csv", "exit": 1,
         "error_contains": ["shard_1.csv:14", "column 'pos'", "NaN"]},
        {"inputs": ["shard_0.csv", "shard_2.csv"], "output": "out.csv", "exit": 1,
         "error_contains": ["shard_2.csv:5", "column 'neg'", "infinity"]},
        {"inputs": ["shard_0.csv", "shard_3.jsonl"], "output": "out.csv", "exit": 1,
         "error_contains": ["shard_3.jsonl:8", "column 'pos'", "null"]},
    ])


# 10. Embeddings in JSONL stay arrays; numeric JSON ids stay numbers.
def case_embedding():
    d = fresh("embedding_jsonl")
    dim = 8
    ids = list(range(50))
    rows = ids + list(rng.choice(ids, 10))
    frames = []
    for s, part in enumerate((rows[:30], rows[30:])):
        vals = [f32(rng.normal(0, 1, dim)) for _ in part]
        write_jsonl(d / f"shard_{s}.jsonl", part, None, vals, embedding=True, numeric_ids=True)
        frames.append(read_shard(d / f"shard_{s}.jsonl"))
    save_expected(reduce(frames, "mean"), d / "expected_mean.csv")
    save_case(d, [
        {"inputs": ["."], "output": "out.jsonl", "expected": "expected_mean.csv", "exit": 0,
         "output_contains": ["\"embedding\":["]},
        {"inputs": ["."], "output": "out.csv", "expected": "expected_mean.csv", "exit": 0,
         "output_contains": ["id,e0,e1,e2,e3,e4,e5,e6,e7\n"]},
    ])


if __name__ == "__main__":
    for make in (case_seed_padding, case_ensemble, case_reducers, case_string_ids,
                 case_integer_ids, case_missing, case_mismatched, case_torn, case_nan,
                 case_embedding):
        make()
    print(f"wrote {len(list(ROOT.iterdir()))} cases to {ROOT}")
