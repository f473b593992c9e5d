#!/usr/bin/env python3
"""Generates src/tokenizer/unicode_tables.cc: the Unicode data the tokenizers need, in the
Unicode versions Hugging Face tokenizers 0.20.3 (the parity reference) actually uses.

Sources, and why each version:
  * Python's unicodedata (Unicode 14.0 in Python 3.11): general categories, canonical combining
    classes, decompositions and lowercase mappings.
  * Python's unicodedata database as of Unicode 8.0 and 9.0, from the unicodedata2 8.0.0 and 9.0.0
    source packages (the CPython module backported; only their generated unicodedata_db.h is
    read, nothing is built or installed; fetched with `pip download` when not cached). HF's
    BertNormalizer and BertPreTokenizer use the `unicode_categories` 0.1.1 crate, whose tables are
    Unicode 8.0 (Cc/Cf/Co -> control, P* -> punctuation, Mn -> accents to strip), and its
    NFD/NFKC and StripAccents come from `unicode-normalization-alignments` 0.1.12, Unicode 9.0.
    General categories do change between versions (U+1885, U+1886: Lo in 8.0, Mn since 9.0),
    so those properties come from the old databases. Decompositions and combining classes are
    stable once assigned, so for them "14.0 data restricted to code points assigned in 9.0"
    equals the 9.0 data.
  * The `regex` module (transformers depends on it): White_Space, Alphabetic, Join_Control,
    Grapheme_Cluster_Break, Indic_Conjunct_Break and Extended_Pictographic, which unicodedata
    lacks. HF's regex crate (\\w, \\s of added tokens and the Whitespace pre-tokenizer) and
    unicode-segmentation (grapheme clusters of the Precompiled normalizer) are Unicode 16.0,
    while the regex module may be newer: code points it knows but Unicode 16.0 left unassigned
    (unicodedata2 16.0.0's database, read like the 8.0 and 9.0 ones) get their 16.0 values
    (not word characters, grapheme break Other). GPT-2's pre-tokenizer regex runs on
    Oniguruma 6.9.8 (Unicode 14.0): \\p{L}, \\p{N} come from unicodedata.
  * Lowercasing in HF is Rust's char::to_lowercase (the Rust toolchain's Unicode version, 15.x or
    16.0); here it is Python's str.lower() per code point (14.0, no context-dependent rules,
    like Rust). Code points that gained case mappings after 14.0 are not lowercased.

Usage: .venv-legacy/bin/python tools/gen_unicode_tables.py [--cache DIR]   (rewrites the generated file)
"""
import argparse
import re
import subprocess
import sys
import tarfile
import unicodedata
from pathlib import Path

import regex

ROOT = Path(__file__).resolve().parent.parent
# Two files, so that neither is too long to read: code point properties, then mappings.
OUT_PROPERTIES = ROOT / "src/tokenizer/unicode_tables.cc"
OUT_MAPPINGS = ROOT / "src/tokenizer/unicode_mappings.cc"
MAX = 0x110000
BLOCK = 64  # code points per second-level block

# Property bits; keep in sync with src/tokenizer/unicode.h.
CCC_MASK = 0xFF
WHITE_SPACE = 1 << 8
BERT_CONTROL = 1 << 9
BERT_PUNCT = 1 << 10
MN8 = 1 << 11
LETTER = 1 << 12
NUMBER = 1 << 13
MARK9 = 1 << 14
WORD = 1 << 15
CANON_DECOMP = 1 << 16
COMPAT_DECOMP = 1 << 17
HAS_LOWER = 1 << 18
GCB_SHIFT = 19  # 4 bits
INCB_SHIFT = 23  # 2 bits
EXT_PICT = 1 << 25
CHINESE = 1 << 26
COMPOSES = 1 << 27  # appears in a canonical composition pair (NFC needs to look)

GCB_VALUES = ["Other", "CR", "LF", "Control", "Extend", "ZWJ", "Regional_Indicator", "Prepend",
              "SpacingMark", "L", "V", "T", "LV", "LVT"]
INCB_VALUES = ["None", "Linker", "Consonant", "Extend"]


