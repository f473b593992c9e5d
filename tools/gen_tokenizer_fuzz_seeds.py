#!/usr/bin/env python3
"""Writes the seed corpora of the tokenizer fuzz targets (tests/fuzz/corpus/<target>/):

  fuzz_tokenizer_encode  texts from the committed corpus and byte cases, behind the 3 header
                         bytes the target reads (tokenizer, pair flag, max_length, pair split)
  fuzz_tokenizer_files   small tokenizer files of every supported kind behind the 1 selector
                         byte: tokenizer.json (WordPiece, byte-level BPE, Unigram with a
                         Precompiled normalizer), vocab.txt, vocab.json + NUL + merges.txt, a
                         SentencePiece .model (trained with spm_train on a few sentences, with
                         a tiny normalization rule set so the charsmap stays small) and
                         tokenizer_config.json.

Seeded and reproducible. Usage: .venv-legacy/bin/python tools/gen_tokenizer_fuzz_seeds.py
"""
import json
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import XLMRobertaTokenizer, XLMRobertaTokenizerFast

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests/fixtures/tokenizer"
OUT = ROOT / "tests/fuzz/corpus"

SENTENCES = [
    "Hello world, this is a small test.", "Ünïcödé wörds and café au lait!", "don't stop 'til you're done",
    "Привет мир", "你好世界 中文", "こんにちは 世界", "안녕하세요", "١٢٣ مرحبا", "emoji 😀👍🏽 and ZWJ 👩‍💻",
    "Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ", "tabs\tand  spaces   here", "numbers 12345 3.14", "[MASK] <mask> <s> </s>",
]


def write(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def encode_seeds(rng):
    lines = (FIX / "corpus.txt").read_bytes()[:-1].split(b"\n")
    cases = [bytes.fromhex(h) for h in (FIX / "byte_cases.txt").read_text().split("\n")[:-1]]
    picks = rng.sample(range(len(lines)), 48)
    for k, i in enumerate(picks):
        header = bytes([(k % 16) | (16 if k % 3 == 0 else 0), [0, 3, 5, 16, 64][k % 5], rng.randrange(256)])
        write("fuzz_tokenizer_encode", f"line{i:05d}", header + lines[i][:400])
    for k, c in enumerate(cases[:24]):
        write("fuzz_tokenizer_encode", f"bytes{k:03d}", bytes([k % 16, 0, 128]) + c[:400])


def tiny_wordpiece():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=20))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(SENTENCES, trainers.WordPieceTrainer(
        vocab_size=120, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok


def tiny_bpe():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(SENTENCES, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok.decoder = decoders.ByteLevel()
    return tok


def tiny_spm(tmp):
    inp = Path(tmp) / "train.txt"
    inp.write_text("\n".join(SENTENCES * 20) + "\n", encoding="utf-8")
    rules = Path(tmp) / "rules.tsv"
    # A handful of NFKC-like rules keeps the compiled charsmap small.
    rules.write_text("FF21\t41\nFF41\t61\nFB01\t66 69\n3000\t20\n2460\t31\n", encoding="utf-8")
    prefix = Path(tmp) / "spm"
    subprocess.check_call(["spm_train", f"--input={inp}", f"--model_prefix={prefix}", "--vocab_size=120",
                           "--model_type=unigram", f"--normalization_rule_tsv={rules}",
                           "--hard_vocab_limit=false", "--num_threads=1", "--minloglevel=2",
                           "--user_defined_symbols=<custom>"])
    return Path(str(prefix) + ".model")


def files_seeds(rng):
    write("fuzz_tokenizer_files", "wordpiece_json", b"\x00" + tiny_wordpiece().to_str().encode())
    bpe = tiny_bpe()
    write("fuzz_tokenizer_files", "bpe_json", b"\x00" + bpe.to_str().encode())
    # A fixed path: spm_train records its input path in the model.
    tmp = str(Path(tempfile.gettempdir()) / "mcinfer-tokenizer-seeds")
    shutil.rmtree(tmp, ignore_errors=True)
    Path(tmp).mkdir(parents=True)
    vocab, merges = bpe.model.save(tmp)
    write("fuzz_tokenizer_files", "bpe_files",
          b"\x02" + Path(vocab).read_bytes() + b"\x00" + Path(merges).read_bytes())
    model = tiny_spm(tmp)
    write("fuzz_tokenizer_files", "spm_model", b"\x03" + model.read_bytes())
    slow = XLMRobertaTokenizer(vocab_file=str(model))
    slow.save_pretrained(tmp + "/xlmr")
    fast = XLMRobertaTokenizerFast.from_pretrained(tmp + "/xlmr")
    data = json.loads(fast.backend_tokenizer.to_str())
    write("fuzz_tokenizer_files", "unigram_json", b"\x00" + json.dumps(data).encode())
    # Older XLM-R layout: WhitespaceSplit + Metaspace(add_prefix_space) and NFKC/Lowercase.
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"},
        {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}]}
    data["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
        {"type": "StripAccents"}, {"type": "Strip", "strip_left": True, "strip_right": True}]}
    write("fuzz_tokenizer_files", "unigram_json_old", b"\x00" + json.dumps(data).encode())
    # DeBERTa-v2 (selector bytes: 0x44 = spm.model as files, 0xC6 = as transformers 5 rebuilds it,
    # 0xC3 = its tokenizer.json with transformers 5's DeBERTa rebuild): the same tiny model.
    write("fuzz_tokenizer_files", "deberta_spm", b"\x44" + model.read_bytes())
    write("fuzz_tokenizer_files", "deberta_spm_tf5", b"\xc6" + model.read_bytes())
    deberta_json = (FIX / "models/deberta_lower_punct_json/tokenizer.json").read_bytes()
    write("fuzz_tokenizer_files", "deberta_json_tf5", b"\xc3" + deberta_json)
    vocab_txt = (FIX / "models/wp_uncased_vocab/vocab.txt").read_bytes().split(b"\n")[:150]
    write("fuzz_tokenizer_files", "vocab_txt", b"\x01" + b"\n".join(vocab_txt) + b"\n")
    for k, cfg in enumerate([
        {"do_lower_case": False, "tokenize_chinese_chars": False, "model_max_length": 128},
        {"do_basic_tokenize": False, "unk_token": "[UNK]", "pad_token": {"content": "[PAD]", "lstrip": True}},
        {"strip_accents": True, "added_tokens_decoder": {"5": {"content": "hello", "special": False, "normalized": True,
                                                                "lstrip": False, "rstrip": True, "single_word": True}}},
    ]):
        write("fuzz_tokenizer_files", f"config{k}", b"\x04" + json.dumps(cfg).encode())


def main():
    rng = random.Random(20261130)
    for target in ["fuzz_tokenizer_encode", "fuzz_tokenizer_files"]:
        # Inputs that once crashed (regress_*) are kept; the rest is regenerated.
        for f in (OUT / target).glob("*") if (OUT / target).exists() else []:
            if not f.name.startswith("regress_"):
                f.unlink()
    encode_seeds(rng)
    files_seeds(rng)
    for target in ["fuzz_tokenizer_encode", "fuzz_tokenizer_files"]:
        files = list((OUT / target).iterdir())
        print(f"{target}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
