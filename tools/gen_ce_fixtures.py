#!/usr/bin/env python3
"""Writes tests/fixtures/ce/<name>/: tiny random sentence-transformers CrossEncoder directories
(a BERT with a sequence-classification head, hidden 16, 2 layers, a small WordPiece vocabulary)
in each layout sentence-transformers has saved them in, and what CrossEncoder(dir).predict gives
for (query, passage) pairs, computed by the same version that saved the directory.

The layouts, one per reference stack (each run writes only its own stack's fixtures):
- ce6_*:  sentence-transformers >= 5.4 (6.3.0, tools/requirements.txt): modules.json with a
          Transformer whose sentence_bert_config.json says transformer_task
          "sequence-classification"; the activation in config_sentence_transformers.json.
          Regenerate: tools/venv.sh && .venv/bin/python tools/gen_ce_fixtures.py
- ce53_*: sentence-transformers 4.0 to 5.3 (5.3.0 with transformers 4.57.6,
          tools/requirements-st53.txt): a plain transformers directory; config.json's
          sentence_transformers.activation_fn.
          Regenerate: tools/venv.sh --st53 && .venv-st53/bin/python tools/gen_ce_fixtures.py
- ce33_*: sentence-transformers before 4.0 (3.3.1, tools/requirements-legacy.txt): a plain
          transformers directory; config.json's sbert_ce_default_activation_function, which 2.x
          wrote when the CrossEncoder was given a default_activation_function (3.3.1 reads it but
          its save drops it: the generator writes it as 2.x did). ce33_bert_no_marker has
          none: CrossEncoder.predict applies a Sigmoid (one label) that nothing in the directory
          records, so mcinfer reads it as the plain transformers classifier it looks like (the
          raw logit of a one-label, regression head).
          Regenerate: tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_ce_fixtures.py

Each <name>/ holds what CrossEncoder.save writes (README.md dropped), input.csv (id, text, pair:
every field quoted) and:
- reference.safetensors: `scores` F32 [N, labels] = CrossEncoder(dir).predict(pairs, batch_size=4)
  (one column for one label, which predict returns squeezed), and `logits` F32 [N, labels], the
  same with the identity activation.
- reference.json: saved_by, labels, the activation predict applied (class and where it was read),
  notes, and `rank`: CrossEncoder.rank(query, passages) for one query (one-label models), the list
  of {corpus_id, score} sorted by score descending.
Idempotent: deletes and rewrites the fixtures of the stack it runs under. Deterministic.
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
from safetensors.torch import save_file
from sentence_transformers import CrossEncoder
from transformers import (AutoTokenizer, BertConfig, BertForSequenceClassification, BertTokenizerFast,
                          ModernBertConfig, ModernBertForSequenceClassification, XLMRobertaConfig,
                          XLMRobertaForSequenceClassification)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_weights import randomize  # noqa: E402  (one weight recipe for all model fixtures)

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/ce"
ST_VERSION = tuple(int(x) for x in sentence_transformers.__version__.split(".")[:2])
STACK = "ce6" if ST_VERSION >= (5, 4) else "ce53" if ST_VERSION >= (4, 0) else "ce33"
SEED = {"ce6": 20261210, "ce53": 20261211, "ce33": 20261212}[STACK]
POSITIONS = 64  # the position table and the tokenizer's model_max_length: the long pair is cut
SMALL = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)

# (query, passage): short and long, an empty passage, a pair too long for 64 tokens (cut
# longest_first), words the vocabulary lacks (split into ## pieces or [UNK]).
PAIRS = [
    ("how many people live in berlin?", "berlin has a population of 3,520,031 registered inhabitants."),
    ("how many people live in berlin?", "new york city is famous for the metropolitan museum of art."),
    ("what is the capital of france?", "paris is the capital and most populous city of france."),
    ("what is the capital of france?", "the quick brown fox jumps over the lazy dog."),
    ("a man is eating food.", "a man is eating a piece of bread."),
    ("a man is eating food.", "a woman is playing the violin."),
    ("Who wrote Hamlet?", "Hamlet is a tragedy written by William Shakespeare."),
    ("who wrote hamlet?", ""),
    ("python list sort", "sorted() returns a new sorted list; list.sort() sorts in place."),
    ("zebra quagga xylophone", "unfamiliar wordpieces: antidisestablishmentarianism, floccinaucinihilipilification."),
    ("long passage", " ".join(["the city of berlin is the capital of germany and its largest city"] * 6)),
    ("Zürich café", "crème brûlée in zürich, são paulo and montréal."),
]
RANK_QUERY = "how many people live in berlin?"
RANK_PASSAGES = [p for _, p in PAIRS[:6]] + [PAIRS[10][1]]

# The vocabulary: special tokens, single characters and their ## continuations, and whole words
# (not every word of PAIRS: the others are split into pieces).
WORDS = ("the a of in is and to how many people live berlin has population registered new york city "
         "famous for museum art what capital france paris most populous quick brown fox jumps over "
         "lazy dog man eating food piece bread woman playing who wrote hamlet tragedy written by "
         "william python list sort sorted returns sorts place germany its largest long passage "
         "##s ##ed ##ing ##ly ##er ##tion").split()
CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"
PUNCT = ".,;:!?'\"()[]-_/&%$#@"


def vocabulary():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += list(CHARS) + list(PUNCT) + ["##" + c for c in CHARS]
    vocab += [w for w in WORDS if w not in vocab]
    return vocab


@dataclass
class Spec:
    name: str
    labels: list  # id2label
    # The activation the CrossEncoder is built with (None: sentence-transformers' default).
    activation: torch.nn.Module | None = None
    notes: list = field(default_factory=list)
    # The body: bert (this generator's WordPiece), xlmr (bge-reranker-v2-m3's family: the
    # SentencePiece fixture) or modernbert (gte-reranker-modernbert's: its BPE fixture).
    family: str = "bert"


SPECS = {
    "ce6": [
        Spec("ce6_bert_sigmoid", ["LABEL_0"],
             notes=["one label: sentence-transformers' default Sigmoid, recorded as activation_fn"]),
        Spec("ce6_bert_nli3", ["contradiction", "entailment", "neutral"],
             notes=["three labels: the default Identity (predict returns the logits)"]),
        Spec("ce6_xlmr_sigmoid", ["LABEL_0"], family="xlmr",
             notes=["bge-reranker-v2-m3's layout: an XLM-RoBERTa classifier (pairs as <s> q </s></s> p </s>), "
                    "one label, the default Sigmoid"]),
        Spec("ce6_modernbert_sigmoid", ["LABEL_0"], family="modernbert",
             notes=["gte-reranker-modernbert's layout: a ModernBERT classifier (rotary positions, a window "
                    "shorter than the long pairs, mean pooling into its head), one label, the default Sigmoid"]),
    ],
    "ce53": [
        Spec("ce53_bert_sigmoid", ["LABEL_0"],
             notes=["one label: the default Sigmoid, in config.json's sentence_transformers.activation_fn "
                    "(a plain transformers directory: mcinfer without the marker would return the logit)"]),
        Spec("ce53_bert_nli3", ["contradiction", "entailment", "neutral"],
             notes=["three labels: the default Identity, in config.json's sentence_transformers.activation_fn"]),
    ],
    "ce33": [
        Spec("ce33_bert_sigmoid", ["LABEL_0"], activation=torch.nn.Sigmoid(),
             notes=["default_activation_function=Sigmoid(): config.json's sbert_ce_default_activation_function"]),
        Spec("ce33_bert_nli3", ["contradiction", "entailment", "neutral"], activation=torch.nn.Identity(),
             notes=["default_activation_function=Identity(): config.json's sbert_ce_default_activation_function"]),
        Spec("ce33_bert_no_marker", ["LABEL_0"],
             notes=["no default_activation_function: CrossEncoder.predict applies a Sigmoid that the "
                    "directory does not record; mcinfer reads a plain transformers classifier (one "
                    "label: regression, the raw logit), which `logits` holds; --activation sigmoid "
                    "gives `scores`"]),
    ],
}


def bert_tokenizer(tmp, model_max_length):
    """The WordPiece tokenizer of vocabulary(). transformers 5 ignores vocab_file (its tokenizer then
    holds the 5 special tokens alone and every word is [UNK]) and takes the vocabulary as a dict;
    transformers 4 takes the file."""
    vocab_file = tmp / "vocab.txt"
    vocab_file.write_text("\n".join(vocabulary()) + "\n", encoding="utf-8")
    args = dict(vocab_file=str(vocab_file), do_lower_case=True, model_max_length=model_max_length)
    if int(transformers.__version__.split(".")[0]) >= 5:
        args["vocab"] = {w: i for i, w in enumerate(vocabulary())}
    tok = BertTokenizerFast(**args)
    assert len(tok.get_vocab()) == len(vocabulary()), "the tokenizer lost its vocabulary"
    return tok


TOK = Path(__file__).resolve().parent.parent / "tests/fixtures/tokenizer/models"


def classifier(spec):
    """A random classifier of the spec's family and its tokenizer."""
    labels = dict(num_labels=len(spec.labels), id2label=dict(enumerate(spec.labels)),
                  label2id={label: i for i, label in enumerate(spec.labels)})
    if spec.family == "xlmr":
        tok = AutoTokenizer.from_pretrained(TOK / "unigram_json", model_max_length=POSITIONS)
        cfg = XLMRobertaConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, bos_token_id=0, eos_token_id=2,
                               max_position_embeddings=POSITIONS + 2, type_vocab_size=1, layer_norm_eps=1e-5,
                               **labels, **SMALL)
        return XLMRobertaForSequenceClassification(cfg), tok
    if spec.family == "modernbert":
        tok = AutoTokenizer.from_pretrained(TOK / "modernbert_json", model_max_length=POSITIONS)
        cfg = ModernBertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, cls_token_id=tok.cls_token_id,
                               sep_token_id=tok.sep_token_id, bos_token_id=tok.cls_token_id,
                               eos_token_id=tok.sep_token_id, max_position_embeddings=POSITIONS,
                               global_attn_every_n_layers=2, local_attention=8, classifier_pooling="mean",
                               **labels, **SMALL)
        return ModernBertForSequenceClassification(cfg), tok
    cfg = BertConfig(vocab_size=len(vocabulary()), pad_token_id=0, max_position_embeddings=POSITIONS,
                     type_vocab_size=2, layer_norm_eps=1e-12, **labels, **SMALL)
    return BertForSequenceClassification(cfg), None


