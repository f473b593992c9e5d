#!/usr/bin/env python3
"""Writes tests/fixtures/core/utf8_cases.json: byte strings and what Python's
bytes.decode("utf-8", "replace") makes of them (text re-encoded, number of replacements).
The C++ sanitizer must match exactly. Standard library only."""
import codecs
import json
import random
from pathlib import Path

calls = 0


def counting_replace(err):
    global calls
    calls += 1
    return ("\ufffd", err.end)


codecs.register_error("mcinfer_count", counting_replace)

rng = random.Random(20261130)
interesting = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
               0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFC, 0xFE, 0xFF, 0x8F, 0x90, 0x9F, 0xA0]
cases = [b"", b"plain ascii", "héllo wörld ✓ 😀".encode(), b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
         b"\xe2\x82", b"\xe2\x82\xac\xe2", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe0\x80\xaf",
         b"\xef\xbf\xbd", b"a\xffb\xfec"]
for _ in range(3000):
    n = rng.randint(1, 12)
    cases.append(bytes(rng.choice(interesting) if rng.random() < 0.7 else rng.randrange(256)
                       for _ in range(n)))
for _ in range(500):  # valid text with a corrupted byte
    s = "".join(chr(rng.choice([rng.randrange(0x20, 0x7F), rng.randrange(0xA0, 0x800),
                                rng.randrange(0x800, 0xD800), rng.randrange(0x10000, 0x110000)]))
                for _ in range(rng.randint(1, 6))).encode("utf-8", "surrogatepass")
    b = bytearray(s)
    b[rng.randrange(len(b))] = rng.randrange(256)
    cases.append(bytes(b))

out = []
for c in cases:
    calls = 0
    text = c.decode("utf-8", "mcinfer_count")
    out.append({"in": c.hex(), "out": text.encode("utf-8").hex(), "replacements": calls})
path = Path(__file__).resolve().parent.parent / "tests/fixtures/core/utf8_cases.json"
path.write_text(json.dumps(out, indent=0) + "\n")
print(f"wrote {len(out)} cases to {path}")
