#!/usr/bin/env python3
"""Writes tests/fixtures/models/<name>/: tiny random Hugging Face encoder checkpoints, saved by
save_pretrained exactly as transformers writes them, plus reference inputs and outputs computed by
transformers itself (reference.safetensors, reference.json). The C++ model tests load each
checkpoint and must reproduce the reference tensors.

Weights are re-drawn after construction (seeded) with non-trivial biases and LayerNorm parameters
and roughly unit-variance activations: with HF's default init (std 0.02, zero biases, unit
LayerNorm) a loader that drops a bias or swaps two activation functions would still match.

Two reference stacks write here, each its own fixtures (every test that walks the folder runs both):
- the legacy stack (transformers 4.46.3): every spec below, under its name;
  regenerate with `tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_fixtures.py`.
- the current stack (transformers 5): CURRENT_SPECS, as `tf5_<name>`, directories as transformers 5
  saves them (config.json with "dtype" and transformers_version 5.x);
  regenerate with `tools/venv.sh && .venv/bin/python tools/gen_fixtures.py`.
Idempotent: deletes and rewrites the fixtures of the stack it runs under (README.md for the legacy
stack, README_tf5.md for the current one). Deterministic: same bytes on every run.
"""
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file
import transformers
from transformers import (BertConfig, BertForSequenceClassification, BertModel, CamembertConfig,
                          CamembertForSequenceClassification, DebertaV2Config,
                          DebertaV2ForSequenceClassification, DebertaV2Model, DistilBertConfig,
                          DistilBertForSequenceClassification, DistilBertModel, ElectraConfig,
                          ElectraForSequenceClassification, ElectraModel, ModernBertConfig,
                          ModernBertForSequenceClassification, ModernBertModel, MPNetConfig,
                          MPNetForSequenceClassification, MPNetModel, RobertaConfig,
                          RobertaForSequenceClassification, RobertaModel, XLMRobertaConfig,
                          XLMRobertaForSequenceClassification, XLMRobertaModel)

from fixture_weights import randomize  # noqa: E402  (one weight recipe for all model fixtures)

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/models"
TF5 = int(transformers.__version__.split(".")[0]) >= 5
PREFIX = "tf5_" if TF5 else ""
if TF5:  # decoder families the legacy stack (4.46) does not have
    from transformers import (Gemma3TextConfig, Gemma3TextForSequenceClassification, Gemma3TextModel,
                              Qwen3Config, Qwen3ForSequenceClassification, Qwen3Model)  # the current stack's fixtures sit beside the legacy ones
# What the current stack saves too: a classifier of each tokenizer family, a base model.
CURRENT_SPECS = ["bert_cls_single", "xlmr_cls", "roberta_embed", "distilbert_cls"]
# Families only the current stack writes (tf5_<name> too).
CURRENT_ONLY = ["mpnet_cls", "mpnet_embed", "electra_cls", "electra_embed", "camembert_cls",
                "deberta_cls", "deberta_c2p_embed", "deberta_multi", "deberta_regression",
                "modernbert_cls", "modernbert_mean_biases", "modernbert_embed", "qwen3_embed",
                "qwen3_cls", "gemma3_embed", "gemma3_cls"]
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class Spec:
    name: str
    cls: type
    config: object
    seq_len: int  # L_max of the reference batch
    lengths: list  # real length per row (one of them == seq_len)
    dtype: str = "float32"
    shard: str = None  # max_shard_size for save_pretrained
    segments: bool = False  # put token_type_ids == 1 in a second segment of some rows
    notes: list = field(default_factory=list)


