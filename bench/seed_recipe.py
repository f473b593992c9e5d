#!/usr/bin/env python3
"""The peer mcinfer is measured against: the well-known Kaggle multi-process CPU recipe.

One process per core, each with a full model copy and one intra-op thread. Each takes its slice
of the test set through DistributedSampler(shuffle=False, drop_last=False): the index list is
padded to a multiple of the world size by repeating its first indices, and rank r gets r, r+R,
r+2R, ... It runs the classifier in batches of 16 padded to max_length 224, writes
shard_{rank}.csv (id + one probability column per label), and afterwards the shards are
concatenated and groupby("id").mean() folds away the duplicates the padding created (output in
groupby's order, as the recipe writes it).

--sorted is the best a PyTorch user gets with a few more lines: the same DistributedSampler
slice, sorted by token length, each batch padded only to its longest row.

--self-test checks the two variants against each other on a tiny random BERT (real MiniLM
tokenizer): same probabilities within 1e-5, every input id exactly once.

Prints one JSON line: rows, wall seconds (start of this script to the output written:
imports, tokenisation and model load included), rows/s, real and padded tokens fed.

    .venv-legacy/bin/python bench/seed_recipe.py --model bench/work/models/bert-base-cls \\
        --input bench/work/testset.csv --output bench/work/seed.csv [--procs N] [--sorted]
"""

import time

T0 = time.perf_counter()  # before the heavy imports: the recipe pays for them too

import argparse
import glob
import json
import os
import sys
import tempfile
from pathlib import Path


def physical_cores() -> int:
    """Distinct (package, core) pairs among the CPUs this process may run on."""
    cores = set()
    for cpu in sorted(os.sched_getaffinity(0)):
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topo / "physical_package_id").read_text().strip(), (topo / "core_id").read_text().strip()))
        except OSError:
            return len(os.sched_getaffinity(0))
    return max(1, len(cores))


def read_input(path: str):
    import pandas as pd

    # Ids as strings: "007" must stay "007", and the shards are read back the same way.
    df = pd.read_csv(path, dtype={"id": str}, keep_default_na=False)
    if "id" not in df.columns or "text" not in df.columns:
        raise SystemExit(f"seed_recipe: {path} needs columns id,text (has {list(df.columns)})")
    df["text"] = df["text"].astype(str)
    return df


def worker(rank: int, args, tmpdir: str) -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one core per process, tokeniser included
    import numpy as np
    import pandas as pd
    import torch
    from torch.utils.data import DataLoader, Dataset
    from torch.utils.data.distributed import DistributedSampler
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(1)
    df = read_input(args.input)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    tokenizer.deprecation_warnings["Asking-to-pad-a-fast-tokenizer"] = True  # --sorted pads on purpose
    model = AutoModelForSequenceClassification.from_pretrained(args.model)
    model.eval()
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]

    class Texts(Dataset):
        def __len__(self):
            return len(df)

        def __getitem__(self, i):
            return i

    sampler = DistributedSampler(Texts(), num_replicas=args.procs, rank=rank, shuffle=False, drop_last=False)
    indices = list(sampler)
    texts = df["text"].tolist()
    ids, probs = [], []
    real = padded = 0

    def forward(enc):
        nonlocal real, padded
        real += int(enc["attention_mask"].sum())
        padded += enc["input_ids"].numel()
        return torch.softmax(model(**enc).logits.float(), dim=-1).numpy()

    with torch.inference_mode():
        if not args.sorted:
            collate = lambda batch: (batch, tokenizer([texts[i] for i in batch], padding="max_length", truncation=True,
                                                      max_length=args.max_length, return_tensors="pt"))
            loader = DataLoader(Texts(), batch_size=args.batch_size, sampler=sampler, collate_fn=collate)
            for batch, enc in loader:
                ids.extend(df["id"].iloc[batch].tolist())
                probs.append(forward(enc))
        else:
            enc_all = tokenizer([texts[i] for i in indices], truncation=True, max_length=args.max_length)
            order = sorted(range(len(indices)), key=lambda k: len(enc_all["input_ids"][k]))
            for s in range(0, len(order), args.batch_size):
                chunk = order[s:s + args.batch_size]
                enc = tokenizer.pad([{k: enc_all[k][j] for k in enc_all.keys()} for j in chunk],
                                    padding="longest", return_tensors="pt")
                ids.extend(df["id"].iloc[[indices[j] for j in chunk]].tolist())
                probs.append(forward(enc))

    values = np.concatenate(probs) if probs else np.zeros((0, len(labels)), dtype=np.float32)
    shard = pd.DataFrame(values, columns=labels)
    shard.insert(0, "id", ids)
    shard.to_csv(os.path.join(tmpdir, f"shard_{rank}.csv"), index=False)
    with open(os.path.join(tmpdir, f"stats_{rank}.json"), "w") as f:
        json.dump({"rows": len(ids), "real_tokens": real, "padded_tokens": padded}, f)


