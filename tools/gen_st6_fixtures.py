#!/usr/bin/env python3
"""Writes tests/fixtures/st/st6_<name>/: tiny random sentence-transformers models built and saved
with sentence-transformers 6 (the current reference stack, tools/requirements.txt), and what
SentenceTransformer(dir).encode gives for them with the prompts they define; and
tests/fixtures/tokenizer_dirs/tf5_<name>/: tokenizer directories as transformers 5 saves or reads
them, with the ids its AutoTokenizer gives.

What sentence-transformers 6 writes that earlier versions did not: module types
`sentence_transformers.base.modules.transformer.Transformer`, `...sentence_transformer.modules.
pooling.Pooling`, `...base.modules.dense.Dense` and `...normalize.Normalize` (with a config.json of
its feature names); Pooling's `embedding_dimension` and `pooling_mode` as a name or a list
(concatenated in the order given); `include_prompt`; `sentence_bert_config.json` with
`transformer_task` and `modality_config` and without `max_seq_length` unless one is set; prompts
and `default_prompt_name` in config_sentence_transformers.json. encode() no longer strips texts
(from 5.4), and with include_prompt false CLS pooling takes the first token after the prompt
(from 5.5).

Each st6_<name>/ holds what SentenceTransformer.save writes (README.md dropped), input.csv (id,text)
and reference.safetensors with `embeddings_<case>` F32 [N, D] for each case of reference.json's
`cases` (the encode() arguments: prompt_name or prompt, or none), computed by encode(texts,
batch_size=4, **args) and checked against encoding each text alone.

Regenerate: tools/venv.sh && .venv/bin/python tools/gen_st6_fixtures.py
Idempotent: deletes and rewrites tests/fixtures/st/st6_*/ and tests/fixtures/tokenizer_dirs/tf5_*/.
"""
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sentence_transformers
import tokenizers
import torch
import transformers
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from tokenizers import Tokenizer
from transformers import (AutoTokenizer, BertConfig, BertModel, Gemma3TextConfig, Gemma3TextModel,
                          ModernBertConfig, ModernBertModel,
                          MPNetConfig, MPNetModel, Qwen3Config, Qwen3Model, RobertaConfig, RobertaModel,
                          XLMRobertaConfig, XLMRobertaModel)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_weights import randomize  # noqa: E402  (one weight recipe for all model fixtures)
# The same folders, texts and recipe as the legacy stack's generator (which sets one thread).
from gen_st_fixtures import (OUT, TEXTS, TOK, TOKDIR_TEXTS, TOKDIRS, make_all,  # noqa: E402
                             randomize_dense, write_csv)

assert int(sentence_transformers.__version__.split(".")[0]) >= 6, "run with the current stack (.venv)"

SEED = 20261204
POSITIONS = 64
MAX_LEN = 24  # the tokenizer's model_max_length (or max_seq_length): long texts are truncated

SMALL = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)


@dataclass
class Spec:
    name: str
    arch: str  # bert | roberta | xlmr
    variant: str  # tokenizer fixture
    pooling: list  # pooling_mode, in the order given
    include_prompt: bool
    prompts: dict
    default_prompt: str | None
    cases: list  # encode() keyword arguments, one reference each
    dense: list = field(default_factory=list)  # (out_features, bias, activation module)
    normalize: bool = False
    max_seq_length: int | None = None  # None: sentence_bert_config.json has none
    notes: list = field(default_factory=list)