def bert(**kw):
    base = dict(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=128, hidden_act="gelu", max_position_embeddings=40, type_vocab_size=2,
                pad_token_id=0, layer_norm_eps=1e-12, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    base.update(kw)
    return BertConfig(**base)


def roberta(cls=RobertaConfig, **kw):
    # Like real RoBERTa/XLM-R: <s>=0, <pad>=1 (padding_idx), </s>=2; positions start at padding_idx + 1,
    # so max_position_embeddings must cover L + 2.
    base = dict(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=128, hidden_act="gelu", max_position_embeddings=40, type_vocab_size=1,
                pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)
    base.update(kw)
    return cls(**base)


def mpnet(**kw):
    base = dict(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, hidden_act="gelu", max_position_embeddings=200,
                relative_attention_num_buckets=32, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    base.update(kw)
    return MPNetConfig(**base)


def electra(**kw):
    base = dict(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, hidden_act="gelu", max_position_embeddings=40, type_vocab_size=2,
                pad_token_id=0)
    base.update(kw)
    return ElectraConfig(**base)


def deberta(**kw):
    # DeBERTa-v3's switches by default (relative positions only, shared keys, c2p + p2c, the table
    # LayerNormed), at sizes where the log buckets are reached by the fixture's rows.
    base = dict(vocab_size=130, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=128, hidden_act="gelu", max_position_embeddings=128, type_vocab_size=0,
                pad_token_id=0, layer_norm_eps=1e-7, relative_attention=True, pos_att_type=["p2c", "c2p"],
                position_buckets=16, max_relative_positions=64, share_att_key=True, norm_rel_ebd="layer_norm",
                position_biased_input=False, pooler_hidden_act="gelu")
    base.update(kw)
    return DebertaV2Config(**base)


def modernbert(**kw):
    # ModernBERT at sizes where the sliding window is shorter than the fixture's rows (a window of
    # ±4 tokens) and global and windowed layers alternate; no biases, as its published checkpoints.
    base = dict(vocab_size=120, hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=48,
                max_position_embeddings=128, local_attention=8, global_attn_every_n_layers=2, pad_token_id=0,
                bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)
    base.update(kw)
    return ModernBertConfig(**base)


def qwen3(**kw):
    # Qwen3 at sizes where every rule of its layer shows: 2 key-value heads for 4 query heads, a
    # head size (16) that is not hidden / heads (8), q/k RMS norms, a causal mask with a sliding
    # window (6 keys) shorter than the rows in the layers from max_window_layers on.
    base = dict(vocab_size=120, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, intermediate_size=48, max_position_embeddings=128,
                rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1000.0},
                use_sliding_window=True, sliding_window=6, max_window_layers=1, pad_token_id=0,
                bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    base.update(kw)
    return Qwen3Config(**base)


def gemma3(**kw):
    # Gemma 3's text model as EmbeddingGemma configures it (bidirectional attention) at sizes where
    # its rules show: (1 + w) RMS norms around each block, GQA 4 / 2 heads of 16, scores scaled by
    # query_pre_attn_scalar^-1/2 (12, not the head size), GELU-tanh gates, embeddings times
    # sqrt(hidden), sliding layers (a window of |i - j| <= 4) between global ones with their own
    # rotary bases.
    base = dict(vocab_size=120, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, intermediate_size=48, max_position_embeddings=128,
                rms_norm_eps=1e-6, query_pre_attn_scalar=12, sliding_window=8,
                layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 5000.0},
                                 "sliding_attention": {"rope_type": "default", "rope_theta": 300.0}},
                use_bidirectional_attention=True, hidden_activation="gelu_pytorch_tanh", pad_token_id=0,
                bos_token_id=2, eos_token_id=1, tie_word_embeddings=True)
    base.update(kw)
    return Gemma3TextConfig(**base)


def distilbert(**kw):
    base = dict(vocab_size=110, dim=32, n_layers=2, n_heads=4, hidden_dim=128, activation="gelu",
                max_position_embeddings=40, sinusoidal_pos_embds=False, pad_token_id=0)
    base.update(kw)
    return DistilBertConfig(**base)


