#!/usr/bin/env python3
"""Writes tests/fixtures/sparse/<name>/: tiny random sentence-transformers SparseEncoder (SPLADE)
directories saved by sentence-transformers 6 (tools/requirements.txt), and what
SparseEncoder(dir).encode gives for them.

Each model is a random BertForMaskedLM (hidden 16, 2 layers, the cross-encoder fixtures' 162-token
WordPiece vocabulary, model_max_length 24 so long texts are cut) saved as SparseEncoder.save writes
it: modules.json with a Transformer whose sentence_bert_config.json says transformer_task
"fill-mask" (the MLM head's transform dense, its LayerNorm, the decoder tied to the word embeddings
and cls.predictions.bias in model.safetensors), then SpladePooling (config.json:
pooling_strategy, activation_function, embedding_dimension).
- sparse6_bert_max_log1p: pooling max, activation log1p_relu (SpladePooling computes
  log1p(log1p(relu(logit))); "relu" is log1p(relu(logit))).
- sparse6_bert_sum_relu: pooling sum, activation relu.
- sparse6_bert_max_active8: as the first, saved with SparseEncoder(max_active_dims=8)
  (config_sentence_transformers.json: max_active_dims), which encode() applies by default.
The decoder bias is shifted down so that many vocabulary entries stay zero: the nonzero set is
part of what a test compares.

Each folder also holds input.csv (id,text: every field quoted) and reference.safetensors:
- `dense` F32 [N, vocab]: encode(texts, batch_size=4, convert_to_tensor=False,
  convert_to_sparse_tensor=False) stacked (the model's own max_active_dims applied, if any);
- `top5` F32 [N, vocab]: the same with max_active_dims=5 (the 5 largest per row kept).
Checked against encoding each text alone.

Regenerate: tools/venv.sh && .venv/bin/python tools/gen_sparse_fixtures.py
Idempotent: deletes and rewrites tests/fixtures/sparse/sparse6_*/. Deterministic.
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import sentence_transformers
import torch
import transformers
from safetensors.torch import save_file
from sentence_transformers import SparseEncoder
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sparse_encoder.modules import SpladePooling
from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM, BertTokenizerFast, DistilBertConfig,
                          DistilBertForMaskedLM, ModernBertConfig, ModernBertForMaskedLM, XLMRobertaConfig,
                          XLMRobertaForMaskedLM)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_weights import randomize  # noqa: E402  (one weight recipe for all model fixtures)
from gen_ce_fixtures import bert_tokenizer, vocabulary  # noqa: E402  (the cross-encoders' WordPiece)
from gen_st_fixtures import TEXTS, write_csv  # noqa: E402  (the embedding fixtures' texts)

assert int(sentence_transformers.__version__.split(".")[0]) >= 6, "run with the current stack (.venv)"
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/sparse"
SEED = 20261220
POSITIONS = 64
MAX_LEN = 24
SMALL = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
# On the decoder bias: most logits negative, so relu leaves zeros (the other families' heads give
# logits of a smaller spread under the weight recipe).
BIAS_SHIFT = {"bert": -6.0, "xlmr": -2.0, "distilbert": -2.0, "modernbert": -2.0}
TOP_K = 5

# (name, pooling_strategy, activation_function, max_active_dims saved with the model, family)
SPECS = [
    ("sparse6_bert_max_log1p", "max", "log1p_relu", None, "bert"),
    ("sparse6_bert_sum_relu", "sum", "relu", None, "bert"),
    ("sparse6_bert_max_active8", "max", "log1p_relu", 8, "bert"),
    # The MLM heads of the other families (opensearch's and granite's sparse models are RoBERTa /
    # XLM-R bodies; DistilBERT and ModernBERT SPLADE models exist too).
    ("sparse6_xlmr_max_log1p", "max", "log1p_relu", None, "xlmr"),
    ("sparse6_distilbert_sum_relu", "sum", "relu", None, "distilbert"),
    ("sparse6_modernbert_max_log1p", "max", "log1p_relu", None, "modernbert"),
]
TOK = ROOT / "tests/fixtures/tokenizer/models"


def masked_lm(family, tmp):
    """A random *ForMaskedLM of the family, its tokenizer and its decoder bias parameter."""
    if family == "xlmr":
        tok = AutoTokenizer.from_pretrained(TOK / "unigram_json", model_max_length=MAX_LEN)
        cfg = XLMRobertaConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, bos_token_id=0, eos_token_id=2,
                               max_position_embeddings=POSITIONS + 2, type_vocab_size=1, layer_norm_eps=1e-5,
                               **SMALL)
        model = XLMRobertaForMaskedLM(cfg)
        return model, tok, lambda: model.lm_head.bias
    if family == "distilbert":
        tok = bert_tokenizer(tmp, MAX_LEN)
        cfg = DistilBertConfig(vocab_size=len(vocabulary()), pad_token_id=0, max_position_embeddings=POSITIONS,
                               dim=16, n_layers=2, n_heads=2, hidden_dim=32, activation="gelu")
        model = DistilBertForMaskedLM(cfg)
        return model, tok, lambda: model.vocab_projector.bias
    if family == "modernbert":
        tok = AutoTokenizer.from_pretrained(TOK / "modernbert_json", model_max_length=MAX_LEN)
        cfg = ModernBertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, cls_token_id=tok.cls_token_id,
                               sep_token_id=tok.sep_token_id, bos_token_id=tok.cls_token_id,
                               eos_token_id=tok.sep_token_id, max_position_embeddings=POSITIONS,
                               global_attn_every_n_layers=2, local_attention=8, **SMALL)
        model = ModernBertForMaskedLM(cfg)
        return model, tok, lambda: model.decoder.bias
    tok = bert_tokenizer(tmp, MAX_LEN)
    cfg = BertConfig(vocab_size=len(vocabulary()), pad_token_id=0, max_position_embeddings=POSITIONS,
                     type_vocab_size=2, layer_norm_eps=1e-12, **SMALL)
    model = BertForMaskedLM(cfg)
    return model, tok, lambda: model.cls.predictions.bias


def build(name, pooling, activation, max_active, family, gen, tmp):
    model, tok, decoder_bias = masked_lm(family, tmp)
    randomize(model, gen)
    with torch.no_grad():
        decoder_bias().add_(BIAS_SHIFT[family])
    model.config._name_or_path = name  # else config.json would name this machine's temp folder
    hf_dir = tmp / name
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    transformer = Transformer(str(hf_dir), transformer_task="fill-mask",
                              model_kwargs={"attn_implementation": "eager"})
    splade = SpladePooling(pooling_strategy=pooling, activation_function=activation,
                           embedding_dimension=model.config.vocab_size)
    return SparseEncoder(modules=[transformer, splade], device="cpu", max_active_dims=max_active)


def encode(model, texts, **kwargs):
    rows = model.encode(texts, batch_size=4, convert_to_tensor=False, convert_to_sparse_tensor=False,
                        **kwargs)
    return np.stack([r.detach().cpu().numpy().astype(np.float32) for r in rows])


def make(spec, gen, tmp):
    name, pooling, activation, max_active, family = spec
    d = OUT / name
    build(name, pooling, activation, max_active, family, gen, tmp).save(str(d))
    (d / "README.md").unlink(missing_ok=True)
    loaded = SparseEncoder(str(d), device="cpu", model_kwargs={"attn_implementation": "eager"})
    dense = encode(loaded, TEXTS)
    top = encode(loaded, TEXTS, max_active_dims=TOP_K)
    one = np.concatenate([encode(loaded, [t]) for t in TEXTS])
    diff = float(np.abs(one - dense).max())
    assert diff < 1e-5, f"{name}: batched vs one by one differ by {diff}"
    nonzero = (dense != 0).sum(axis=1)
    assert nonzero.min() > 0 and nonzero.max() < dense.shape[1], f"{name}: nonzeros per row {nonzero}"
    assert ((top != 0).sum(axis=1) <= TOP_K).all()
    meta = {"mcinfer": json.dumps({
        "generator": "tools/gen_sparse_fixtures.py", "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
        "dense": "SparseEncoder(dir).encode(texts, batch_size=4, convert_to_sparse_tensor=False)",
        "top5": "the same with max_active_dims=5",
        "batched_vs_one_by_one_max_abs_diff": diff}, sort_keys=True)}
    save_file({"dense": torch.from_numpy(dense), "top5": torch.from_numpy(top)},
              d / "reference.safetensors", metadata=meta)
    write_csv(d / "input.csv", [(f"t{i:02d}", t) for i, t in enumerate(TEXTS)])
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    print(f"{name}: {dense.shape}, nonzeros per row {nonzero.min()}..{nonzero.max()}, "
          f"batched vs single {diff:.2g}, {size} bytes")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for child in OUT.iterdir():
        if child.name.startswith("sparse6_"):
            shutil.rmtree(child)
    gen = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in SPECS:
            make(spec, gen, Path(tmp))


if __name__ == "__main__":
    main()
