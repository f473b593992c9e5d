#!/usr/bin/env python3
"""Writes the benchmark checkpoints (random weights, never committed) into bench/work/models/.

  bert-base-cls   BertForSequenceClassification, bert-base shape (hidden 768, 12 layers, 12 heads,
                  intermediate 3072, vocab 30522, 512 positions), 2 labels, seeded init, with
                  all-MiniLM-L6-v2's tokenizer files copied in (same BERT uncased WordPiece vocab).
  xlmr-base-cls   XLMRobertaForSequenceClassification, base shape (vocab 250002, 514 positions),
                  2 labels. There is no XLM-R tokenizer here (sentencepiece model), so only
                  pre-tokenised workloads can drive it; see the NOTE.txt written next to it.
  mpnet-base-cls  MPNetForSequenceClassification, mpnet-base shape (vocab 30527, 514 positions,
                  32 relative-position buckets), 2 labels; no tokenizer either (workload (a) only).
  deberta-v3-base-cls  DebertaV2ForSequenceClassification, microsoft/deberta-v3-base's config
                  (vocab 128100, 12 layers, hidden 768, relative attention c2p+p2c over 256 log
                  buckets, shared keys, layer-normed relative embeddings, no absolute positions,
                  ContextPooler with gelu), 2 labels. Its tokenizer is the committed test fixture
                  tests/fixtures/tokenizer/models/deberta_json (a DeBERTa-v3 tokenizer.json with a
                  3,000-piece unigram vocabulary trained for the tests): every system reads the
                  same ids, though more of them per word than the real 128k vocabulary gives.
  modernbert-base-cls  ModernBertForSequenceClassification, answerdotai/ModernBERT-base's config
                  (vocab 50368, 22 layers, hidden 768, 12 heads, GeGLU FFN 1152, no biases, global
                  attention every 3rd layer and a 128-token window in the others, rope theta 160000
                  global / 10000 local, 8,192 positions, mean pooling as the base checkpoint's config),
                  2 labels. transformers >= 4.48 only: written with the current stack (.venv, see
                  bench/requirements-tf5.txt). Its tokenizer is the committed test fixture
                  tests/fixtures/tokenizer/models/modernbert_json (ModernBERT's tokenizer layout, a
                  byte-level BPE of 4,000 pieces with [UNK] [CLS] [SEP] [PAD] [MASK] after it), and
                  the config's special ids are that tokenizer's; the embedding keeps the real 50,368
                  rows.

Weights are random: speed does not depend on their values, and the benchmark compares mcinfer's
outputs with PyTorch's on the same checkpoint. Existing checkpoints are kept unless --force.

    .venv-legacy/bin/python bench/make_models.py [--only bert-base-cls] [--force]
    .venv/bin/python bench/make_models.py --only modernbert-base-cls    # transformers >= 4.48
"""

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import torch
import transformers
from transformers import (BertConfig, BertForSequenceClassification, DebertaV2Config,
                          DebertaV2ForSequenceClassification, MPNetConfig, MPNetForSequenceClassification,
                          XLMRobertaConfig, XLMRobertaForSequenceClassification)

REPO = Path(__file__).resolve().parent.parent
TOKENIZER_FILES = ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
LABELS = {"id2label": {0: "negative", 1: "positive"}, "label2id": {"negative": 0, "positive": 1}}


def bert_base(seed: int):
    config = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2,
                        num_labels=2, **LABELS)
    torch.manual_seed(seed)
    return BertForSequenceClassification(config)


def xlmr_base(seed: int):
    config = XLMRobertaConfig(vocab_size=250002, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                              intermediate_size=3072, max_position_embeddings=514, type_vocab_size=1,
                              pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5,
                              num_labels=2, **LABELS)
    torch.manual_seed(seed)
    return XLMRobertaForSequenceClassification(config)


def mpnet_base(seed: int):
    config = MPNetConfig(vocab_size=30527, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                         intermediate_size=3072, max_position_embeddings=514, relative_attention_num_buckets=32,
                         pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5, num_labels=2, **LABELS)
    torch.manual_seed(seed)
    return MPNetForSequenceClassification(config)


def deberta_v3_base(seed: int):
    # microsoft/deberta-v3-base's config.json, field by field (its hub card; nothing downloaded)
    config = DebertaV2Config(vocab_size=128100, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                             intermediate_size=3072, hidden_act="gelu", max_position_embeddings=512,
                             type_vocab_size=0, layer_norm_eps=1e-7, relative_attention=True, max_relative_positions=-1,
                             position_buckets=256, norm_rel_ebd="layer_norm", share_att_key=True,
                             pos_att_type=["p2c", "c2p"], position_biased_input=False, pooler_hidden_size=768,
                             pooler_hidden_act="gelu", pooler_dropout=0, pad_token_id=0, num_labels=2, **LABELS)
    torch.manual_seed(seed)
    return DebertaV2ForSequenceClassification(config)


# The special tokens of MODERNBERT_TOKENIZER's tokenizer.json (ModernBERT-base's own are 50281..50284).
MODERNBERT_SPECIALS = {"cls_token_id": 4002, "bos_token_id": 4002, "sep_token_id": 4003, "eos_token_id": 4003,
                       "pad_token_id": 4004}