def self_test(rows: int, procs: int) -> int:
    """Unsorted vs --sorted on a tiny random BERT with the real MiniLM tokenizer."""
    import shutil
    import subprocess

    import numpy as np
    import pandas as pd
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="seed_selftest_") as tmp:
        model_dir = os.path.join(tmp, "tiny")
        torch.manual_seed(0)
        # Wide init so that probabilities spread well away from uniform and a mix-up shows.
        config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=512, num_labels=3, initializer_range=0.2)
        BertForSequenceClassification(config).save_pretrained(model_dir, safe_serialization=True)
        for f in ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]:
            shutil.copy2(repo / "models/all-MiniLM-L6-v2" / f, os.path.join(model_dir, f))
        data = os.path.join(tmp, "in.csv")
        subprocess.run([sys.executable, str(repo / "bench/gen_testset.py"), "--rows", str(rows), "--out", data],
                       check=True, stdout=subprocess.DEVNULL)
        runs = {}
        for variant in ["plain", "sorted"]:
            out = os.path.join(tmp, f"{variant}.csv")
            cmd = [sys.executable, __file__, "--model", model_dir, "--input", data, "--output", out,
                   "--procs", str(procs)] + (["--sorted"] if variant == "sorted" else [])
            res = subprocess.run(cmd, check=True, capture_output=True, text=True)
            stats = json.loads(res.stdout.strip().splitlines()[-1])
            runs[variant] = (pd.read_csv(out, dtype={"id": str}, keep_default_na=False).set_index("id"), stats)
        ids = pd.read_csv(data, dtype={"id": str}, keep_default_na=False)["id"]
    plain, sorted_ = runs["plain"][0], runs["sorted"][0]
    problems = []
    for name, df in [("plain", plain), ("sorted", sorted_)]:
        if not df.index.is_unique or sorted(df.index) != sorted(ids):
            problems.append(f"{name}: ids are not the input's ids exactly once")
    diff = float(np.abs(plain.loc[ids].values - sorted_.loc[ids].values).max()) if not problems else float("nan")
    if not diff <= 1e-5:
        problems.append(f"max abs difference {diff} > 1e-5")
    if runs["plain"][1]["real_tokens"] != runs["sorted"][1]["real_tokens"]:
        problems.append("real token counts differ")
    print(json.dumps({"self_test": "fail" if problems else "ok", "rows": rows, "procs": procs,
                      "max_abs_diff": diff, "prob_range": [float(plain.values.min()), float(plain.values.max())],
                      "plain": runs["plain"][1], "sorted": runs["sorted"][1], "problems": problems}))
    return 1 if problems else 0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="HF model directory with its tokenizer")
    ap.add_argument("--input", required=True, help="CSV with columns id,text")
    ap.add_argument("--output", required=True, help="CSV: id + one probability column per label")
    ap.add_argument("--procs", type=int, default=physical_cores(), help="processes (default: physical cores)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=224)
    ap.add_argument("--sorted", action="store_true", help="sort each slice by length, pad per batch")
    ap.add_argument("--shards-dir", help="keep the shards here instead of a temporary folder")
    args = ap.parse_args(argv)
    if args.procs < 1 or args.batch_size < 1 or args.max_length < 2:
        ap.error("--procs, --batch-size and --max-length must be positive")

    import pandas as pd
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="seed_recipe_") as tmp:
        shards = args.shards_dir or tmp
        os.makedirs(shards, exist_ok=True)
        for old in glob.glob(os.path.join(shards, "shard_*.csv")) + glob.glob(os.path.join(shards, "stats_*.json")):
            os.remove(old)
        mp.spawn(worker, args=(args, shards), nprocs=args.procs, join=True)
        parts = [pd.read_csv(os.path.join(shards, f"shard_{r}.csv"), dtype={"id": str}, keep_default_na=False)
                 for r in range(args.procs)]
        stats = [json.load(open(os.path.join(shards, f"stats_{r}.json"))) for r in range(args.procs)]
    merged = pd.concat(parts, ignore_index=True).groupby("id").mean()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    merged.to_csv(out)
    wall = time.perf_counter() - T0

    real = sum(s["real_tokens"] for s in stats)
    padded = sum(s["padded_tokens"] for s in stats)
    result = {
        "system": "seed_recipe_sorted" if args.sorted else "seed_recipe",
        "procs": args.procs,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "rows": len(merged),
        "rows_computed": sum(s["rows"] for s in stats),
        "wall_seconds": round(wall, 3),
        "rows_per_second": round(len(merged) / wall, 2) if wall > 0 else 0.0,
        "real_tokens": real,
        "padded_tokens": padded,
        "padding_fraction": round(1 - real / padded, 4) if padded else 0.0,
    }
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    if "--self-test" in sys.argv[1:]:
        st = argparse.ArgumentParser(description="unsorted vs --sorted on a tiny model")
        st.add_argument("--self-test", action="store_true")
        st.add_argument("--rows", type=int, default=200)
        st.add_argument("--procs", type=int, default=3, help="3: forces DistributedSampler padding")
        a = st.parse_args()
        sys.exit(self_test(a.rows, a.procs))
    main()