SPECS = [
    Spec("st6_bert_prompts", "bert", "wp_uncased_vocab", ["cls", "mean"], include_prompt=False,
         prompts={"query": "query: ", "doc": "passage: "}, default_prompt="query",
         cases=[{}, {"prompt_name": "doc"}, {"prompt": "Represent: "},
                {"prompt_name": "document"}],
         dense=[(8, True, torch.nn.Tanh())], normalize=True,
         notes=["pooling_mode ['cls', 'mean'] with include_prompt false: the prompt's tokens (and [CLS] "
                "before them) are left out of the mean, and CLS takes the first token after them",
                "default_prompt_name 'query'; 'document' is sentence-transformers' empty default prompt",
                "no max_seq_length: the tokenizer's model_max_length (24) limits the rows"]),
    Spec("st6_roberta_mean", "roberta", "bpe_files", ["mean"], include_prompt=True,
         prompts={"query": "query: "}, default_prompt=None, cases=[{}, {"prompt_name": "query"}],
         max_seq_length=MAX_LEN,
         notes=["byte-level BPE: the texts with edge whitespace are not stripped since 5.4, so their "
                "ids differ from what 3.x fed the model",
                "include_prompt true: the prompt's tokens are pooled with the text's"]),
    Spec("st6_xlmr_last_weighted_max", "xlmr", "unigram_json", ["lasttoken", "weightedmean", "max"],
         include_prompt=False, prompts={"query": "query: ", "passage": "passage: "},
         default_prompt="passage", cases=[{}, {"prompt_name": "query"}],
         dense=[(6, True, torch.nn.GELU())],
         notes=["three modes concatenated in the given order (not the fixed order of 3.x's flags)",
                "XLM-R tokenizer as transformers 5 saves it (its tokenizer.json is transformers 5's "
                "pipeline)"]),
    Spec("st6_mpnet_mean_norm", "mpnet", "mpnet_json", ["mean"], include_prompt=True,
         prompts={"query": "query: "}, default_prompt=None, cases=[{}, {"prompt_name": "query"}],
         normalize=True, max_seq_length=MAX_LEN,
         notes=["all-mpnet-base-v2's layout: MPNet (relative position bias), mean pooling, Normalize; "
                "MPNetTokenizer as transformers 5 saves it; rows of up to 24 tokens reach the "
                "log-spaced relative buckets"]),
    # Appended last: the specs above keep their random draws.
    Spec("st6_modernbert_prompts", "modernbert", "modernbert_json", ["mean"], include_prompt=True,
         prompts={"query": "search_query: ", "document": "search_document: "}, default_prompt=None,
         cases=[{}, {"prompt_name": "query"}, {"prompt_name": "document"}], normalize=True,
         max_seq_length=MAX_LEN,
         notes=["modernbert-embed's layout: ModernBERT (rotary positions, a window of +-2 around "
                "each token in every other layer, GeGLU, no biases), mean pooling over the prompt "
                "too, Normalize; search_query / search_document prompts",
                "a ModernBERT-layout tokenizer.json (byte-level BPE, specials after the vocabulary)"]),
    Spec("st6_qwen3_embedding", "qwen3", "qwen2_json", ["lasttoken"], include_prompt=True,
         prompts={"query": "Instruct: Given a web search query, retrieve relevant passages that answer the "
                           "query\nQuery:", "document": ""},
         default_prompt=None, cases=[{}, {"prompt_name": "query"}, {"prompt": "Instruct: Find the topic\nQuery:"},
                                     {"prompt_name": "query", "truncate_dim": 8, "normalize_embeddings": True}],
         normalize=True,
         notes=["Qwen3-Embedding's layout: a Qwen3Model (grouped-query attention, head size 16, q/k RMS norms, "
                "causal), last-token Pooling, Normalize; its query prompt; the tokenizer pads on the left and "
                "appends <|endoftext|>, the token pooled"]),
    Spec("st6_embeddinggemma", "gemma3", "gemma_json", ["mean"], include_prompt=True,
         prompts={"query": "task: search result | query: ", "document": "title: none | text: ",
                  "Classification": "task: classification | query: "},
         default_prompt=None, cases=[{}, {"prompt_name": "query"}, {"prompt_name": "document"},
                                     {"truncate_dim": 16, "normalize_embeddings": True}],
         dense=[(64, False, torch.nn.Identity()), (32, False, torch.nn.Identity())], normalize=True,
         notes=["EmbeddingGemma's layout: a Gemma3TextModel with bidirectional attention (sliding layers "
                "|i - j| <= 4, (1 + w) norms around each block, GQA, embeddings x sqrt(hidden)), mean Pooling, "
                "Dense 32 -> 64 -> 32 without bias (Identity), Normalize; its query / document prompts"]),
]