def modernbert_base(seed: int):
    # answerdotai/ModernBERT-base's config.json, field by field (its hub card; nothing downloaded),
    # but for the special ids, which are those of the tokenizer copied in. transformers >= 4.48
    # (imported here so that the other checkpoints are still written by the legacy stack).
    from transformers import ModernBertConfig, ModernBertForSequenceClassification

    config = ModernBertConfig(vocab_size=50368, hidden_size=768, intermediate_size=1152, num_hidden_layers=22,
                              num_attention_heads=12, hidden_activation="gelu", max_position_embeddings=8192,
                              norm_eps=1e-5, norm_bias=False, attention_bias=False, mlp_bias=False,
                              global_attn_every_n_layers=3, local_attention=128, global_rope_theta=160000.0,
                              local_rope_theta=10000.0, classifier_pooling="mean", classifier_activation="gelu",
                              classifier_bias=False, num_labels=2, **MODERNBERT_SPECIALS, **LABELS)
    torch.manual_seed(seed)
    return ModernBertForSequenceClassification(config)


# Checkpoints whose family transformers 4.46 (the legacy stack) does not have: written only by a
# transformers >= 4.48 (the current stack, .venv), and left out of a run of every checkpoint by another.
NEEDS_CURRENT_STACK = {"modernbert-base-cls"}
BUILDERS = {"bert-base-cls": bert_base, "xlmr-base-cls": xlmr_base, "mpnet-base-cls": mpnet_base,
            "deberta-v3-base-cls": deberta_v3_base, "modernbert-base-cls": modernbert_base}
# Tokenizer files copied into a checkpoint: (source folder relative to the repository, files).
DEBERTA_TOKENIZER = (REPO / "tests/fixtures/tokenizer/models/deberta_json", ["tokenizer.json", "tokenizer_config.json"])
MODERNBERT_TOKENIZER = (REPO / "tests/fixtures/tokenizer/models/modernbert_json",
                        ["tokenizer.json", "tokenizer_config.json"])

NO_TOKENIZER_NOTE = """Random-weight {cls}, base shape, written by bench/make_models.py. It has no
tokenizer (none of its family is available on this machine), so this checkpoint can only be driven with
pre-tokenised input (token ids), not with text.
Not committed; regenerate with `.venv-legacy/bin/python bench/make_models.py --only {name}`.
"""


def write(name: str, out_root: Path, seed: int, force: bool, tokenizer_dir: Path) -> None:
    dest = out_root / name
    if (dest / "config.json").is_file() and (dest / "model.safetensors").is_file() and not force:
        print(f"make_models: {dest} exists, skipped (--force to rewrite)")
        return
    tokenizer = {"bert-base-cls": (tokenizer_dir, TOKENIZER_FILES), "deberta-v3-base-cls": DEBERTA_TOKENIZER,
                 "modernbert-base-cls": MODERNBERT_TOKENIZER}.get(name)
    if tokenizer:
        missing = [f for f in tokenizer[1] if not (tokenizer[0] / f).is_file()]
        if missing:
            sys.exit(f"make_models: {tokenizer[0]} lacks {missing} (run scripts/get_minilm.sh)")
    # Write into a sibling folder and rename at the end, so an interrupted run leaves no
    # half-written checkpoint that a later run would skip.
    tmp = out_root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model = BUILDERS[name](seed)
    model.eval()
    model.save_pretrained(tmp, safe_serialization=True)
    if tokenizer:
        for f in tokenizer[1]:
            shutil.copy2(tokenizer[0] / f, tmp / f)
    else:
        (tmp / "NOTE.txt").write_text(NO_TOKENIZER_NOTE.format(cls=type(model).__name__, name=name))
    (tmp / "bench_provenance.json").write_text(json.dumps(
        {"written_by": "bench/make_models.py", "seed": seed, "weights": "random (transformers default init)",
         "parameters": sum(p.numel() for p in model.parameters()),
         "torch": torch.__version__, "tokenizer_from": os.path.relpath(tokenizer[0], REPO) if tokenizer else None},
        indent=2) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    print(f"make_models: wrote {dest}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "bench/work/models")
    ap.add_argument("--only", choices=list(BUILDERS), action="append",
                    help="write only this checkpoint (repeatable)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--force", action="store_true", help="rewrite existing checkpoints")
    ap.add_argument("--tokenizer", type=Path, default=REPO / "models/all-MiniLM-L6-v2")
    args = ap.parse_args()
    torch.set_num_threads(1)  # init is cheap; leave the other cores alone
    args.out.mkdir(parents=True, exist_ok=True)
    current = tuple(int(x) for x in transformers.__version__.split(".")[:2]) >= (4, 48)
    for name in args.only or list(BUILDERS):
        if name in NEEDS_CURRENT_STACK and not current:
            if args.only:
                sys.exit(f"make_models: {name} needs transformers >= 4.48 (this is {transformers.__version__}): "
                         f"run it with the current stack, .venv/bin/python (tools/venv.sh)")
            print(f"make_models: {name} skipped: it needs transformers >= 4.48 (.venv/bin/python)")
            continue
        write(name, args.out, args.seed, args.force, args.tokenizer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
