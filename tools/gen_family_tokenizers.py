#!/usr/bin/env python3
"""Writes the tokenizers of the families added on the current stack, as transformers 5 saves them
from their own classes, and the ids transformers 5 gives for them on the tokenizer corpus:

- tests/fixtures/tokenizer/models/mpnet_json: MPNetTokenizer (BertNormalizer lowercase,
  BertPreTokenizer, WordPiece, RobertaProcessing: <s> A </s></s> B </s>) over the uncased WordPiece
  vocabulary of wp_uncased_vocab with MPNet's <s> <pad> </s> <unk> in front and <mask> last, as
  microsoft/mpnet-base lays its vocabulary out;
- tests/fixtures/tokenizer/models/electra_json: ElectraTokenizer over the same WordPiece vocabulary
  (ELECTRA ships BERT's tokenizer);
- tests/fixtures/tokenizer/models/camembert_json: CamembertTokenizer from unigram_spm's
  SentencePiece model (precompiled normalizer, Metaspace, Unigram, <s> A </s></s> B </s>);
- tests/fixtures/tokenizer/models/modernbert_json: ModernBERT's tokenizer layout (a
  PreTrainedTokenizerFast over a tokenizer.json: NFC, byte-level pre-tokenizer without a prefix
  space, byte-level BPE, [CLS] A [SEP] / [CLS] A [SEP] B [SEP], its special tokens added after the
  vocabulary and a non-special added token) over bpe_json's byte-level BPE vocabulary and merges:
  answerdotai/ModernBERT-base's own files are not on PyPI.

For each, tests/fixtures/tokenizer/expected/families/<variant>.tsv holds transformers 5's ids
in the record format of tools/gen_tokenizer_fixtures.py, checked against the current tokenizers
Tokenizer.from_file of the saved tokenizer.json (they agree: the file is the class's pipeline);
expected/families/variants.tsv lists them.

Regenerate: tools/venv.sh && .venv/bin/python tools/gen_family_tokenizers.py
Idempotent: rewrites those four directories and their expected sets.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import tokenizers
import transformers
from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from transformers import CamembertTokenizer, ElectraTokenizer, MPNetTokenizer, PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_tokenizer_fixtures import (EXPECTED, MODELS, expected_records, minify, read_corpus,  # noqa: E402
                                    write_expected, write_manifest)

assert int(transformers.__version__.split(".")[0]) >= 5, "run with the current stack (.venv)"
OUT = EXPECTED / "families"  # apart from transformers5/, which gen_tokenizer_v5_fixtures.py rewrites


def wordpiece_vocab() -> list[str]:
    return [v for v in (MODELS / "wp_uncased_vocab/vocab.txt").read_text(encoding="utf-8").split("\n") if v]


def save(name: str, cls: type, files: dict[str, bytes]) -> Path:
    """cls.from_pretrained of a directory holding `files`, saved by save_pretrained as models/name."""
    out = MODELS / name
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        for file, data in files.items():
            (Path(tmp) / file).write_bytes(data)
        cls.from_pretrained(tmp).save_pretrained(out)
    minify(out)
    return out


def modernbert_files() -> dict[str, bytes]:
    """ModernBERT's pipeline around bpe_json's BPE model (see the module docstring)."""
    tok = Tokenizer.from_file(str(MODELS / "bpe_json/tokenizer.json"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    base = tok.get_vocab_size(with_added_tokens=False)
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok.add_tokens([AddedToken("|||EMAIL_ADDRESS|||", normalized=True, special=False)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    assert cls >= base, "the special tokens sit after the vocabulary, as in ModernBERT's"
    config = ('{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192, '
              '"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]", '
              '"unk_token": "[UNK]", "clean_up_tokenization_spaces": true, '
              '"model_input_names": ["input_ids", "attention_mask"]}')
    return {"tokenizer.json": tok.to_str().encode(), "tokenizer_config.json": config.encode()}


def main() -> None:
    lines, cases = read_corpus()
    vocab = wordpiece_vocab()
    mpnet = ["<s>", "<pad>", "</s>", "<unk>"] + vocab + ["<mask>"]
    dirs = {
        "mpnet_json": save("mpnet_json", MPNetTokenizer, {"vocab.txt": ("\n".join(mpnet) + "\n").encode()}),
        "electra_json": save("electra_json", ElectraTokenizer, {"vocab.txt": ("\n".join(vocab) + "\n").encode()}),
        "camembert_json": save("camembert_json", CamembertTokenizer, {
            "sentencepiece.bpe.model": (MODELS / "unigram_spm/sentencepiece.bpe.model").read_bytes()}),
        "modernbert_json": save("modernbert_json", PreTrainedTokenizerFast, modernbert_files()),
    }
    header = (f"# generated by tools/gen_family_tokenizers.py with transformers {transformers.__version__}, "
              f"tokenizers {tokenizers.__version__}; format: tools/gen_tokenizer_fixtures.py\n")
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = []
    for variant, d in dirs.items():
        recs = expected_records(d, lines, cases, check_file=True)
        write_expected(OUT, variant, recs, header)
        manifest.append(f"{variant}\tfamilies/{variant}")
        print(f"{variant}: {len(recs)} records")
    write_manifest(OUT / "variants.tsv", "expected set (transformers 5 and tokenizers' reading of the file agree)",
                   manifest)


if __name__ == "__main__":
    main()