def base_model(spec, tok):
    if spec.arch == "gemma3":
        cfg = Gemma3TextConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, max_position_embeddings=POSITIONS,
                               hidden_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                               head_dim=16, intermediate_size=48, rms_norm_eps=1e-6, query_pre_attn_scalar=16,
                               sliding_window=8, use_bidirectional_attention=True,
                               layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                               hidden_activation="gelu_pytorch_tanh")
        model = Gemma3TextModel(cfg)
        return model
    if spec.arch == "qwen3":
        cfg = Qwen3Config(vocab_size=len(tok), pad_token_id=tok.pad_token_id, max_position_embeddings=POSITIONS,
                          hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          head_dim=16, intermediate_size=48, rms_norm_eps=1e-6,
                          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                          tie_word_embeddings=False)
        return Qwen3Model(cfg)
    if spec.arch == "modernbert":
        cfg = ModernBertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id,
                               cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id,
                               bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                               max_position_embeddings=POSITIONS, global_attn_every_n_layers=2,
                               local_attention=4, norm_eps=1e-5, hidden_activation="gelu",
                               **SMALL)
        return ModernBertModel(cfg)
    if spec.arch == "mpnet":
        cfg = MPNetConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, max_position_embeddings=POSITIONS + 2,
                          relative_attention_num_buckets=32, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5,
                          **SMALL)
        return MPNetModel(cfg, add_pooling_layer=False)
    if spec.arch == "bert":
        cfg = BertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, max_position_embeddings=POSITIONS,
                         type_vocab_size=2, layer_norm_eps=1e-12, **SMALL)
        return BertModel(cfg, add_pooling_layer=False)
    cls_cfg, cls_model = (RobertaConfig, RobertaModel) if spec.arch == "roberta" else (XLMRobertaConfig,
                                                                                     XLMRobertaModel)
    cfg = cls_cfg(vocab_size=len(tok), pad_token_id=tok.pad_token_id, max_position_embeddings=POSITIONS + 2,
                  type_vocab_size=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5, **SMALL)
    return cls_model(cfg, add_pooling_layer=False)


def build(spec, gen, tmp):
    tok = AutoTokenizer.from_pretrained(TOK / spec.variant, model_max_length=MAX_LEN)
    base = base_model(spec, tok)
    randomize(base, gen)
    if spec.arch == "gemma3":  # (1 + w) norms: weights around 0, as Gemma's (tools/gen_fixtures.py)
        with torch.no_grad():
            for name, p in base.named_parameters():
                if name.endswith("norm.weight"):
                    p.sub_(1.0)
    hf_dir = tmp / spec.name
    base.config._name_or_path = spec.name  # else config.json would name this machine's temp folder
    base.save_pretrained(hf_dir)
    tok.save_pretrained(hf_dir)
    kwargs = {"model_kwargs": {"attn_implementation": "eager"}}
    if spec.max_seq_length:
        kwargs["max_seq_length"] = spec.max_seq_length
    transformer = Transformer(str(hf_dir), **kwargs)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=spec.pooling,
                      include_prompt=spec.include_prompt)
    modules = [transformer, pooling]
    width = pooling.get_embedding_dimension()
    for out, bias, act in spec.dense:
        modules.append(randomize_dense(Dense(width, out, bias=bias, activation_function=act), gen))
        width = out
    if spec.normalize:
        modules.append(Normalize())
    return SentenceTransformer(modules=modules, device="cpu", prompts=spec.prompts,
                               default_prompt_name=spec.default_prompt)


def case_name(args):
    if not args:
        return "default"
    if "truncate_dim" in args:  # Matryoshka: the first N values, normalised again
        return f"truncate_dim_{args['truncate_dim']}" + ("_query" if "prompt_name" in args else "")
    if "prompt_name" in args:
        return "prompt_name_" + args["prompt_name"]
    return "prompt_text"