SPECS = [
    Spec("bert_embed", BertModel, bert(hidden_act="gelu"), 12, [12, 1, 2, 3, 9, 11], segments=True),
    Spec("bert_cls_single", BertForSequenceClassification,
         bert(vocab_size=100, intermediate_size=64, hidden_act="gelu_pytorch_tanh", num_labels=2,
              id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1}),
         14, [14, 1, 2, 3, 11, 7], segments=True,
         notes=["problem_type left None in config.json: num_labels 2 => single_label (softmax)"]),
    Spec("bert_cls_multi", BertForSequenceClassification,
         bert(vocab_size=150, hidden_size=48, num_attention_heads=6, num_hidden_layers=3, intermediate_size=96,
              hidden_act="gelu_new", num_labels=5, problem_type="multi_label_classification"),
         16, [16, 1, 2, 3, 13, 8], segments=True,
         notes=["hidden 48 / 6 heads (head dim 8), 3 layers; id2label left at HF default LABEL_0..LABEL_4"]),
    Spec("bert_regression", BertForSequenceClassification,
         bert(vocab_size=90, hidden_size=24, num_attention_heads=2, intermediate_size=96, hidden_act="relu",
              layer_norm_eps=1e-5, num_labels=1),
         9, [9, 1, 2, 3, 6], segments=True,
         notes=["problem_type None and num_labels 1 => regression, probs = logits (identity). "
                "Beware: the HF text-classification pipeline applies sigmoid when num_labels == 1 unless "
                "problem_type == 'regression' is set explicitly",
                "hidden 24 / 2 heads (head dim 12), layer_norm_eps 1e-5"]),
    Spec("bert_sharded", BertModel,
         bert(vocab_size=200, num_attention_heads=8, num_hidden_layers=3, intermediate_size=64,
              hidden_act="gelu_new"),
         10, [10, 1, 2, 3, 7, 5], shard="20KB", segments=True,
         notes=["saved with max_shard_size='20KB': model.safetensors.index.json + parts; a tensor larger "
                "than the shard size gets a part of its own; 8 heads of dim 4"]),
    Spec("bert_bf16", BertModel,
         bert(vocab_size=100, hidden_size=64, num_attention_heads=4, intermediate_size=128,
              hidden_act="gelu_pytorch_tanh"),
         11, [11, 1, 2, 3, 8, 10], dtype="bfloat16", segments=True,
         notes=["weights saved as BF16; reference computed in float32 from the rounded weights"]),
    Spec("roberta_embed", RobertaModel, roberta(), 14, [14, 1, 2, 3, 11, 6],
         notes=["position ids = cumsum(input_ids != 1) * (input_ids != 1) + 1: real tokens get 2.., "
                "padding gets 1 (padding_idx)"]),
    Spec("roberta_cls", RobertaForSequenceClassification,
         roberta(vocab_size=130, num_attention_heads=8, intermediate_size=64, hidden_act="gelu_new", num_labels=3,
                 problem_type="single_label_classification",
                 id2label={0: "contradiction", 1: "neutral", 2: "entailment"},
                 label2id={"contradiction": 0, "neutral": 1, "entailment": 2}),
         11, [11, 1, 2, 3, 8, 5],
         notes=["head: classifier.dense + tanh + classifier.out_proj on token 0; no pooler weights"]),
    Spec("xlmr_embed_f16", XLMRobertaModel, roberta(XLMRobertaConfig, vocab_size=250, intermediate_size=96),
         13, [13, 1, 2, 3, 10, 12], dtype="float16",
         notes=["weights saved as F16; reference computed in float32 from the rounded weights"]),
    Spec("xlmr_cls", XLMRobertaForSequenceClassification,
         roberta(XLMRobertaConfig, vocab_size=160, hidden_size=24, num_attention_heads=3, num_hidden_layers=3,
                 intermediate_size=72, hidden_act="gelu_pytorch_tanh", num_labels=2),
         8, [8, 1, 2, 3, 5],
         notes=["problem_type None, num_labels 2 => single_label (softmax); id2label HF default"]),
    Spec("distilbert_embed_sinusoidal", DistilBertModel, distilbert(sinusoidal_pos_embds=True), 15,
         [15, 1, 2, 3, 12, 9]),
    Spec("distilbert_cls", DistilBertForSequenceClassification,
         distilbert(vocab_size=100, n_layers=3, n_heads=2, hidden_dim=64, activation="gelu", num_labels=2,
                    problem_type="single_label_classification", id2label={0: "NEG", 1: "POS"},
                    label2id={"NEG": 0, "POS": 1}),
         10, [10, 1, 2, 3, 7, 4],
         notes=["learned position embeddings; head: pre_classifier + ReLU + classifier on token 0"]),
    Spec("distilbert_cls_multi_relu", DistilBertForSequenceClassification,
         distilbert(vocab_size=140, dim=48, n_heads=6, hidden_dim=96, activation="relu", num_labels=4,
                    problem_type="multi_label_classification",
                    id2label={0: "toxic", 1: "insult", 2: "threat", 3: "obscene"},
                    label2id={"toxic": 0, "insult": 1, "threat": 2, "obscene": 3}),
         7, [7, 1, 2, 3, 4, 6],
         notes=["FFN activation relu; dim 48 / 6 heads"]),
    # Current stack only (CURRENT_ONLY).
    Spec("mpnet_cls", MPNetForSequenceClassification,
         mpnet(num_labels=3, problem_type="single_label_classification"), 150, [150, 17, 40, 5, 1, 129],
         notes=["MPNet: relative position bias (32 buckets, exact below 8 per direction, log-spaced to 128, "
                "clamped beyond) from encoder.relative_attention_bias, added in every layer; rows of 150 and 129 "
                "tokens reach past max_distance 128; positions as RoBERTa (padding_idx 1); no token types; "
                "head: classifier.dense + tanh + classifier.out_proj"]),
    Spec("mpnet_embed", MPNetModel, mpnet(hidden_act="gelu_new", intermediate_size=96), 40, [40, 1, 2, 3, 23, 17],
         notes=["MPNet base model with its pooler (unused by mcinfer)"]),
    Spec("electra_cls", ElectraForSequenceClassification,
         electra(num_labels=2, id2label={0: "no", 1: "yes"}, label2id={"no": 0, "yes": 1}),
         14, [14, 1, 2, 3, 11, 7], segments=True,
         notes=["ELECTRA discriminator: embedding_size 16 < hidden 32 (embeddings_project); head: "
                "classifier.dense + GELU + classifier.out_proj"]),
    Spec("electra_embed", ElectraModel, electra(embedding_size=32, hidden_act="gelu_new"), 12, [12, 1, 5, 9],
         segments=True, notes=["embedding_size == hidden_size: no projection"]),
    Spec("camembert_cls", CamembertForSequenceClassification,
         roberta(CamembertConfig, vocab_size=130, num_labels=2, hidden_act="gelu"), 11, [11, 1, 2, 3, 8, 5],
         notes=["CamemBERT: model_type camembert, a RoBERTa body"]),
    # Appended (seeds follow the position in SPECS; earlier fixtures keep theirs).
    Spec("deberta_cls", DebertaV2ForSequenceClassification, deberta(num_labels=3), 100, [100, 17, 40, 5, 1, 77],
         notes=["DeBERTa-v3's switches: relative positions only (position_biased_input false), 16 log buckets "
                "(exact below 8) up to 64, shared keys, c2p + p2c, rel_embeddings LayerNormed; head dim 32; "
                "head: ContextPooler (pooler.dense + GELU) + classifier"]),
    Spec("deberta_c2p_embed", DebertaV2Model,
         deberta(hidden_size=32, num_attention_heads=4, intermediate_size=64, max_position_embeddings=40,
                 type_vocab_size=2, pos_att_type=["c2p"], position_buckets=-1, max_relative_positions=12,
                 share_att_key=False, norm_rel_ebd="none", position_biased_input=True),
         30, [30, 1, 2, 3, 17, 25], segments=True,
         notes=["c2p only through its own pos_key_proj; no buckets: distances clamped to +-12; absolute "
                "positions and token types added to the embeddings; head dim 8"]),
    Spec("deberta_multi", DebertaV2ForSequenceClassification,
         deberta(num_labels=4, problem_type="multi_label_classification", share_att_key=False, position_buckets=32,
                 max_relative_positions=128, pooler_hidden_act="tanh"),
         70, [70, 9, 33, 2, 64],
         notes=["c2p + p2c through pos_key_proj and pos_query_proj; 32 buckets up to 128; pooler tanh"]),
    Spec("deberta_regression", DebertaV2ForSequenceClassification,
         deberta(hidden_size=32, intermediate_size=64, num_labels=1, pos_att_type=["p2c"], position_buckets=8,
                 max_relative_positions=32),
         40, [40, 3, 12, 1, 29],
         notes=["p2c only, shared keys, 8 buckets up to 32, head dim 16 (no fused bf16 kernel)"]),
    Spec("modernbert_cls", ModernBertForSequenceClassification, modernbert(num_labels=3), 40,
         [40, 3, 17, 9, 1, 28],
         notes=["ModernBERT: pre-norm, rotary (global base 160000, window base 10000), GeGLU, layers 0 and 2 "
                "global, 1 and 3 a window of +-4; no biases; head on the first token (classifier_pooling cls)"]),
    Spec("modernbert_mean_biases", ModernBertForSequenceClassification,
         modernbert(num_labels=2, num_hidden_layers=3, global_attn_every_n_layers=3, local_attention=16,
                    attention_bias=True, mlp_bias=True, norm_bias=True, classifier_bias=True,
                    classifier_pooling="mean", classifier_activation="tanh", hidden_activation="gelu_pytorch_tanh",
                    problem_type="multi_label_classification"),
         50, [50, 12, 33, 2],
         notes=["every bias on (attention, mlp, norm, classifier), mean pooling into the head, tanh head, "
                "tanh-approximated GELU in the GeGLU, layer 0 global and 1, 2 a window of +-8"]),
    Spec("modernbert_embed", ModernBertModel,
         modernbert(num_hidden_layers=3, num_attention_heads=4, hidden_size=64, intermediate_size=80,
                    local_attention=6, global_attn_every_n_layers=3, global_rope_theta=1000.0,
                    local_rope_theta=500.0),
         36, [36, 5, 20, 1],
         notes=["base model (tensors without the model. prefix), head dim 16, window +-3, rotary bases 1000 and "
                "500 through rope_parameters"]),
    # Decoders only the current stack writes (their classes are not in 4.46).
    *([Spec("qwen3_embed", Qwen3Model, qwen3(), 30, [30, 4, 17, 1],
            notes=["Qwen3 base model: GQA 4 query / 2 key-value heads, head size 16 != 32 / 4, q/k RMS norms, "
                   "causal, layers 1 and 2 a sliding window of 6 keys, rotary base 1000, SwiGLU"]),
       Spec("qwen3_cls", Qwen3ForSequenceClassification,
            qwen3(num_labels=3, num_key_value_heads=1, head_dim=8, attention_bias=True, use_sliding_window=False,
                  num_hidden_layers=2, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
            20, [20, 7, 1, 13, 9],
            notes=["Qwen3 classifier: one key-value head, head size 8, q/k/v/o biases, no window; the score "
                   "head on the last non-pad token"]),
       Spec("gemma3_embed", Gemma3TextModel, gemma3(), 30, [30, 4, 17, 1],
            notes=["Gemma 3 text model as EmbeddingGemma: bidirectional, layers 0 and 2 a window of |i - j| <= 4 "
                   "(sliding_window 8) with rotary base 300, layer 1 global with base 5000, (1 + w) norms before "
                   "and after each block, q/k norms, scores x 12^-1/2, embeddings x sqrt(32)"]),
       Spec("gemma3_cls", Gemma3TextForSequenceClassification,
            gemma3(num_labels=2, use_bidirectional_attention=False, sliding_window=5, num_hidden_layers=2,
                   layer_types=["sliding_attention", "full_attention"], attention_bias=True),
            20, [20, 7, 1, 13, 9],
            notes=["Gemma 3 causal classifier: a causal window of 5 keys in layer 0, biases on, the score head "
                   "on the last non-pad token"])] if TF5 else []),
]


