#!/usr/bin/env python3
"""Writes the DeBERTa-v2 / v3 tokenizer fixtures (model_type "deberta-v2": a SentencePiece Unigram
model, [CLS] A [SEP] B [SEP]) and the ids both reference stacks give for them on the tokenizer
corpus.

The SentencePiece model is trained here with the `sentencepiece` package on corpus.txt (3,000
pieces, character coverage 0.98) and laid out as microsoft/deberta-v3-base's spm.model is:
[PAD] 0 (pad), [CLS] 1 (bos), [SEP] 2 (eos), [UNK] 3 (unk); [MASK] is not a piece, so the
tokenizer adds it after the vocabulary (3000 here, 128000 in DeBERTa-v3). One user-defined piece,
"://", shows how the stacks treat those. The normalizer is nmt_nfkc (DeBERTa's) restricted to the
rules that can fire on the test texts (every single-character rule of a character of the corpus,
the byte cases or their lowercase, every longer rule that occurs in them): the script checks that
it normalizes every such text as the full nmt_nfkc does, with a charsmap of a few KB instead of
240.

tests/fixtures/tokenizer/models/:
- deberta_json: tokenizer.json + tokenizer_config.json saved by transformers 5's
  DebertaV2Tokenizer (Precompiled, Strip right, Replace " {2,}"; Metaspace; TemplateProcessing);
- deberta_spm: spm.model + tokenizer_config.json + special_tokens_map.json + added_tokens.json saved
  by transformers 4.46's (slow) DebertaV2Tokenizer, the legacy layout of DeBERTa checkpoints;
- deberta_v3_spm: spm.model + tokenizer_config.json {"do_lower_case": false, "vocab_type": "spm"}
  + a config.json naming model_type only: microsoft/deberta-v3-*'s own layout;
- deberta_tf4_json: tokenizer.json + tokenizer_config.json + special_tokens_map.json saved by
  transformers 4.46's DebertaV2TokenizerFast (its converter's pipeline: Strip both sides before
  Precompiled);
- deberta_lower_punct_spm, deberta_lower_punct_json: as deberta_spm and deberta_json with
  do_lower_case and split_by_punct (Lowercase first; a Punctuation pre-tokenizer before Metaspace);
- deberta_identity_spm: as deberta_spm over the same pieces with no charsmap (what
  --normalization_rule_name=identity writes), which takes transformers 5's other normalizer:
  Replace(\s{2,}|[\n\r\t] -> " "), NFC, Strip right.

tests/fixtures/tokenizer/expected/deberta/:
- variants.tsv: the set each directory gives under transformers 5.25 (AutoTokenizer), which
  `--tokenizer-compat transformers5` must reproduce; variants_file.tsv: the set under
  transformers 4.46 / tokenizers 0.20.3 (AutoTokenizer, a fast tokenizer: tokenizer.json as it is,
  or spm.model through DebertaV2Converter), which `--tokenizer-compat file` must reproduce. Where
  a tokenizer.json exists, the 4.46 ids are checked against tokenizers.Tokenizer.from_file, and
  transformers 5's against it for the files transformers 5 wrote.
- <set>.tsv: records in the format of tools/gen_tokenizer_fixtures.py. A set that differs from
  an earlier one in under half its records is written as "@base<TAB><set>" followed by only its
  own records (same kind and key: they replace the base's); the parity test reads it that way.
  This keeps expected/deberta/ near 1.5 MB instead of about 5 MB.

Differences between the stacks (on this corpus; the script prints the counts of differing
records, 0 to ~1,500 of 7,823 per directory):
- transformers 5 builds the pipeline from the DebertaV2Tokenizer class whatever the files say:
  Precompiled then Strip(right only) where 4.46's converter strips both sides before Precompiled,
  so a text ending in a character the charsmap maps to a space (U+200E, U+FEFF, U+200C) gets a
  final "▁" token in 4.46 and none in 5; this holds for a 4.46 tokenizer.json too.
- [UNK] is an added token with normalized=true in 4.46 (the slow class makes it so, and saves it
  so in tokenizer_config.json); transformers 5 makes it normalized=false unless the files say
  otherwise. With normalized=true the text before a literal "[UNK]" keeps its trailing space as a
  "▁" token. So deberta_v3_spm (no added_tokens_decoder) differs from deberta_spm under 5.
- 4.46's converter registers user-defined pieces ("://") as added tokens, matched on the raw text
  before the Metaspace; transformers 5 leaves them to the Unigram model (unless the
  tokenizer_config.json 4.46's fast tokenizer saved lists them, as deberta_tf4_json's does).
- tokenizers 0.23 names a normalized added token by its normalized content in
  convert_ids_to_tokens ("[unk]" under do_lower_case); 0.20.3 by its content ("[UNK]").
- Without a charsmap, 4.46 keeps Strip + Replace(" {2,}"); 5 replaces every run of whitespace and
  every tab or line break, applies NFC and strips the right only.
- Lowercasing: tokenizers 0.23 knows the newer Unicode case pairs (deberta_lower_punct_json).
- transformers 4.46's slow DebertaV2Tokenizer (sentencepiece itself: its own normalizer and
  whitespace handling, split_by_punct by its own rule on its pieces) differs from its fast
  tokenizer on 469 of 5,283 corpus lines (cased) and 3,311 (do_lower_case + split_by_punct).
  AutoTokenizer returns the fast one, which mcinfer follows; the slow one is not reproduced.

Regenerate (both venvs of tools/venv.sh):
  tools/venv.sh && tools/venv.sh --legacy && .venv/bin/python tools/gen_deberta_tokenizers.py
Idempotent: training is deterministic (one thread, fixed seed); rewrites the seven model
directories and expected/deberta/. The script re-runs itself under .venv-legacy/bin/python for
the transformers 4.46 steps (--legacy-step).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import tokenizers  # noqa: E402
import transformers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_tokenizer_fixtures import (EXPECTED, MODELS, ROOT, expected_records, minify,  # noqa: E402
                                    read_corpus, write_manifest)

OUT = EXPECTED / "deberta"
LEGACY_PYTHON = ROOT / ".venv-legacy/bin/python"
VOCAB_SIZE = 3000
COVERAGE = 0.98  # the corpus has ~8,000 distinct characters; 0.98 keeps 3,000 pieces possible
# A user-defined piece that occurs in the corpus (URLs): transformers 4 splits it out as an added
# token, transformers 5 leaves it to the Unigram model.
USER_DEFINED = ["://"]
CASED = {"do_lower_case": False, "split_by_punct": False}
LOWER_PUNCT = {"do_lower_case": True, "split_by_punct": True}
VARIANTS = ["deberta_json", "deberta_spm", "deberta_v3_spm", "deberta_tf4_json",
            "deberta_lower_punct_json", "deberta_lower_punct_spm", "deberta_identity_spm"]
# Sets written whole; each other set is written against the earlier set closest to it.
FULL_SETS = ("tf5_deberta_json", "tf5_deberta_lower_punct_json")


# ---- the SentencePiece model ---------------------------------------------------------------

def charsmap_rules(charsmap: bytes) -> dict[bytes, bytes]:
    """Every rule of a compiled SentencePiece charsmap: source bytes -> replacement bytes.

    The charsmap is a uint32 trie size, a darts-clone double array (which shares suffixes, so it
    is walked as a graph) and the NUL-terminated replacements its leaf values index."""
    size = struct.unpack_from("<I", charsmap)[0]
    units = struct.unpack_from(f"<{size // 4}I", charsmap, 4)
    blob = charsmap[4 + size:]

    def offset(u: int) -> int:
        return (u >> 10) << ((u & (1 << 9)) >> 6)

    rules: dict[bytes, bytes] = {}
    stack: list[tuple[int, bytes]] = [(0, b"")]
    while stack:
        node, key = stack.pop()
        base = node ^ offset(units[node])
        if key and (units[node] >> 8) & 1:
            value = units[base] & ((1 << 31) - 1)
            rules[key] = blob[value:blob.index(b"\0", value)]
        for byte in range(1, 256):
            child = base ^ byte
            if child < len(units) and units[child] & ((1 << 31) | 0xFF) == byte:
                stack.append((child, key + bytes([byte])))
    return rules


def corpus_texts(lines: list[str], cases: list[bytes]) -> list[str]:
    """Every text a normalizer sees in the tests: corpus lines and byte cases, and their lowercase
    (Python's, and char by char as the Lowercase normalizer does it)."""
    texts = lines + [c.decode("utf-8", "replace") for c in cases]
    return texts + [t.lower() for t in texts] + ["".join(ch.lower() for ch in t) for t in texts]


def restricted_rules(rules: dict[bytes, bytes], texts: list[str]) -> str:
    """The rules that can fire on `texts`, as a normalization_rule_tsv."""
    alphabet = set("".join(texts))
    joined = "\n".join(texts)
    out = []
    for key, value in sorted(rules.items()):
        src = key.decode("utf-8")
        if (len(src) == 1 and src in alphabet) or (len(src) > 1 and src in joined):
            out.append(" ".join(f"{ord(c):X}" for c in src) + "\t" +
                       " ".join(f"{ord(c):X}" for c in value.decode("utf-8")))
    return "\n".join(out) + "\n"


def train(lines: list[str], rules_tsv: Path | None) -> bytes:
    import sentencepiece as spm
    model = io.BytesIO()
    extra = {"normalization_rule_tsv": str(rules_tsv)} if rules_tsv else {}
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=VOCAB_SIZE, model_type="unigram",
        character_coverage=COVERAGE, pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]",
        bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]", user_defined_symbols=USER_DEFINED,
        num_threads=1, hard_vocab_limit=False, seed_sentencepiece_size=200000, minloglevel=2, **extra)
    return model.getvalue()