def old_categories(version, cache):
    """General category of every code point in Unicode `version`, from the unicodedata2 sdist."""
    cache.mkdir(parents=True, exist_ok=True)
    sdist = cache / f"unicodedata2-{version}.tar.gz"
    if not sdist.exists():
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                               ":all:", f"unicodedata2=={version}", "-d", str(cache)])
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/unicodedata_db.h"))
        text = tar.extractfile(member).read().decode()
    assert f'#define UNIDATA_VERSION "{version}"' in text, version

    def array(name):
        body = re.search(r"\b" + name + r"\[\] = \{(.*?)\};", text, re.S).group(1)
        return body

    records = [int(m.group(1)) for m in re.finditer(r"\{(\d+),", array("_PyUnicode_Database_Records"))]
    names = re.findall(r'"(\w+)"', array("_PyUnicode_CategoryNames"))
    shift = int(re.search(r"#define SHIFT (\d+)", text).group(1))
    index1 = [int(x) for x in re.findall(r"\d+", array("index1"))]
    index2 = [int(x) for x in re.findall(r"\d+", array("index2"))]
    mask = (1 << shift) - 1
    return [names[records[index2[(index1[cp >> shift] << shift) + (cp & mask)]]] for cp in range(MAX)]


def regex_set(pattern):
    r = regex.compile(pattern)
    return bytearray(1 if r.match(chr(cp)) else 0 for cp in range(MAX))


def is_chinese(cp):
    # BERT's CJK ranges exactly as HF's BertNormalizer spells them (0x2B920, not 0x2B820).
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
            0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF or
            0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def full_decomposition(cp, compat, assigned9):
    """Recursive decomposition of cp with data restricted to Unicode 9.0; None if none."""
    if not assigned9[cp] or 0xD800 <= cp <= 0xDFFF:
        return None
    form = "NFKD" if compat else "NFD"
    s = unicodedata.normalize(form, chr(cp))
    if s == chr(cp):
        return None
    # Reordering inside one code point's decomposition is already canonical.
    return [ord(c) for c in s]


