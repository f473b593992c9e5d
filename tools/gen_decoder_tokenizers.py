#!/usr/bin/env python3
"""Writes the tokenizers of the decoder-style embedders (issue 46) as transformers 5 saves them from
their own classes, the ids transformers 5 gives for them on the tokenizer corpus, and what
tokenizers' Split pre-tokenizer does with a set of patterns:

- tests/fixtures/tokenizer/models/qwen2_json: Qwen3-Embedding's layout. Qwen2Tokenizer (NFC, Split
  with Qwen2's regex, behavior Isolated, then ByteLevel without its regex, byte-level BPE) over a
  byte-level BPE trained here on the corpus, <|endoftext|> <|im_start|> <|im_end|> added after the
  vocabulary, the post-processor appending <|endoftext|> to each sequence as Qwen3-Embedding's
  tokenizer.json does (tokenizer_config.json names no add_eos_token, so transformers 5 keeps the
  file's post-processor), eos_token <|im_end|>, pad_token <|endoftext|>, padding_side left.
- tests/fixtures/tokenizer/models/gemma_json: EmbeddingGemma's layout. GemmaTokenizer (Replace ' ' ->
  '\u2581', Split on ' ' merged with the previous piece, BPE with byte fallback over <0x00>..<0xFF>
  and <unk>) over a BPE trained here on the corpus with a small alphabet (so rare characters fall
  back to bytes), the post-processor adding <bos> and <eos> around each sequence (transformers 5
  takes it from tokenizer.json and ignores tokenizer_config.json's add_bos_token / add_eos_token
  when there is one), no padding_side (GemmaTokenizer's own is left).

For each, tests/fixtures/tokenizer/expected/decoders/<variant>.tsv holds transformers 5's ids in the
record format of tools/gen_tokenizer_fixtures.py, checked against tokenizers' Tokenizer.from_file
of the saved tokenizer.json; expected/decoders/variants.tsv lists them.

tests/fixtures/tokenizer/split_cases.jsonl: one line per (pattern, behavior, invert, text) with
the pieces tokenizers' Split gives (pre_tokenize_str), for every behavior and both inverts.

tests/fuzz/corpus/fuzz_tokenizer_files/split_*: seeds for the tokenizer.json parser (selector byte 0):
small tokenizers of both layouts trained on a few of the corpus's lines, Split with each behavior,
and a pattern that backtracks catastrophically (it must be refused, not left running).

Reproducibility: the Qwen2 model comes out byte-identical on every run; the Gemma one's BPE trainer
(a limited alphabet) breaks ties in hash-map order, so its vocabulary can differ between runs. Models
and expected ids are always written together, so the tests stay consistent.

Regenerate: tools/venv.sh && .venv/bin/python tools/gen_decoder_tokenizers.py
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import GemmaTokenizer, Qwen2Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_tokenizer_fixtures import (EXPECTED, FIX, MODELS, ROOT, expected_records, minify, read_corpus,  # noqa: E402
                                    write_expected, write_manifest)

assert int(transformers.__version__.split(".")[0]) >= 5, "run with the current stack (.venv)"
OUT = EXPECTED / "decoders"
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
VOCAB_SIZE = 3000


def save(name: str, cls: type, files: dict[str, str]) -> Path:
    """cls.from_pretrained of a directory holding `files`, saved by save_pretrained as models/name."""
    out = MODELS / name
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        for file, data in files.items():
            (Path(tmp) / file).write_text(data, encoding="utf-8")
        cls.from_pretrained(tmp).save_pretrained(out)
    minify(out)
    return out


def qwen2_files(lines: list[str]) -> dict[str, str]:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer)
    tok.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    eot = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A:0 <|endoftext|>:0", pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
        special_tokens=[("<|endoftext|>", eot)])
    config = {"tokenizer_class": "Qwen2Tokenizer", "add_prefix_space": False, "bos_token": None,
              "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
              "errors": "replace", "model_max_length": 32768, "padding_side": "left",
              "split_special_tokens": False, "clean_up_tokenization_spaces": False}
    return {"tokenizer.json": tok.to_str(), "tokenizer_config.json": json.dumps(config)}


def gemma_files(lines: list[str]) -> dict[str, str]:
    """A BPE trained on the corpus with '\u2581' for spaces, then laid out as Gemma's vocabulary is:
    <pad> <eos> <bos> <unk> <mask>, the 256 byte tokens, the trained pieces."""
    trained = Tokenizer(models.BPE())
    trained.normalizer = normalizers.Replace(" ", "\u2581")
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, limit_alphabet=200)
    trained.train_from_iterator(lines, trainer)
    model = json.loads(trained.to_str())["model"]
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    pieces = specials + [f"<0x{b:02X}>" for b in range(256)]
    pieces += [p for p, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1]) if p not in pieces]
    vocab = {p: i for i, p in enumerate(pieces)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m) for m in model["merges"]], unk_token="<unk>",
                               fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens(specials)
    # transformers 5 reads add_bos_token / add_eos_token only without a tokenizer.json: the file's
    # post-processor says what is added.
    tok.post_processor = processors.TemplateProcessing(
        single="<bos>:0 $A:0 <eos>:0", pair="<bos>:0 $A:0 <eos>:0 <bos>:1 $B:1 <eos>:1",
        special_tokens=[("<bos>", vocab["<bos>"]), ("<eos>", vocab["<eos>"])])
    config = {"tokenizer_class": "GemmaTokenizer", "bos_token": "<bos>", "eos_token": "<eos>",
              "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": "<mask>", "model_max_length": 2048,
              "clean_up_tokenization_spaces": False}
    return {"tokenizer.json": tok.to_str(), "tokenizer_config.json": json.dumps(config)}


SPLIT_PATTERNS = [
    {"Regex": QWEN2_REGEX}, {"String": " "}, {"String": "ab"}, {"Regex": r"\s+"}, {"Regex": r"\s*"},
    {"Regex": r"a*"}, {"Regex": r"\w+|[^\w\s]+"}, {"Regex": r"\d"}, {"Regex": r"(?i:k)"},
    {"Regex": r"\b"}, {"Regex": r"[\p{P}\p{S}]"}, {"Regex": r"\p{Lu}\p{Ll}*"}, {"Regex": r"$"},
    {"Regex": r"^\s"}, {"Regex": r"\h+"}, {"Regex": r"(?m:a.b)"}, {"Regex": r"x|"}, {"Regex": r"\S+"},
]
SPLIT_TEXTS = [
    "Hello, world!", "  leading and trailing  ", "DON'T you're I'LL we'Ve", "a\r\n\r\nb\n\n  c \r\n",
    "aaa b aab  ab", "\u4f60\u597d\u4e16\u754c 123\uff14\uff15 \u0661\u0662", "e\u0301t\u00e9 caf\u00e9",
    "emoji \U0001F600\U0001F44D\U0001F3FD x", "tab\tsep\u00a0nbsp\u180emvs\u3000ideo", "k K \u212a",
    "a\nb", "x", "deadBEEF 0x1f", "   ", "A\u2581b", "\u00b2\u00bd \u2163 \u24b6",
]


def split_cases() -> list[str]:
    out = []
    for pattern in SPLIT_PATTERNS:
        compiled = Regex(pattern["Regex"]) if "Regex" in pattern else pattern["String"]
        for behavior in ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]:
            for invert in (False, True):
                split = pre_tokenizers.Split(compiled, behavior=behavior, invert=invert)
                name = json.loads(split.__getstate__())["behavior"]
                for text in SPLIT_TEXTS:
                    pieces = [p for p, _ in split.pre_tokenize_str(text)]
                    out.append(json.dumps({"pattern": pattern, "behavior": name, "invert": invert,
                                           "text": text, "pieces": pieces}, ensure_ascii=False))
    return out


def fuzz_seeds(lines: list[str]) -> None:
    out = ROOT / "tests/fuzz/corpus/fuzz_tokenizer_files"
    small = lines[:200]
    qwen = json.loads(qwen2_files(small)["tokenizer.json"])
    gemma = json.loads(gemma_files(small)["tokenizer.json"])
    for tok in (qwen, gemma):  # keep the seeds small: the first 300 pieces and the merges among them
        vocab = {p: i for p, i in tok["model"]["vocab"].items() if i < 300}
        tok["model"]["vocab"] = vocab
        tok["model"]["merges"] = [m for m in tok["model"]["merges"] if "".join(m) in vocab][:200]
        tok["added_tokens"] = []
        tok["post_processor"] = None
    seeds = {"split_qwen2": qwen, "split_gemma": gemma}
    for behavior in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        seed = json.loads(json.dumps(gemma))
        seed["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": r"\s+|\p{P}"}, "behavior": behavior,
                                 "invert": behavior == "Contiguous"}
        seeds[f"split_{behavior.lower()}"] = seed
    catastrophic = json.loads(json.dumps(gemma))
    catastrophic["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": r"(\w+\s?)+\d"}, "behavior": "Isolated"}
    seeds["split_catastrophic"] = catastrophic
    for name, tok in seeds.items():
        (out / name).write_bytes(b"\x00" + json.dumps(tok, ensure_ascii=False, separators=(",", ":")).encode())


def main() -> None:
    lines, cases = read_corpus()
    dirs = {
        "qwen2_json": save("qwen2_json", Qwen2Tokenizer, qwen2_files(lines)),
        "gemma_json": save("gemma_json", GemmaTokenizer, gemma_files(lines)),
    }
    header = (f"# generated by tools/gen_decoder_tokenizers.py with transformers {transformers.__version__}, "
              f"tokenizers {tokenizers.__version__}; format: tools/gen_tokenizer_fixtures.py\n")
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = []
    for variant, d in dirs.items():
        recs = expected_records(d, lines, cases, check_file=True)
        write_expected(OUT, variant, recs, header)
        manifest.append(f"{variant}\tdecoders/{variant}")
        print(f"{variant}: {len(recs)} records")
    write_manifest(OUT / "variants.tsv", "expected set (transformers 5 and tokenizers' reading of the file agree)",
                   manifest)
    cases_out = split_cases()
    (FIX / "split_cases.jsonl").write_text("\n".join(cases_out) + "\n", encoding="utf-8")
    print(f"split cases: {len(cases_out)}")
    fuzz_seeds(lines)


if __name__ == "__main__":
    main()