def make_st(spec, gen, tmp):
    st = build(spec, gen, tmp)
    d = OUT / spec.name
    st.save(str(d))
    (d / "README.md").unlink(missing_ok=True)
    loaded = SentenceTransformer(str(d), device="cpu", model_kwargs={"attn_implementation": "eager"})
    tensors, cases, worst = {}, [], 0.0
    for args in spec.cases:
        emb = loaded.encode(TEXTS, convert_to_numpy=True, batch_size=4, **args)
        one = np.stack([loaded.encode([t], convert_to_numpy=True, **args)[0] for t in TEXTS])
        diff = float(np.abs(one - emb).max())
        assert diff < 1e-5, f"{spec.name} {args}: batched vs one by one differ by {diff}"
        worst = max(worst, diff)
        name = case_name(args)
        tensors[f"embeddings_{name}"] = torch.from_numpy(np.ascontiguousarray(emb, dtype=np.float32))
        cases.append({"name": name, "encode_args": args})
    # A prompt must change what the model sees, else the cases test nothing.
    default = tensors["embeddings_default"]
    for c in cases[1:]:
        other = tensors[f"embeddings_{c['name']}"]
        # A truncated case against the same prefix of the full one: its renormalisation shows.
        changed = float((other - default[:, :other.shape[1]]).abs().max())
        if c["encode_args"].get("prompt_name") != "document":
            assert changed > 1e-3, f"{spec.name} {c}: a prompt that changes nothing"
    meta = {"mcinfer": json.dumps({
        "generator": "tools/gen_st6_fixtures.py", "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
        "batched_vs_one_by_one_max_abs_diff": worst}, sort_keys=True)}
    save_file(tensors, d / "reference.safetensors", metadata=meta)
    write_csv(d / "input.csv", [[f"t{i:02d}", t] for i, t in enumerate(TEXTS)])
    (d / "reference.json").write_text(json.dumps({
        "saved_by": {"sentence_transformers": sentence_transformers.__version__,
                     "transformers": transformers.__version__},
        "modules": [type(m).__name__ for m in loaded],
        "pooling_mode": spec.pooling,
        "include_prompt": spec.include_prompt,
        "prompts": spec.prompts,
        "default_prompt_name": spec.default_prompt,
        "cases": cases,
        "output_dim": int(default.shape[1]),
        "max_len": MAX_LEN,
        "notes": spec.notes,
    }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{spec.name}: {len(TEXTS)} x {default.shape[1]}, {len(cases)} cases, batched vs single {worst:.2g}")


def tokdir_expected(d, tok, name="expected.jsonl"):
    lines = [json.dumps(tok(t, truncation=True, max_length=32)["input_ids"]) for t in TOKDIR_TEXTS]
    (d / name).write_text("\n".join(lines) + "\n")


def make_tokenizer_dirs():
    """What transformers 5 saves for a tokenizer alone, and an XLM-R directory whose tokenizer.json
    was converted by an older tokenizers (the fixture's) next to a config.json of transformers 5:
    transformers 5 rebuilds that pipeline from the class, so its ids differ from the file's."""
    for name, variant in [("tf5_wordpiece_no_config", "wp_cased_json"), ("tf5_unigram_no_config", "unigram_spm"),
                          ("tf5_bpe_no_config", "bpe_files")]:
        d = TOKDIRS / name
        tok = AutoTokenizer.from_pretrained(TOK / variant)
        tok.save_pretrained(d)
        (d / "texts.txt").write_bytes(("\n".join(TOKDIR_TEXTS) + "\n").encode("utf-8"))
        tokdir_expected(d, tok)
        print(f"{name}: {sorted(p.name for p in d.iterdir())}")
    d = TOKDIRS / "tf5_xlmr_old_tokenizer_json"
    d.mkdir()
    for f in (TOK / "unigram_json").iterdir():
        shutil.copy(f, d / f.name)
    (d / "config.json").write_text(json.dumps(
        {"model_type": "xlm-roberta", "transformers_version": transformers.__version__}, indent=2) + "\n")
    # U+0085 and U+2028/9 are whitespace to transformers 5's whitespace split but not to the
    # file's SentencePiece normalizer (lines of the tokenizer corpus where the two differ).
    texts = TOKDIR_TEXTS + ["a\u0085b \u2028line\u2029para", "trailing space ", "two  spaces  inside",
                            "señor Ódy mañan\x85a ) Łódź", "Bäckerei MÄD\u2009CHEN \x85Rechtsschutz",
                            "\u2028line\u2029para\x85nel", "Հայաս\x85տան ქართული?"]
    (d / "texts.txt").write_bytes(("\n".join(texts) + "\n").encode("utf-8"))
    v5 = AutoTokenizer.from_pretrained(d)
    raw = Tokenizer.from_file(str(d / "tokenizer.json"))
    raw.enable_truncation(32)
    want_v5 = [v5(t, truncation=True, max_length=32)["input_ids"] for t in texts]
    want_file = [raw.encode(t).ids for t in texts]
    assert want_v5 != want_file, "the two pipelines must differ on these texts"
    (d / "expected.jsonl").write_text("\n".join(json.dumps(x) for x in want_v5) + "\n")
    (d / "expected_file.jsonl").write_text("\n".join(json.dumps(x) for x in want_file) + "\n")
    print(f"tf5_xlmr_old_tokenizer_json: {sum(a != b for a, b in zip(want_v5, want_file))} of {len(texts)} "
          f"texts differ between transformers 5 and the file (tokenizers {tokenizers.__version__})")


def main():
    for d in list(OUT.glob("st6_*")) + list(TOKDIRS.glob("tf5_*")):
        shutil.rmtree(d)
    make_all(SPECS, make_st, SEED)
    make_tokenizer_dirs()


if __name__ == "__main__":
    main()
