#!/usr/bin/env python3
"""Writes the seed corpus of the Parquet fuzz target (tests/fuzz/corpus/fuzz_parquet/): small
Parquet files of the shapes mcinfer reads, each behind the one flag byte the target reads
(0x40: read a pair column, 0x20: ids only):

  rows_strings      id string, text string, pair dictionary; nulls; two row groups
  rows_ints         id int64, text large_string; no compression
  rows_no_id        text only, one row group of dictionary-encoded pages
  table_labels      a prediction table: id string, float32 columns neg/pos
  table_embedding   a prediction table: id int64, fixed_size_list<float32>[4] with stored schema

Reproducible. Usage: .venv-arrow/bin/python tools/gen_parquet_fuzz_seeds.py
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fuzz/corpus/fuzz_parquet"


def parquet_bytes(table: pa.Table, **options: object) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)  # type: ignore[arg-type]
    return sink.getvalue()


def seeds() -> dict[str, tuple[int, bytes]]:
    strings = pa.table(
        {
            "id": pa.array(["a", "b", None, "d"]),
            "text": pa.array(["one", None, "three", "four"]),
            "pair": pa.array(["x", "y", "x", "z"]).dictionary_encode(),
        }
    )
    ints = pa.table(
        {
            "id": pa.array([1, -2, 3], pa.int64()),
            "text": pa.array(["é", "", "c"], pa.large_string()),
        }
    )
    no_id = pa.table({"text": pa.array(["same", "same", "other"])})
    labels = pa.table(
        {
            "id": pa.array(["r1", "r2"]),
            "neg": pa.array([0.25, 0.5], pa.float32()),
            "pos": pa.array([0.75, 0.5], pa.float32()),
        }
    )
    values = pa.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], pa.float32())
    embedding = pa.table(
        {
            "id": pa.array([7, 8], pa.int64()),
            "embedding": pa.FixedSizeListArray.from_arrays(values, 4),
        }
    )
    return {
        "rows_strings": (0x40, parquet_bytes(strings, row_group_size=2)),
        "rows_ints": (0x00, parquet_bytes(ints, compression="none")),
        "rows_no_id": (0x20, parquet_bytes(no_id, use_dictionary=True)),
        "table_labels": (0x00, parquet_bytes(labels)),
        "table_embedding": (0x00, parquet_bytes(embedding, store_schema=True)),
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (flags, body) in seeds().items():
        (OUT / name).write_bytes(bytes([flags]) + body)
        print(f"{OUT.relative_to(ROOT) / name}: {len(body) + 1} bytes")


if __name__ == "__main__":
    main()