def make_inputs(spec, cfg, gen):
    pad = cfg.pad_token_id
    vocab = cfg.vocab_size
    B, L = len(spec.lengths), spec.seq_len
    assert max(spec.lengths) == L and min(spec.lengths) >= 1
    ids = torch.full((B, L), pad, dtype=torch.int64)
    mask = torch.zeros((B, L), dtype=torch.int64)
    types = torch.zeros((B, L), dtype=torch.int64)
    for b, n in enumerate(spec.lengths):
        row = torch.randint(0, vocab - 1, (n,), generator=gen)
        row = row + (row >= pad).long()  # uniform over [0, vocab) minus the pad id
        ids[b, :n] = row
        mask[b, :n] = 1
        if spec.segments and n >= 4 and b % 2 == 0:
            types[b, n // 2:n] = 1
    assert not (ids[mask.bool()] == pad).any()
    if spec.segments:
        assert types.sum() > 0
    return ids, mask, types


def resolve_problem(cfg):
    if cfg.problem_type is not None:
        pt = cfg.problem_type
    else:
        pt = "regression" if cfg.num_labels == 1 else "single_label_classification"
    return pt, {"single_label_classification": "softmax", "multi_label_classification": "sigmoid",
                "regression": "none"}[pt]


def weight_names(d):
    idx = d / "model.safetensors.index.json"
    if idx.exists():
        index = json.loads(idx.read_text())
        files = sorted(set(index["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    names, dtypes = {}, set()
    for f in files:
        with safe_open(d / f, "pt") as sf:
            for k in sf.keys():
                t = sf.get_tensor(k)
                names[k] = t
                dtypes.add(str(t.dtype))
    return files, names, dtypes


def build(spec):
    d = OUT / (PREFIX + spec.name)
    seed = 20261201 + SPECS.index(spec)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    cfg = spec.config
    cfg._attn_implementation = "eager"
    model = spec.cls(cfg).eval()
    randomize(model, gen)
    if cfg.model_type == "gemma3_text":
        # Gemma's norms scale by (1 + w): shift the recipe's 1 + 0.2 r weights to 0.2 r, so that the
        # scale has the other families' spread (and Gemma's own weights' zero centre).
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.sub_(1.0)
    dtype = DTYPES[spec.dtype]
    if dtype != torch.float32:
        model = model.to(dtype)  # round once; these exact values are saved and used for the reference
    save_kw = {"safe_serialization": True}
    if spec.shard:
        save_kw["max_shard_size"] = spec.shard
    model.save_pretrained(d, **save_kw)
    expected = {k: v.detach().clone() for k, v in model.state_dict().items()}
    del model

    # Reference from the files as written, loaded back in float32.
    dtype_kw = {"dtype" if TF5 else "torch_dtype": torch.float32}
    ref_model, info = spec.cls.from_pretrained(d, attn_implementation="eager", output_loading_info=True,
                                               **dtype_kw)
    ref_model.eval()
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise RuntimeError(f"{spec.name}: loading info {bad}")
    for k, v in ref_model.state_dict().items():
        if k in expected and not torch.equal(v, expected[k].float()):
            raise RuntimeError(f"{spec.name}: {k} changed in save/load")
    assert ref_model.dtype == torch.float32

    files, saved, saved_dtypes = weight_names(d)
    want_dtype = {"float32": "torch.float32", "float16": "torch.float16", "bfloat16": "torch.bfloat16"}[spec.dtype]
    if saved_dtypes != {want_dtype}:
        raise RuntimeError(f"{spec.name}: saved dtypes {saved_dtypes}, want {want_dtype}")
    if spec.shard and len(files) < 2:
        raise RuntimeError(f"{spec.name}: expected several shards, got {files}")

    ids, mask, types = make_inputs(spec, cfg, gen)
    is_distil = cfg.model_type == "distilbert"
    kwargs = {"input_ids": ids, "attention_mask": mask}
    if not is_distil and cfg.model_type not in ("mpnet", "modernbert", "qwen3", "gemma3_text"):
        kwargs["token_type_ids"] = types
    with torch.no_grad():
        base = ref_model.base_model
        base_out = base(**kwargs)
        h = base_out.last_hidden_state.float().contiguous()
        m = mask.unsqueeze(-1).to(h.dtype)
        mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        tensors = {
            "input_ids": ids, "attention_mask": mask, "token_type_ids": types,
            "last_hidden_state": h,
            "pooled_cls": h[:, 0].clone(),
            "pooled_mean": mean.contiguous(),
            "pooled_mean_normalized": F.normalize(mean, p=2, dim=1).contiguous(),
        }
        if cfg.model_type == "mpnet":  # the buckets transformers assigns to relative distances
            from transformers.models.mpnet.modeling_mpnet import MPNetEncoder
            tensors["relative_distances"] = torch.arange(-2000, 2001, dtype=torch.int64)
            tensors["relative_buckets"] = MPNetEncoder.relative_position_bucket(tensors["relative_distances"])
        if cfg.model_type == "deberta-v2":  # the table rows transformers gives relative distances
            from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position
            distances = torch.arange(-2000, 2001, dtype=torch.int64)
            tensors["relative_distances"] = distances
            if cfg.position_buckets > 0:
                tensors["relative_buckets"] = make_log_bucket_position(
                    distances, cfg.position_buckets, cfg.max_relative_positions).to(torch.int64)
            # DeBERTa-v3-base's own bucketing (256 buckets up to 512), for the C++ unit test.
            tensors["v3_relative_buckets"] = make_log_bucket_position(distances, 256, 512).to(torch.int64)
        pooler = getattr(base_out, "pooler_output", None)
        if pooler is not None:
            tensors["pooler_output"] = pooler.float().contiguous()
        task = "embed"
        problem, activation = None, "none"
        if spec.cls.__name__.endswith("ForSequenceClassification"):
            task = "classify"
            logits = ref_model(**kwargs).logits.float()
            # The head must see the same hidden states we store.
            problem, activation = resolve_problem(cfg)
            probs = {"softmax": lambda x: torch.softmax(x, -1), "sigmoid": torch.sigmoid,
                     "none": lambda x: x.clone()}[activation](logits)
            tensors["logits"] = logits.contiguous()
            tensors["probs"] = probs.contiguous()

    # Sanity: padding must not leak into real positions. Row b alone, unpadded, gives the same states.
    with torch.no_grad():
        for b, n in enumerate(spec.lengths):
            one = {k: v[b:b + 1, :n] for k, v in kwargs.items()}
            alone = ref_model.base_model(**one).last_hidden_state
            err = (alone[0] - tensors["last_hidden_state"][b, :n]).abs().max().item()
            if err > 1e-4:
                raise RuntimeError(f"{spec.name}: row {b} differs alone vs padded by {err}")

    # One key only: safetensors writes __metadata__ from a hash map, so several keys come out in a
    # different order on every run and the file would not be byte-reproducible.
    meta = {"mcinfer": json.dumps({"generator": "tools/gen_fixtures.py", "transformers": transformers.__version__,
                                   "torch": torch.__version__.split("+")[0], "seed": seed}, sort_keys=True)}
    save_file(tensors, d / "reference.safetensors", metadata=meta)

    notes = list(spec.notes)
    notes.append("reference computed with attn_implementation='eager', eval(), no_grad, float32")
    if is_distil:
        has_pos = "embeddings.position_embeddings.weight" in saved
        notes.append("DistilBERT: no token types (token_type_ids stored as zeros, not passed to the model); "
                     "LayerNorm eps fixed at 1e-12 in code (not in config.json)")
        if cfg.sinusoidal_pos_embds:
            pos = saved["embeddings.position_embeddings.weight"].float() if has_pos else None
            notes.append(f"sinusoidal_pos_embds=true; saved file {'CONTAINS' if has_pos else 'LACKS'} "
                         "embeddings.position_embeddings.weight"
                         + (" holding the fixed table: [p, 2i] = sin(p / 10000^(2i/dim)), "
                            "[p, 2i+1] = cos(p / 10000^(2i/dim))" if has_pos else ""))
            if has_pos:
                n_pos, dim = pos.shape
                p = torch.arange(n_pos, dtype=torch.float64)[:, None]
                j = torch.arange(dim, dtype=torch.float64)[None, :]
                ang = p / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor") / dim)
                table = torch.where(j.long() % 2 == 0, torch.sin(ang), torch.cos(ang))
                err = (table.float() - pos).abs().max().item()
                notes.append(f"max |saved - analytic sinusoid| = {err:.3g}")
    if cfg.model_type in ("roberta", "xlm-roberta", "camembert", "mpnet"):
        notes.append("position ids derived from input_ids != pad_token_id (1), not from attention_mask")
    stray = [k for k in saved if k.endswith("position_ids") or k.endswith("token_type_ids")]
    notes.append("buffers position_ids/token_type_ids " + ("SAVED: " + ", ".join(stray) if stray else "not saved"))

    num_labels = cfg.num_labels if task == "classify" else 0
    ref = {
        "model_class": spec.cls.__name__,
        "model_type": cfg.model_type,
        "task": task,
        "problem_type": problem,
        "config_problem_type": cfg.problem_type,
        "activation": activation,
        "id2label": {str(k): v for k, v in cfg.id2label.items()} if task == "classify" else {},
        "num_labels": num_labels,
        "hidden_size": cfg.hidden_size if hasattr(cfg, "hidden_size") else cfg.dim,
        "dtype": spec.dtype,
        "weight_files": files,
        "notes": "; ".join(notes),
    }
    if TF5:  # the legacy fixtures record it in reference.safetensors' metadata only
        ref["saved_by"] = {"generator": "tools/gen_fixtures.py", "transformers": transformers.__version__,
                           "torch": torch.__version__.split("+")[0]}
    (d / "reference.json").write_text(json.dumps(ref, indent=2) + "\n")

    size = sum(f.stat().st_size for f in d.iterdir())
    head = {"bert": "hidden_act", "roberta": "hidden_act", "xlm-roberta": "hidden_act", "distilbert": "activation",
            "mpnet": "hidden_act", "electra": "hidden_act", "camembert": "hidden_act", "deberta-v2": "hidden_act",
            "modernbert": "hidden_activation", "qwen3": "hidden_act", "gemma3_text": "hidden_activation"}
    row = dict(name=PREFIX + spec.name, cls=spec.cls.__name__, act=getattr(cfg, head[cfg.model_type]),
               H=ref["hidden_size"],
               heads=getattr(cfg, "num_attention_heads", None) or cfg.n_heads,
               layers=getattr(cfg, "num_hidden_layers", None) or cfg.n_layers,
               inter=getattr(cfg, "intermediate_size", None) or cfg.hidden_dim,
               vocab=cfg.vocab_size, BL=f"{len(spec.lengths)}x{spec.seq_len}", dtype=spec.dtype,
               task=task if task == "embed" else f"{activation}/{num_labels}", files=len(files), kb=size / 1024)
    return row


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for d in OUT.iterdir():  # this stack's fixtures only
        if d.is_dir() and d.name.startswith("tf5_") == TF5:
            shutil.rmtree(d)
    rows = [build(s) for s in SPECS
            if (s.name in CURRENT_SPECS or s.name in CURRENT_ONLY if TF5 else s.name not in CURRENT_ONLY)]
    keys = list(rows[0].keys())
    fmt = lambda r: "  ".join(f"{(f'{r[k]:.1f}' if isinstance(r[k], float) else str(r[k])):<{w}}"
                              for k, w in zip(keys, widths))
    widths = [max(len(k), *(len(f"{r[k]:.1f}" if isinstance(r[k], float) else str(r[k])) for r in rows))
              for k in keys]
    print("  ".join(f"{k:<{w}}" for k, w in zip(keys, widths)))
    for r in rows:
        print(fmt(r))
    write_readme(rows)
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"total {total / 1024:.1f} KiB in {OUT}")


README_HEAD = """# Model fixtures

Tiny random Hugging Face encoder checkpoints, written by `save_pretrained` (safetensors) exactly as
transformers writes them, with reference outputs computed by transformers. Generated by
`tools/gen_fixtures.py`; do not edit by hand.

Regenerate (deletes and rewrites these fixtures, not the `tf5_*` ones of `README_tf5.md`;
byte-identical on every run, but for the last bits of reference values where another machine's
torch kernels round differently):

```
tools/venv.sh --legacy
.venv-legacy/bin/python tools/gen_fixtures.py
```

Each `<name>/` holds:

- `config.json` and `model.safetensors` (or `model.safetensors.index.json` + `model-0000k-of-0000n.safetensors`),
  as written by `save_pretrained`. Base models (`BertModel`, ...) have unprefixed tensor names
  (`embeddings.word_embeddings.weight`); heads prefix the encoder (`bert.`, `roberta.` — also for XLM-R —,
  `distilbert.`). The non-persistent buffers `embeddings.position_ids` / `embeddings.token_type_ids` are not saved.
- `reference.safetensors`: `input_ids`, `attention_mask`, `token_type_ids` (I64 [B, L], right-padded with the
  config's `pad_token_id`, mask 0 on padding; real ids never equal the pad id; token types all 0 except in BERT
  fixtures, where even rows of length >= 4 have a second segment of 1s), `last_hidden_state` F32 [B, L, H]
  (base model output, padded positions included as HF returns them), `pooled_cls` F32 [B, H]
  (= last_hidden_state[:, 0]), `pooled_mean` F32 [B, H] (sum(h * mask) / clamp(sum(mask), 1e-9)),
  `pooled_mean_normalized` F32 [B, H] (L2), `pooler_output` F32 [B, H] where the base model has a BERT pooler
  (dense + tanh on token 0), and for classifiers `logits` / `probs` F32 [B, num_labels].
- `reference.json`: `model_class`, `model_type`, `task` (classify|embed), `problem_type` (resolved:
  `config_problem_type` if set, else num_labels == 1 => regression, else single_label_classification),
  `config_problem_type` (as in config.json; absent there when None), `activation` (softmax|sigmoid|none, how
  `probs` was made from `logits`), `id2label`, `num_labels` (0 for embed), `hidden_size`, `dtype` (of the saved
  weights), `weight_files`, `notes`.

Weights are re-drawn after construction (seeded), as normal draws with standard deviation: linear weights
1/sqrt(fan_in), biases 0.2, LayerNorm gamma 1 + 0.2 x and beta 0.2, word embeddings 1, position / token type
embeddings 0.5; DistilBERT sinusoidal tables are left as HF computes them. With HF's own init (std 0.02,
zero biases, unit LayerNorm) a wrong activation or a dropped bias would go unnoticed; here gelu vs gelu_new
changes outputs by ~5e-4. F16/BF16 fixtures: the fp32 model is cast once, saved in that dtype, and the
reference is computed in float32 from the rounded weights loaded back. All references use
`attn_implementation="eager"`, `eval()`, `torch.no_grad()`, 1 thread (sdpa differs by ~1e-6).

| fixture | class | act | H | heads | layers | inter | vocab | B x L | dtype | head | files |
|---|---|---|---|---|---|---|---|---|---|---|---|
"""


README_TF5_HEAD = """# Model fixtures saved by transformers 5

`tf5_<name>/`: the fixtures of `README.md` of the same name, and those of the families only the
current stack writes (`tf5_mpnet_*`: MPNet's relative position bias over rows of up to 150 tokens,
past its 128-token reach; `tf5_electra_*`: ELECTRA with and without the embedding projection;
`tf5_camembert_cls`), built by the same recipe but saved and run by the current reference stack (tools/requirements.txt: transformers 5, torch 2.15): config.json
as transformers 5 writes it (`dtype` instead of `torch_dtype`, `transformers_version` 5.x), and the
reference outputs transformers 5 computes. `reference.json` has `saved_by`. Generated by
`tools/gen_fixtures.py` under the current stack; do not edit by hand:

```
tools/venv.sh
.venv/bin/python tools/gen_fixtures.py
```

| fixture | class | act | H | heads | layers | inter | vocab | B x L | dtype | head | files |
|---|---|---|---|---|---|---|---|---|---|---|---|
"""


def write_readme(rows):
    lines = [README_HEAD.rstrip("\n")]
    for r in rows:
        lines.append(f"| {r['name']} | {r['cls']} | {r['act']} | {r['H']} | {r['heads']} | {r['layers']} | "
                     f"{r['inter']} | {r['vocab']} | {r['BL']} | {r['dtype']} | {r['task']} | {r['files']} |")
    lines.append("")
    lines.append("Notes per fixture:")
    lines.append("")
    for r in rows:
        notes = json.loads((OUT / r["name"] / "reference.json").read_text())["notes"]
        lines.append(f"- `{r['name']}`: {notes}")
    if TF5:
        lines[0] = README_TF5_HEAD.rstrip("\n")
    (OUT / ("README_tf5.md" if TF5 else "README.md")).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
