#!/usr/bin/env python3
"""Writes tests/fixtures/data/: reference parses for the row readers, made by Python's own csv
and json modules (the C++ readers must agree). Standard library only; seeded.

csv_files.json: random RFC 4180 files (quoted fields with commas, quotes, CR/LF inside; LF,
CRLF and lone-CR record ends mixed in one file; blank lines; a missing final newline) with the
records and start lines that csv.reader gives for them. Blank lines, for which csv.reader
yields [], are not records for mcinfer.

json_strings.json: JSON string literals (escapes, surrogate pairs, lone surrogates, raw
non-ASCII) and what json.loads makes of them, as UTF-8 bytes (lone surrogates with
'surrogatepass', which is what mcinfer passes through)."""
import csv
import io
import json
import random
from pathlib import Path

rng = random.Random(20261130)
ALPHABET = ["a", "b", "Z", "0", " ", ",", '"', "\n", "\r", "\r\n", "é", "€", "😀", "\t", "x y"]


def field():
    n = rng.choice([0, 0, 1, 2, 3, 5, 8])
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def make_file():
    out = io.StringIO(newline="")
    ncols = rng.randint(1, 5)
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.15:
            out.write(rng.choice(["\n", "\r\n"]))  # a blank line
        record = [field() for _ in range(ncols)]
        if ncols == 1 and record[0] == "":
            record[0] = "e"  # a lone empty field would be a blank line
        quoting = csv.QUOTE_ALL if rng.random() < 0.2 else csv.QUOTE_MINIMAL
        end = rng.choice(["\n", "\r\n", "\n", "\r"])
        w = csv.writer(out, quoting=quoting, lineterminator=end)
        w.writerow(record)
    text = out.getvalue()
    if rng.random() < 0.2 and text.endswith("\n") and not text.endswith("\r\n"):
        text = text[:-1]  # no final newline
    # A lone CR right before a field that starts with LF would read as CRLF: csv.reader
    # agrees with mcinfer there, so such files stay.
    return text


def parse(text):
    reader = csv.reader(io.StringIO(text, newline=""))
    records = []
    while True:
        start = reader.line_num + 1
        try:
            rec = next(reader)
        except StopIteration:
            break
        if rec == []:
            continue
        records.append({"line": start, "fields": rec})
    return records


files = []
for _ in range(600):
    text = make_file()
    files.append({"text": text, "records": parse(text)})

path = Path(__file__).resolve().parent.parent / "tests/fixtures/data"
path.mkdir(parents=True, exist_ok=True)
(path / "csv_files.json").write_text(json.dumps(files, indent=0) + "\n")

PIECES = ["a", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0000", "\\u001f",
          "\\u00e9", "\\u20ac", "\\ud83d\\ude00", "\\ud800", "\\udc00", "\\ud800x", "\\uDBFF\\uDFFF",
          "é", "€", "😀", " ", "\\u0041"]
strings = []
for _ in range(2000):
    literal = '"' + "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 8))) + '"'
    value = json.loads(literal)
    strings.append({"literal": literal, "utf8": value.encode("utf-8", "surrogatepass").hex()})
(path / "json_strings.json").write_text(json.dumps(strings, indent=0, ensure_ascii=False) + "\n")
print(f"wrote {len(files)} CSV files and {len(strings)} JSON strings to {path}")