def main():
    if unicodedata.unidata_version != "14.0.0":
        sys.exit(f"expected Python's unicodedata 14.0.0, got {unicodedata.unidata_version}")
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", default="/tmp/mcinfer-unicodedata2",
                    help="where the unicodedata2 source packages are (downloaded when missing)")
    args = ap.parse_args()
    cat8 = old_categories("8.0.0", Path(args.cache))
    cat9 = old_categories("9.0.0", Path(args.cache))
    in9 = bytearray(1 if c != "Cn" else 0 for c in cat9)
    cat16 = old_categories("16.0.0", Path(args.cache))
    white = regex_set(r"\p{White_Space}")
    alpha = regex_set(r"\p{Alphabetic}")
    join = regex_set(r"\p{Join_Control}")
    ext_pict = regex_set(r"\p{Extended_Pictographic}")
    assigned = regex_set(r"\P{Cn}")
    gcb_sets = {v: regex_set(r"\p{Grapheme_Cluster_Break=" + v + "}") for v in GCB_VALUES[1:]}
    incb_sets = {v: regex_set(r"\p{Indic_Conjunct_Break=" + v + "}") for v in INCB_VALUES[1:]}

    props = [0] * MAX
    canon, compat, lower = {}, {}, {}
    for cp in range(MAX):
        ch = chr(cp)
        cat = unicodedata.category(ch)
        p = 0
        if in9[cp]:
            p |= unicodedata.combining(ch)
        if white[cp]:
            p |= WHITE_SPACE
        if cp not in (9, 10, 13) and cat8[cp] in ("Cc", "Cf", "Co"):
            p |= BERT_CONTROL
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or cat8[cp][0] == "P":
            p |= BERT_PUNCT
        if cat8[cp] == "Mn":
            p |= MN8
        if cat[0] == "L":
            p |= LETTER
        if cat[0] == "N":
            p |= NUMBER
        if cat9[cp][0] == "M":
            p |= MARK9
        if cat16[cp] != "Cn" and (alpha[cp] or cat16[cp][0] == "M" or cat16[cp] in ("Nd", "Pc") or join[cp]):
            p |= WORD
        d = full_decomposition(cp, False, in9)
        if d:
            p |= CANON_DECOMP
            if not (0xAC00 <= cp <= 0xD7A3):
                canon[cp] = d
        d = full_decomposition(cp, True, in9)
        if d:
            p |= COMPAT_DECOMP
            if not (0xAC00 <= cp <= 0xD7A3):
                compat[cp] = d
        if not (0xD800 <= cp <= 0xDFFF):
            low = ch.lower()
            if low != ch:
                p |= HAS_LOWER
                lower[cp] = [ord(c) for c in low]
        gcb = incb = 0
        newer = cat16[cp] == "Cn" and assigned[cp]  # assigned after Unicode 16.0
        for k, v in enumerate(GCB_VALUES[1:], start=1):
            if gcb_sets[v][cp] and not newer:
                gcb = k
        p |= gcb << GCB_SHIFT
        for k, v in enumerate(INCB_VALUES[1:], start=1):
            if incb_sets[v][cp] and not newer:
                incb = k
        p |= incb << INCB_SHIFT
        if ext_pict[cp]:
            p |= EXT_PICT
        if is_chinese(cp):
            p |= CHINESE
        props[cp] = p

    # Canonical compositions (Unicode 9.0): pairs (a, b) -> c for primary composites, found as
    # the code points whose two-element canonical mapping recomposes under NFC.
    compositions = {}
    for cp in range(MAX):
        if not in9[cp] or 0xAC00 <= cp <= 0xD7A3:
            continue
        dec = unicodedata.decomposition(chr(cp))
        if not dec or dec.startswith("<"):
            continue
        parts = [int(x, 16) for x in dec.split()]
        if len(parts) != 2:
            continue
        if unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
            compositions[(parts[0], parts[1])] = cp
    for (a, b) in compositions:
        props[a] |= COMPOSES
        props[b] |= COMPOSES
    # Hangul jamo compose algorithmically; mark them so NFC looks at them.
    for cp in list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3)):
        props[cp] |= COMPOSES
    for cp in range(0xAC00, 0xD7A4):
        props[cp] |= COMPOSES

    # Two-level table with deduplicated blocks.
    blocks, block_index, stage1 = [], {}, []
    for start in range(0, MAX, BLOCK):
        blk = tuple(props[start:start + BLOCK])
        if blk not in block_index:
            block_index[blk] = len(blocks)
            blocks.append(blk)
        stage1.append(block_index[blk])
    assert len(blocks) < 65536

    def mapping_table(name, table):
        pool, entries = [], []
        for cp in sorted(table):
            seq = table[cp]
            entries.append((cp, len(pool), len(seq)))
            pool.extend(seq)
        lines = [f"const char32_t k{name}Pool[] = {{"]
        lines += wrap([f"0x{x:X}" for x in pool], per_line=48)
        lines.append("};")
        lines.append(f"const Mapping k{name}[] = {{")
        lines += wrap([f"{{0x{cp:X}, {off}, {n}}}" for cp, off, n in entries], per_line=24)
        lines.append("};")
        lines.append(f"const std::size_t k{name}Count = {len(entries)};")
        return lines

    head = [
        "// clang-format off",
        "// GENERATED by tools/gen_unicode_tables.py -- do not edit; rerun the script instead.",
        f"// Sources: Python {sys.version.split()[0]} unicodedata {unicodedata.unidata_version}, "
        f"unicodedata2 8.0.0, 9.0.0, 16.0.0 databases, regex module {regex.__version__}.",
        "// Versions follow what Hugging Face tokenizers 0.20.3 uses; see the script's docstring.",
        "",
        '#include "tokenizer/unicode.h"',
        "",
        "namespace mcinfer::tokenizer::unicode::tables {",
        "",
    ]
    tail = ["", "}  // namespace mcinfer::tokenizer::unicode::tables"]
    out = head + [f"const std::uint16_t kStage1[{len(stage1)}] = {{"]
    out += wrap([str(x) for x in stage1], per_line=48)
    out.append("};")
    out.append(f"const std::uint32_t kStage2[{len(blocks) * BLOCK}] = {{")
    flat = [f"0x{x:X}" for blk in blocks for x in blk]
    out += wrap(flat, per_line=48)
    out.append("};")
    OUT_PROPERTIES.write_text("\n".join(out + tail) + "\n")
    out = list(head)
    out += mapping_table("Canonical", canon)
    out += mapping_table("Compat", compat)
    out += mapping_table("Lower", lower)
    comp = sorted(((a << 21) | b, c) for (a, b), c in compositions.items())
    out.append("const Composition kCompositions[] = {")
    out += wrap([f"{{0x{k:X}ULL, 0x{c:X}}}" for k, c in comp], per_line=10)
    out.append("};")
    out.append(f"const std::size_t kCompositionCount = {len(comp)};")
    OUT_MAPPINGS.write_text("\n".join(out + tail) + "\n")
    print(f"wrote {OUT_PROPERTIES} and {OUT_MAPPINGS}: {len(blocks)} blocks of {BLOCK}, {len(canon)} canonical, {len(compat)} "
          f"compat, {len(lower)} lowercase mappings, {len(comp)} compositions")


def wrap(items, per_line=16):
    return ["  " + ", ".join(items[i:i + per_line]) + "," for i in range(0, len(items), per_line)]


if __name__ == "__main__":
    main()