def build_hf(spec, gen, tmp):
    """A random classifier of the spec's family saved with save_pretrained next to its tokenizer."""
    model, tok = classifier(spec)
    if tok is None:
        tok = bert_tokenizer(tmp, POSITIONS)
    randomize(model, gen)
    model.config._name_or_path = spec.name  # else config.json would name this machine's temp folder
    hf_dir = tmp / spec.name
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    return hf_dir


def cross_encoder(path, activation=None):
    """CrossEncoder(path) with `activation` as its default, in the stack's own keyword."""
    kwargs = {"device": "cpu"}
    if activation is not None:
        kwargs["default_activation_function" if STACK == "ce33" else "activation_fn"] = activation
    return CrossEncoder(str(path), **kwargs)


def predict(ce, pairs, activation=None):
    """CrossEncoder.predict as float32 [N, labels]; `activation` instead of the default when given."""
    kwargs = {"batch_size": 4, "convert_to_numpy": True}
    if activation is not None:
        kwargs["activation_fct" if STACK == "ce33" else "activation_fn"] = activation
    scores = np.asarray(ce.predict(pairs, **kwargs), dtype=np.float32)
    return scores.reshape(len(pairs), -1)


def default_activation(ce):
    act = ce.default_activation_function if STACK == "ce33" else ce.activation_fn
    return f"{type(act).__module__}.{type(act).__name__}"


