#!/usr/bin/env python3
"""Writes tests/fixtures/st/<name>/: tiny random sentence-transformers models saved by
SentenceTransformer.save (modules.json, 1_Pooling/config.json, 2_Dense/..., the Transformer's
config.json, model.safetensors and tokenizer files), and what SentenceTransformer(dir).encode gives
for a handful of texts. `mcinfer run DIR --input DIR/input.csv --output OUT.csv` with no flags must
reproduce reference.safetensors' `embeddings`.

Each model is built from models.Transformer (a tiny random BERT or RoBERTa, saved first with
save_pretrained next to a real tokenizer from tests/fixtures/tokenizer/models/<variant>/), a
models.Pooling with the mode(s) under test, optionally models.Dense layers and models.Normalize.
Weights are re-drawn like tools/gen_fixtures.py does (same randomize()), so that a dropped bias or a
wrong activation changes the outputs visibly.

Each <name>/ holds, besides the files SentenceTransformer.save writes (README.md dropped: generated
prose with dates):
- input.csv: id,text for TEXTS (CSV, every field quoted).
- reference.safetensors: `embeddings` F32 [N, D] = encode(TEXTS, convert_to_numpy=True, batch_size=4)
  (several padded batches), and the ids SentenceTransformer.tokenize fed the model (it strips each
  text first): `input_ids`, `attention_mask`, `token_type_ids` I64 [N, L], right-padded.
- reference.json: modules, pooling modes, output dimension, notes.

Also writes tests/fixtures/tokenizer_dirs/<name>/ (issue 11 item 5): what AutoTokenizer.save_pretrained
writes for a tokenizer alone, with no config.json or a partial one, plus texts.txt and expected.jsonl
(the ids of each line by the same AutoTokenizer, truncation=True, max_length=32).

Written by the legacy reference stack (sentence-transformers 3.3.1, transformers 4.46.3: directories
as versions before 5.4 save them, and what those versions compute); tools/gen_st6_fixtures.py
writes the current stack's st6_*/ and tf5_*/ beside them.
Regenerate: tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_st_fixtures.py
Idempotent: deletes and rewrites tests/fixtures/st/ and tests/fixtures/tokenizer_dirs/ (README.md,
st6_*/ and tf5_*/ kept).
"""
import csv
import io
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sentence_transformers
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformer, models
from transformers import AutoTokenizer, BertConfig, BertModel, RobertaConfig, RobertaModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_weights import randomize  # noqa: E402  (one weight recipe for all model fixtures)

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/st"
TOKDIRS = ROOT / "tests/fixtures/tokenizer_dirs"
TOK = ROOT / "tests/fixtures/tokenizer/models"
SEED = 20261201
MAX_SEQ = 24  # sentence_bert_config.json max_seq_length: the long text is truncated to it
POSITIONS = 64

# Short and long, several scripts, an empty text, whitespace-only texts and texts whose edges are
# Unicode whitespace (sentence-transformers strips each text with Python's str.strip before
# tokenizing; for byte-level BPE a leading space changes the ids).
TEXTS = [
    "Hello world.",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing spaces  ",
    "",
    "   ",
    "Zürich, São Paulo and Montréal: crème brûlée for everyone!",
    "Привет, как дела? Всё хорошо, спасибо.",
    "東京は日本の首都です。",
    "مرحبا بالعالم",
    "\u3000ideographic\u00a0spaces\u2003around\u3000",
    "\tTabbed,\nmulti-line text\r\n",
    "Prices rose 12.5% to $1,234.56 on 2024-03-14 (see #42) @home 🙂",
    "A much longer sentence that keeps going well past the twenty-four token limit of this tiny "
    "model, so that truncation to max_seq_length is exercised on every side of the comparison.",
    "Yes.",
]

BERT = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=POSITIONS, type_vocab_size=2, layer_norm_eps=1e-12)
ROBERTA = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
               max_position_embeddings=POSITIONS + 2, type_vocab_size=1, bos_token_id=0, eos_token_id=2,
               layer_norm_eps=1e-5)


@dataclass
class Spec:
    name: str
    arch: str  # bert | roberta
    variant: str  # tokenizer fixture
    pooling: list  # pooling_mode_* flags set (sentence-transformers' names without the prefix)
    dense: list = field(default_factory=list)  # (out_features, bias, activation module)
    normalize: bool = False
    notes: list = field(default_factory=list)
    include_prompt: bool = True
    prompts: dict = field(default_factory=dict)
    default_prompt: str = None
    cases: list = field(default_factory=list)  # encode() arguments besides the default, each a reference