def train_spm(lines: list[str], cases: list[bytes], tmp: Path) -> tuple[bytes, bytes]:
    """The model, and the same pieces with no normalizer (what --normalization_rule_name=identity
    writes: no precompiled_charsmap), which sends transformers 5 down its other pipeline."""
    from sentencepiece import sentencepiece_model_pb2 as pb
    from tokenizers import normalizers

    full = pb.ModelProto()
    full.ParseFromString(train(lines, None))
    texts = corpus_texts(lines, cases)
    rules = tmp / "rules.tsv"
    rules.write_text(restricted_rules(charsmap_rules(full.normalizer_spec.precompiled_charsmap), texts),
                     encoding="utf-8")
    small = pb.ModelProto()
    small.ParseFromString(train(lines, rules))
    # The scratch path the trainer records is not part of the model.
    small.normalizer_spec.ClearField("normalization_rule_tsv")
    a = normalizers.Precompiled(full.normalizer_spec.precompiled_charsmap)
    b = normalizers.Precompiled(small.normalizer_spec.precompiled_charsmap)
    for t in texts:
        assert a.normalize_str(t) == b.normalize_str(t), ("restricted charsmap differs on", t)
    assert [p.piece for p in small.pieces] == [p.piece for p in full.pieces], "pieces changed"
    identity = pb.ModelProto()
    identity.CopyFrom(small)
    identity.normalizer_spec.name = "identity"
    identity.normalizer_spec.ClearField("precompiled_charsmap")
    return small.SerializeToString(), identity.SerializeToString()


