#!/usr/bin/env python3
"""Writes tests/fixtures/sched/distributed_sampler.json: the indices that
torch.utils.data.DistributedSampler(dataset of length N, num_replicas=R, rank=r, shuffle=False,
drop_last=False) yields for each rank. The scheduler's static sharding must match it exactly,
including the wrap-around padding that repeats leading indices so every rank gets ceil(N / R).

Format: [{"n": N, "replicas": R, "ranks": [[rank 0 indices], ...]}, ...]; where torch raises,
"ranks" is null and "error" holds "<ExceptionType>: <message>".

Regenerate: tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_sampler_table.py
"""
import json
from pathlib import Path

import torch
from torch.utils.data import DistributedSampler

torch.set_num_threads(1)

CASES = [(1, 1), (1, 2), (1, 8), (3, 8), (7, 7), (8, 4), (10, 3), (10, 4), (13, 8), (2, 7), (5, 2), (100, 7),
         (17, 16), (0, 3)]
OUT = Path(__file__).resolve().parent.parent / "tests/fixtures/sched/distributed_sampler.json"


class Sized:
    """Only __len__ matters to the sampler; it never touches items."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def main():
    table = []
    for n, r in CASES:
        entry = {"n": n, "replicas": r}
        try:
            ranks = []
            for rank in range(r):
                s = DistributedSampler(Sized(n), num_replicas=r, rank=rank, shuffle=False, drop_last=False)
                idx = [int(i) for i in s]
                if len(idx) != len(s):
                    raise AssertionError(f"len(sampler) {len(s)} != {len(idx)} yielded")
                ranks.append(idx)
            entry["ranks"] = ranks
        except Exception as e:  # record what torch does, e.g. for N = 0
            entry["ranks"] = None
            entry["error"] = f"{type(e).__name__}: {e}"
        table.append(entry)
        shown = entry["ranks"] if entry["ranks"] is not None else entry["error"]
        print(f"N={n:<3} R={r:<2} {json.dumps(shown)[:110]}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    # One case per line: diffable, still plain JSON.
    OUT.write_text("[\n" + ",\n".join(json.dumps(e) for e in table) + "\n]\n")
    print(f"wrote {len(table)} cases to {OUT} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