SPECS = [
    Spec("bert_cls_dense", "bert", "wp_uncased_vocab", ["cls_token"],
         dense=[(8, True, torch.nn.Tanh())], normalize=True,
         notes=["CLS pooling, Dense 16 -> 8 with Tanh (sentence-transformers' default), Normalize"]),
    Spec("bert_max", "bert", "wp_cased_json", ["max_tokens"],
         notes=["max pooling over the attention mask, no Dense, no Normalize"]),
    Spec("roberta_meansqrt_dense2", "roberta", "bpe_files", ["mean_sqrt_len_tokens"],
         dense=[(12, False, torch.nn.Identity()), (6, True, torch.nn.ReLU())], normalize=True,
         notes=["mean_sqrt_len pooling, Dense 16 -> 12 without bias (Identity), Dense 12 -> 6 (ReLU), "
                "Normalize; byte-level BPE, so the strip of leading spaces changes ids"]),
    Spec("bert_all_modes", "bert", "wp_uncased_vocab",
         ["cls_token", "max_tokens", "mean_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens",
          "lasttoken"],
         dense=[(5, True, torch.nn.GELU())],
         notes=["every pooling mode at once: sentence-transformers concatenates them in the order cls, "
                "max, mean, mean_sqrt_len, weightedmean, lasttoken (6 x 16 = 96 values), then Dense "
                "96 -> 5 with GELU (erf)"]),
    # Last: the fixtures above keep the random draws they always had.
    Spec("roberta_prompts_cls_mean", "roberta", "bpe_files", ["cls_token", "mean_tokens"],
         include_prompt=False, prompts={"query": "query: ", "doc": " passage: "}, default_prompt="query",
         cases=[{"prompt_name": "doc"}],
         notes=["prompts with include_prompt false, as 3.x applies them: the text is prompt + text, "
                "stripped whole; the prompt's tokens (less the closing </s>) are left out of the mean, "
                "while CLS is still token 0"]),
]


def randomize_dense(dense, gen):
    """A Dense module's weights re-drawn (unit-variance outputs, visible biases)."""
    width = dense.linear.weight.shape[1]
    with torch.no_grad():
        dense.linear.weight.copy_(torch.randn(dense.linear.weight.shape, generator=gen) / width ** 0.5)
        if dense.linear.bias is not None:
            dense.linear.bias.copy_(0.2 * torch.randn(dense.linear.bias.shape, generator=gen))
    return dense


def build(spec, gen, tmp):
    tok = AutoTokenizer.from_pretrained(TOK / spec.variant)
    if spec.arch == "bert":
        cfg = BertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **BERT)
        base = BertModel(cfg, add_pooling_layer=False)
    else:
        cfg = RobertaConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **ROBERTA)
        base = RobertaModel(cfg, add_pooling_layer=False)
    randomize(base, gen)
    hf_dir = tmp / spec.name
    base.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    transformer = models.Transformer(str(hf_dir), max_seq_length=MAX_SEQ,
                                     model_args={"attn_implementation": "eager"})
    flags = {f"pooling_mode_{m}": True for m in spec.pooling}
    pooling = models.Pooling(transformer.get_word_embedding_dimension(),
                             pooling_mode_mean_tokens=flags.pop("pooling_mode_mean_tokens", False),
                             include_prompt=spec.include_prompt, **flags)
    modules = [transformer, pooling]
    width = pooling.get_sentence_embedding_dimension()
    for out, bias, act in spec.dense:
        modules.append(randomize_dense(models.Dense(width, out, bias=bias, activation_function=act), gen))
        width = out
    if spec.normalize:
        modules.append(models.Normalize())
    return SentenceTransformer(modules=modules, device="cpu", prompts=spec.prompts or None,
                               default_prompt_name=spec.default_prompt)


def write_csv(path, rows):
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["id", "text"])
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode("utf-8"))