# ---- the model directories -----------------------------------------------------------------

def fresh(name: str) -> Path:
    d = MODELS / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def keep_only(d: Path, names: list[str]) -> None:
    for p in d.iterdir():
        if p.name not in names:
            p.unlink()
    missing = [n for n in names if not (d / n).exists()]
    assert not missing, (d, missing)


def save_tf5(name: str, spm_model: bytes, flags: dict[str, bool], tmp: Path) -> None:
    from transformers import DebertaV2Tokenizer
    src = tmp / f"src_{name}"
    src.mkdir()
    (src / "spm.model").write_bytes(spm_model)
    (src / "tokenizer_config.json").write_text(json.dumps(flags))
    d = fresh(name)
    DebertaV2Tokenizer.from_pretrained(str(src)).save_pretrained(str(d))
    keep_only(d, ["tokenizer.json", "tokenizer_config.json"])
    minify(d)


def save_v3_layout(spm_model: bytes) -> None:
    d = fresh("deberta_v3_spm")
    (d / "spm.model").write_bytes(spm_model)
    (d / "tokenizer_config.json").write_text('{"do_lower_case": false, "vocab_type": "spm"}\n')
    (d / "config.json").write_text('{"model_type": "deberta-v2"}\n')


def legacy_step(spm_path: Path, identity_path: Path, records_out: Path) -> None:
    """Under transformers 4.46: the legacy directories and every variant's ids as 4.46 reads it."""
    from transformers import AutoTokenizer, DebertaV2Tokenizer, DebertaV2TokenizerFast
    assert transformers.__version__.startswith("4."), "the legacy step runs under .venv-legacy"
    legacy_files = ["spm.model", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"]
    for name, model, flags in [("deberta_spm", spm_path, CASED), ("deberta_lower_punct_spm", spm_path, LOWER_PUNCT),
                               ("deberta_identity_spm", identity_path, CASED)]:
        d = fresh(name)
        DebertaV2Tokenizer(vocab_file=str(model), **flags).save_pretrained(str(d))
        keep_only(d, legacy_files)
    d = fresh("deberta_tf4_json")
    DebertaV2TokenizerFast.from_pretrained(str(MODELS / "deberta_spm")).save_pretrained(str(d), legacy_format=False)
    keep_only(d, ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"])
    minify(d)

    lines, cases = read_corpus()
    records = {v: expected_records(MODELS / v, lines, cases, check_file=True) for v in VARIANTS}
    notes = []
    for v in ["deberta_spm", "deberta_lower_punct_spm"]:
        fast = AutoTokenizer.from_pretrained(str(MODELS / v))
        slow = AutoTokenizer.from_pretrained(str(MODELS / v), use_fast=False)
        differ = sum(1 for t in lines if fast(t)["input_ids"] != slow(t)["input_ids"])
        notes.append(f"{v}: transformers {transformers.__version__}'s slow DebertaV2Tokenizer differs from "
                     f"its fast one on {differ} of {len(lines)} corpus lines")
    records_out.write_text(json.dumps({"records": records, "notes": notes,
                                       "versions": [transformers.__version__, tokenizers.__version__]}))


# ---- the expected sets ---------------------------------------------------------------------

def record_key(rec: str) -> tuple[str, str]:
    kind, key = rec.split("\t", 2)[:2]
    return kind, key


def delta(recs: list[str], base: list[str]) -> list[str]:
    assert [record_key(r) for r in recs] == [record_key(r) for r in base]
    return [r for r, b in zip(recs, base) if r != b]


def write_sets(sets: dict[str, list[str]], headers: dict[str, str]) -> None:
    """Writes each set whole (FULL_SETS) or against the earlier set it differs least from, when
    that halves it at least; a chain of bases stays shorter than the parity test's limit (4)."""
    depth: dict[str, int] = {}
    for name in list(FULL_SETS) + [s for s in sets if s not in FULL_SETS]:
        recs = sets[name]
        body = recs
        depth[name] = 0
        if name not in FULL_SETS:
            earlier = [s for s in depth if s != name and depth[s] < 3]
            base = min(earlier, key=lambda s: len(delta(recs, sets[s])))
            own = delta(recs, sets[base])
            if len(own) * 2 < len(recs):
                body = [f"@base\tdeberta/{base}"] + own
                depth[name] = depth[base] + 1
        (OUT / f"{name}.tsv").write_text(headers[name] + "\n".join(body) + "\n", encoding="utf-8")
        print(f"{name}: {len(recs)} records, {len(body)} written")


def assign(records: dict[str, list[str]], prefix: str, sets: dict[str, list[str]]) -> list[str]:
    """Each variant's set: an existing one with the same records (of either stack), else a new one."""
    manifest = []
    for v in VARIANTS:
        name = next((s for s, r in sets.items() if r == records[v]), None)
        if name is None:
            name = f"{prefix}{v}"
            sets[name] = records[v]
        manifest.append(f"{v}\tdeberta/{name}")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--legacy-step", nargs=3, metavar=("SPM_MODEL", "IDENTITY_MODEL", "RECORDS_JSON"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.legacy_step:
        legacy_step(*[Path(a) for a in args.legacy_step])
        return
    assert int(transformers.__version__.split(".")[0]) >= 5, "run with the current stack (.venv)"
    from transformers import AutoTokenizer
    lines, cases = read_corpus()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        spm_model, identity_model = train_spm(lines, cases, tmp)
        save_tf5("deberta_json", spm_model, CASED, tmp)
        save_tf5("deberta_lower_punct_json", spm_model, LOWER_PUNCT, tmp)
        save_v3_layout(spm_model)
        (tmp / "spm.model").write_bytes(spm_model)
        (tmp / "identity.model").write_bytes(identity_model)
        subprocess.check_call([str(LEGACY_PYTHON), __file__, "--legacy-step", str(tmp / "spm.model"),
                               str(tmp / "identity.model"), str(tmp / "legacy.json")])
        legacy = json.loads((tmp / "legacy.json").read_text())
    assert AutoTokenizer.from_pretrained(str(MODELS / "deberta_spm")).mask_token_id == VOCAB_SIZE

    # transformers 5 reads the files it wrote as they are; the others it rebuilds.
    own = {"deberta_json", "deberta_lower_punct_json"}
    tf5 = {v: expected_records(MODELS / v, lines, cases, check_file=v in own) for v in VARIANTS}
    sets: dict[str, list[str]] = {}
    manifest5 = assign(tf5, "tf5_", sets)
    manifest4 = assign(legacy["records"], "file_", sets)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    v5 = f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}"
    v4 = f"transformers {legacy['versions'][0]}, tokenizers {legacy['versions'][1]}"
    headers = {s: f"# generated by tools/gen_deberta_tokenizers.py with {v5 if s.startswith('tf5_') else v4}; "
                  f"format: tools/gen_tokenizer_fixtures.py\n" for s in sets}
    write_sets(sets, headers)
    write_manifest(OUT / "variants.tsv", f"expected set under {v5}", manifest5)
    write_manifest(OUT / "variants_file.tsv", f"expected set under {v4} (the files as they are)", manifest4)
    for v in VARIANTS:
        differ = len(delta(tf5[v], legacy["records"][v]))
        print(f"{v}: {differ} of {len(tf5[v])} records differ between the stacks")
    for note in legacy["notes"]:
        print(note)


if __name__ == "__main__":
    main()