def write_csv(path, pairs):
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["id", "text", "pair"])
    w.writerows([f"p{i:02d}", q, p] for i, (q, p) in enumerate(pairs))
    path.write_bytes(buf.getvalue().encode("utf-8"))


def make(spec, gen, tmp):
    hf_dir = build_hf(spec, gen, tmp)
    d = OUT / spec.name
    ce = cross_encoder(hf_dir, spec.activation)
    if STACK == "ce33" and spec.activation is not None:
        # 3.3.1 records the activation on a config that from_pretrained has copied, so its save()
        # drops it; sentence-transformers 2.x saved it (cross-encoder/ms-marco-MiniLM-L-6-v2's
        # config.json has Identity), and 3.3.1 reads it back: the field as 2.x wrote it.
        ce.model.config.sbert_ce_default_activation_function = ce.config.sbert_ce_default_activation_function
    if STACK == "ce33":
        ce.model.config._name_or_path = spec.name  # else config.json would name the temp folder
    ce.save(str(d))
    (d / "README.md").unlink(missing_ok=True)
    for p in d.rglob("*"):
        assert p.suffix not in (".bin", ".pt", ".pth"), f"{p}: not safetensors"
    # What a user gets: load the saved directory, predict the pairs.
    loaded = cross_encoder(d)
    scores = predict(loaded, PAIRS)
    # 4.x and 5.x keep an activation given to predict as the model's: a model of its own.
    logits = predict(cross_encoder(d), PAIRS, torch.nn.Identity())
    one = np.concatenate([predict(loaded, [p]) for p in PAIRS])
    diff = float(np.abs(one - scores).max())
    assert diff < 1e-5, f"{spec.name}: batched vs one by one differ by {diff}"
    lengths = [len(loaded.tokenizer(q, p)["input_ids"]) for q, p in PAIRS]
    assert max(lengths) > POSITIONS, "the long pair must be cut"
    meta = {"mcinfer": json.dumps({
        "generator": "tools/gen_ce_fixtures.py", "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
        "scores": "CrossEncoder(dir).predict(pairs, batch_size=4)",
        "batched_vs_one_by_one_max_abs_diff": diff}, sort_keys=True)}
    save_file({"scores": torch.from_numpy(np.ascontiguousarray(scores)),
               "logits": torch.from_numpy(np.ascontiguousarray(logits))},
              d / "reference.safetensors", metadata=meta)
    write_csv(d / "input.csv", PAIRS)
    reference = {
        "saved_by": {"sentence_transformers": sentence_transformers.__version__,
                     "transformers": transformers.__version__},
        "labels": spec.labels,
        "activation": default_activation(loaded),
        "notes": spec.notes,
    }
    if len(spec.labels) == 1:
        ranked = loaded.rank(RANK_QUERY, RANK_PASSAGES, batch_size=4)
        reference["rank"] = {"query": RANK_QUERY, "passages": RANK_PASSAGES,
                             "result": [{"corpus_id": int(r["corpus_id"]), "score": float(r["score"])}
                                        for r in ranked]}
    (d / "reference.json").write_text(json.dumps(reference, indent=2, ensure_ascii=False) + "\n",
                                      encoding="utf-8")
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    print(f"{spec.name}: {len(PAIRS)} x {scores.shape[1]}, {reference['activation']}, "
          f"batched vs single {diff:.2g}, {size} bytes")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for child in OUT.iterdir():
        if child.name.startswith(STACK + "_"):
            shutil.rmtree(child)
    gen = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in SPECS[STACK]:
            make(spec, gen, Path(tmp))


if __name__ == "__main__":
    main()