def make_st(spec, gen, tmp):
    st = build(spec, gen, tmp)
    # Saved as given, else config.json would name this machine's temporary directory.
    st[0].auto_model.config._name_or_path = spec.name
    d = OUT / spec.name
    st.save(str(d), safe_serialization=True)
    (d / "README.md").unlink(missing_ok=True)
    for p in d.rglob("*"):
        assert p.suffix not in (".bin", ".pt", ".pth"), f"{p}: not safetensors"
    # What a user gets: load the saved directory, encode the raw texts.
    loaded = SentenceTransformer(str(d), device="cpu", model_kwargs={"attn_implementation": "eager"})
    emb = loaded.encode(TEXTS, convert_to_numpy=True, batch_size=4)
    emb = torch.from_numpy(np.ascontiguousarray(emb, dtype=np.float32))
    # The same row by row (no padding): must agree, or the reference depends on batching.
    one = torch.from_numpy(np.stack([loaded.encode([t], convert_to_numpy=True)[0] for t in TEXTS]))
    diff = (one - emb).abs().max().item()
    assert diff < 1e-5, f"{spec.name}: batched vs one by one differ by {diff}"
    feats = loaded.tokenize(TEXTS)
    ids = feats["input_ids"].to(torch.int64)
    mask = feats["attention_mask"].to(torch.int64)
    types = feats.get("token_type_ids", torch.zeros_like(ids)).to(torch.int64)
    assert mask.sum(1).max().item() == MAX_SEQ, "the long text must reach max_seq_length"
    meta = {"mcinfer": json.dumps({
        "generator": "tools/gen_st_fixtures.py", "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
        "embeddings": "SentenceTransformer(dir).encode(texts, convert_to_numpy=True, batch_size=4)",
        "batched_vs_one_by_one_max_abs_diff": diff}, sort_keys=True)}
    tensors = {"input_ids": ids.contiguous(), "attention_mask": mask.contiguous(),
               "token_type_ids": types.contiguous(), "embeddings": emb.contiguous()}
    cases = []
    if spec.prompts:  # the format of tools/gen_st6_fixtures.py: embeddings_<case> per encode() call
        tensors["embeddings_default"] = emb.clone().contiguous()
        cases.append({"name": "default", "encode_args": {}})
        for args in spec.cases:
            name = "prompt_name_" + args["prompt_name"]
            other = loaded.encode(TEXTS, convert_to_numpy=True, batch_size=4, **args)
            tensors[f"embeddings_{name}"] = torch.from_numpy(np.ascontiguousarray(other, dtype=np.float32))
            cases.append({"name": name, "encode_args": args})
    save_file(tensors, d / "reference.safetensors", metadata=meta)
    write_csv(d / "input.csv", [[f"t{i:02d}", t] for i, t in enumerate(TEXTS)])
    (d / "reference.json").write_text(json.dumps({
        "modules": [type(m).__name__ for m in loaded],
        "pooling_modes": spec.pooling,
        "dense": [{"out_features": o, "bias": b, "activation": type(a).__name__} for o, b, a in spec.dense],
        "normalize": spec.normalize,
        "output_dim": int(emb.shape[1]),
        "max_seq_length": MAX_SEQ,
        "notes": spec.notes,
        **({"prompts": spec.prompts, "default_prompt_name": spec.default_prompt,
            "include_prompt": spec.include_prompt, "cases": cases} if spec.prompts else {}),
    }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    print(f"{spec.name}: {emb.shape[0]} x {emb.shape[1]}, batched vs single {diff:.2g}, {size} bytes")


TOKDIR_TEXTS = [t for t in TEXTS if "\n" not in t and "\r" not in t] + [
    "Ein Satz auf Deutsch, mit Umlauten: äöü ß.",
    " ".join(["token"] * 60),
]


def make_tokenizer_dirs():
    """AutoTokenizer.save_pretrained alone: no config.json, config.json with model_type only, and a
    full-looking config.json that lacks the model dimensions."""
    cases = [
        ("wordpiece_no_config", "wp_cased_json", None),
        ("wordpiece_model_type_only", "wp_uncased_vocab", {"model_type": "bert"}),
        ("bpe_no_hidden_size", "bpe_files", "roberta-without-hidden_size"),
    ]
    for name, variant, config in cases:
        d = TOKDIRS / name
        tok = AutoTokenizer.from_pretrained(TOK / variant)
        tok.save_pretrained(d)
        if config == "roberta-without-hidden_size":
            full = RobertaConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id).to_dict()
            config = {k: v for k, v in full.items() if k != "hidden_size" and k != "transformers_version"}
        if config is not None:
            (d / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        lines = []
        for t in TOKDIR_TEXTS:
            lines.append(json.dumps(tok(t, truncation=True, max_length=32)["input_ids"]))
        (d / "texts.txt").write_bytes(("\n".join(TOKDIR_TEXTS) + "\n").encode("utf-8"))
        (d / "expected.jsonl").write_text("\n".join(lines) + "\n")
        print(f"{name}: {sorted(p.name for p in d.iterdir())}")


def make_all(specs, make, seed):
    """make(spec, gen, tmp) for every spec, drawing from one generator seeded with `seed`."""
    gen = torch.Generator().manual_seed(seed)
    # models.Transformer loads the base model with a freshly initialised BERT pooler (unused, and
    # ignored by mcinfer, but saved): drawn from the global generator.
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            make(spec, gen, Path(tmp))


def main():
    for d in (OUT, TOKDIRS):
        d.mkdir(parents=True, exist_ok=True)
        for child in d.iterdir():
            # README.md is written by hand; st6_* and tf5_* are tools/gen_st6_fixtures.py's.
            if child.name != "README.md" and not child.name.startswith(("st6_", "tf5_")):
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    make_all(SPECS, make_st, SEED)
    make_tokenizer_dirs()


if __name__ == "__main__":
    main()
