#!/usr/bin/env python3
"""Writes tests/fixtures/chunk/: the references for `--long-input chunk`.

windows/<variant>.json: for each tokenizer variant of tests/fixtures/tokenizer/models/, long
multilingual texts (corpus lines joined) and, per max_length, texts exactly at the window's
content limit and one token past it; for each max_length and stride, the windows Hugging Face's
fast tokenizer returns for

    tok(text, max_length=M, truncation=True, stride=K, return_overflowing_tokens=True)

stored as [begin, end) ranges into the text's content tokens (`ids`: tok(text) without
truncation, special tokens included; `prefix`/`suffix`: the special tokens of a window). Every
range is checked here to rebuild HF's window exactly, so the file holds HF's windows. Strides:
0, 1, M // 2 and M - specials - 1 (the largest HF accepts); a stride of M - specials is checked
to be refused by HF. `pairs`: (short first text, long second text) with the windows, as full ids,
of tok(a, b, truncation="only_second", ...) for the same lengths and strides, or "refused" where
HF refuses (the first text leaves the second no more room than the stride).

<model>/: input.csv (long corpus rows, one id twice) and expected_<case>.csv for models of
tests/fixtures/text/: every window through transformers alone (eager attention, fp32, 1 thread),
then each row's output reduced from its windows as mcinfer's --chunk-reduce defines it, in
float64: mean, max, first, token-weighted (weights: the window's tokens, special tokens
included). Classifiers reduce logits then apply softmax (--chunk-values logits) or reduce
softmax rows (probs); embedders reduce the windows' mean-pooled vectors, then L2-normalise.
Duplicate ids are averaged (groupby("id", sort=False).mean()). cases.json lists each case's flags
and windows per row, and each row's untruncated length (for the truncation counts).

Regenerate: tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_chunk_fixtures.py
Idempotent and deterministic.
"""
import csv
import io
import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

torch.set_num_threads(1)
os.environ["RUST_BACKTRACE"] = "0"  # the refused stride panics in Rust: its message is enough
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/chunk"
TOK = ROOT / "tests/fixtures/tokenizer"
TEXT = ROOT / "tests/fixtures/text"
SEED = 20261202
VARIANTS = ["minilm_json", "wp_cased_json", "wp_uncased_vocab", "unigram_json", "unigram_spm",
            "bpe_json", "bpe_files"]
WINDOW_MAX_LENS = [16, 40]
MODEL_MAX_LEN = 32
# (fixture, task, cases: (tag, stride, reduce, values))
MODELS = [
    ("bert_cls", "classify", [("s0_mean_logits", 0, "mean", "logits"),
                              ("s8_max_probs", 8, "max", "probs"),
                              ("s29_tw_logits", 29, "token-weighted", "logits"),
                              ("s1_first_logits", 1, "first", "logits")]),
    ("roberta_cls", "classify", [("s4_mean_probs", 4, "mean", "probs"),
                                 ("s16_tw_logits", 16, "token-weighted", "logits")]),
    ("xlmr_embed", "embed", [("s0_mean", 0, "mean", None), ("s16_tw", 16, "token-weighted", None),
                             ("s3_max", 3, "max", None), ("s5_first", 5, "first", None)]),
]


def read_corpus():
    data = (TOK / "corpus.txt").read_bytes()
    return [line.decode("utf-8") for line in data[:-1].split(b"\n")]


def long_texts(corpus, rng, count, min_chars, max_chars):
    """Corpus lines joined by spaces until the text is long; no NUL (CSV-safe in every reader)."""
    usable = [t for t in corpus if t.strip() and "\x00" not in t and t.isprintable()]
    out = []
    while len(out) < count:
        text = ""
        target = rng.randint(min_chars, max_chars)
        while len(text) < target:
            text = (text + " " + rng.choice(usable)).strip()
        out.append(text)
    return out


def content(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def at_length(tok, text, n):
    """The shortest prefix of `text` with exactly n content tokens, or None."""
    lo = None
    for end in range(1, len(text) + 1):
        if len(content(tok, text[:end])) == n and not text[end - 1].isspace():
            lo = text[:end]
            break
    return lo


def hf_windows(tok, text, max_len, stride):
    enc = tok(text, max_length=max_len, truncation=True, stride=stride, return_overflowing_tokens=True)
    return enc["input_ids"]


def window_cases(variant, corpus, rng):
    tok = AutoTokenizer.from_pretrained(TOK / "models" / variant)
    assert tok.is_fast, variant
    specials = tok.num_special_tokens_to_add(pair=False)
    frame = tok("", add_special_tokens=True)["input_ids"]
    prefix, suffix = frame[:1], frame[1:]
    assert len(prefix) + len(suffix) == specials
    texts = long_texts(corpus, rng, 4, 300, 900)
    sources = long_texts(corpus, rng, 8, 600, 800)
    for m in WINDOW_MAX_LENS:
        for n in (m - specials, m - specials + 1):
            # A token can take several characters to appear: some texts have no prefix of n.
            t = next((p for p in (at_length(tok, s, n) for s in sources) if p is not None), None)
            if t is None:
                raise RuntimeError(f"{variant}: no prefix of {n} tokens")
            texts.append(t)
    records = []
    for text in texts:
        ids = tok(text)["input_ids"]
        body = ids[len(prefix):len(ids) - len(suffix)]
        assert ids[:len(prefix)] == prefix and ids[len(ids) - len(suffix):] == suffix
        cases = []
        for m in WINDOW_MAX_LENS:
            room = m - specials
            for stride in sorted({0, 1, m // 2, room - 1}):
                got = hf_windows(tok, text, m, stride)
                ranges, begin = [], 0
                for w in got:
                    inner = w[len(prefix):len(w) - len(suffix)]
                    # HF's windows are consecutive slices; find each at its expected start.
                    assert body[begin:begin + len(inner)] == inner, (variant, m, stride)
                    assert w == prefix + inner + suffix
                    ranges.append([begin, begin + len(inner)])
                    begin += room - stride
                cases.append({"max_len": m, "stride": stride, "windows": ranges})
            try:
                hf_windows(tok, text, m, room)
                too_large_refused = False
            except BaseException as e:  # HF asserts: a PanicException from Rust (not an Exception)
                if isinstance(e, KeyboardInterrupt):
                    raise
                too_large_refused = True
            if len(body) > room and not too_large_refused:
                raise RuntimeError(f"{variant}: HF accepted stride {room} at max_len {m}")
        records.append({"text": text, "ids": ids, "cases": cases})
    pairs = []
    firsts = [t[:rng.randint(5, 40)] for t in long_texts(corpus, rng, 3, 60, 100)]
    firsts.append(long_texts(corpus, rng, 1, 300, 400)[0])  # leaves no room at all
    for a, b in zip(firsts, long_texts(corpus, rng, len(firsts), 200, 500)):
        cases = []
        for m in WINDOW_MAX_LENS:
            room = m - tok.num_special_tokens_to_add(pair=True)
            for stride in sorted({0, 1, m // 2, room - 1}):
                try:
                    got = tok(a, b, max_length=m, truncation="only_second", stride=stride,
                              return_overflowing_tokens=True)
                    cases.append({"max_len": m, "stride": stride, "windows": got["input_ids"],
                                  "type_ids": got["token_type_ids"] if "token_type_ids" in got else None})
                except BaseException as e:
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    cases.append({"max_len": m, "stride": stride, "refused": True})
        pairs.append({"text": a, "pair": b, "cases": cases})
    return {"variant": variant, "specials": specials, "prefix": prefix, "suffix": suffix,
            "texts": records, "pairs": pairs}


def reduce(values, tokens, how):
    v = np.asarray(values, dtype=np.float64)
    if how == "first":
        return v[0]
    if how == "max":
        return v.max(axis=0)
    if how == "mean":
        return v.mean(axis=0)
    w = np.asarray(tokens, dtype=np.float64)
    return (v * w[:, None]).sum(axis=0) / w.sum()


def window_outputs(model, task, enc):
    """Each window alone through the model: logits, or the mean-pooled last hidden state."""
    out = []
    with torch.no_grad():
        for k, w in enumerate(enc["input_ids"]):
            inputs = {"input_ids": torch.tensor([w]), "attention_mask": torch.ones(1, len(w), dtype=torch.long)}
            if "token_type_ids" in enc:
                inputs["token_type_ids"] = torch.tensor([enc["token_type_ids"][k]])
            if task == "classify":
                out.append(model(**inputs).logits[0].double().numpy())
            else:
                out.append(model(**inputs).last_hidden_state[0].double().mean(dim=0).numpy())
    return out


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def row_windows(tok, text, pair, stride):
    """HF's windows of a row (only_second for a pair); a pair whose first text leaves no room is
    truncated as a row that is not chunked (longest_first), as mcinfer does."""
    if pair is None:
        return tok(text, max_length=MODEL_MAX_LEN, truncation=True, stride=stride,
                   return_overflowing_tokens=True)
    # Batched, as a pipeline calls it: tok(a, "") alone would drop an empty second text, while
    # tok([a], [""]) keeps the pair ([CLS] a [SEP] [SEP]), as mcinfer does.
    try:
        return tok([text], [pair], max_length=MODEL_MAX_LEN, truncation="only_second", stride=stride,
                   return_overflowing_tokens=True)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return tok([text], [pair], max_length=MODEL_MAX_LEN, truncation=True)


def model_case(name, task, cases, corpus, rng, out_name=None, pair=False):
    d = TEXT / name
    tok = AutoTokenizer.from_pretrained(d)
    cls = AutoModelForSequenceClassification if task == "classify" else AutoModel
    model = cls.from_pretrained(d, attn_implementation="eager").eval()
    texts = long_texts(corpus, rng, 9, 150, 700) + ["short row", ""]
    ids = [f"doc{i}" for i in range(len(texts))]
    ids[5] = ids[2]  # a duplicate id: its two rows' outputs are averaged
    pairs = [None] * len(texts)
    if pair:
        # Short first texts (a query) with the long texts as second; row 4's first text is too
        # long to leave the second any room, and row 9's pair fits.
        pairs = texts
        texts = [t[:rng.randint(5, 30)] for t in long_texts(corpus, rng, len(pairs), 40, 60)]
        texts[4] = long_texts(corpus, rng, 1, 200, 300)[0]
    out = OUT / (out_name or name)
    out.mkdir(parents=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "text", "text_b"] if pair else ["id", "text"])
    w.writerows(zip(ids, texts, pairs) if pair else zip(ids, texts))
    (out / "input.csv").write_text(buf.getvalue(), encoding="utf-8")
    if task == "classify":
        columns = [model.config.id2label[i] for i in range(model.config.num_labels)]
    else:
        columns = [f"e{i}" for i in range(model.config.hidden_size)]
    meta = []
    for tag, stride, how, values in cases:
        rows = []
        windows_per_row = []
        for text, second in zip(texts, pairs):
            enc = row_windows(tok, text, second, stride)
            windows = enc["input_ids"]
            windows_per_row.append(len(windows))
            outs = window_outputs(model, task, enc)
            tokens = [len(x) for x in windows]
            if task == "classify":
                if values == "probs":
                    row = reduce([softmax(o) for o in outs], tokens, how)
                else:
                    row = softmax(reduce(outs, tokens, how))
            else:
                row = reduce(outs, tokens, how)
                row = row / max(np.linalg.norm(row), 1e-12)
            rows.append(row)
        frame = pd.DataFrame(rows, columns=columns)
        frame.insert(0, "id", ids)
        frame = frame.groupby("id", sort=False).mean().reset_index()
        frame.to_csv(out / f"expected_{tag}.csv", index=False, float_format="%.9g")
        flags = ["--max-len", str(MODEL_MAX_LEN), "--long-input", "chunk", "--stride", str(stride),
                 "--chunk-reduce", how]
        if values:
            flags += ["--chunk-values", values]
        if task == "embed":
            flags += ["--task", "embed", "--normalize"]
        if pair:
            flags += ["--text-pair-col", "text_b"]
        meta.append({"case": tag, "flags": flags, "windows_per_row": windows_per_row})
        if max(windows_per_row) < 3:
            raise RuntimeError(f"{name} {tag}: rows are not long enough")
    # Untruncated, special tokens included.
    tokens = [len(tok([t], [p] if p is not None else None)["input_ids"][0]) for t, p in zip(texts, pairs)]
    (out / "cases.json").write_text(json.dumps(
        {"model": f"text/{name}", "max_len": MODEL_MAX_LEN, "tokens_per_row": tokens, "cases": meta},
        indent=1) + "\n")


README = """# Chunking fixtures

References for `--long-input chunk`, written by `tools/gen_chunk_fixtures.py` (see its docstring
for exactly what is computed); do not edit by hand. Regenerate (deletes and rewrites this folder,
byte-identical on every run):

```
tools/venv.sh --legacy
.venv-legacy/bin/python tools/gen_chunk_fixtures.py
```

- `windows/<variant>.json`: for the tokenizer of `tests/fixtures/tokenizer/models/<variant>/`,
  long multilingual texts and texts exactly at and one token past the window's content limit,
  with the overflowing windows the Hugging Face fast tokenizer returns (`truncation=True,
  max_length=M, stride=K, return_overflowing_tokens=True`) for M in 16, 40 and K in 0, 1, M/2,
  M − specials − 1, as ranges into the text's content tokens (each checked by the script to
  rebuild HF's window exactly); and `pairs`: a short first text with a long second one, with the
  windows of `truncation="only_second"` (the first text whole in each) as full ids, or `refused`
  where HF refuses (the first text leaves the second no more room than the stride; mcinfer then
  truncates the row). Read by `src/tokenizer/windows_test.cc` and `chunk_cli_test`.
- `<model>/` for `bert_cls`, `roberta_cls`, `xlmr_embed` of `tests/fixtures/text/`, and
  `bert_cls_pair` (`bert_cls` on sentence pairs: short first texts, long second ones, one first
  text too long to leave room, one empty second text): `input.csv`
  (long corpus rows, a short one, an empty one, one id twice), `expected_<case>.csv` (every
  window through transformers, each row reduced from its windows, duplicate ids averaged) and
  `cases.json` (the model directory; each case's flags and windows per row; each row's
  untruncated token count).
  Read by `tests/e2e/chunk_cli_test.cc`.
"""


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "windows").mkdir(parents=True)
    (OUT / "README.md").write_text(README, encoding="utf-8")
    corpus = read_corpus()
    rng = random.Random(SEED)
    for v in VARIANTS:
        data = window_cases(v, corpus, rng)
        (OUT / "windows" / f"{v}.json").write_text(json.dumps(data, ensure_ascii=False) + "\n",
                                                   encoding="utf-8")
        print(v, len(data["texts"]), "texts")
    for name, task, cases in MODELS:
        model_case(name, task, cases, corpus, rng)
        print(name, len(cases), "cases")
    # Sentence pairs: windows of the second text, the first whole in each (only_second).
    model_case("bert_cls", "classify", [("s0_mean_logits", 0, "mean", "logits"),
                                        ("s6_tw_probs", 6, "token-weighted", "probs")],
               corpus, rng, out_name="bert_cls_pair", pair=True)
    print("bert_cls_pair 2 cases")
    # DeBERTa: relative positions only, so every window is a sequence of its own (after the cases
    # above, which keep their random draws).
    model_case("deberta_cls", "classify", [("s4_mean_probs", 4, "mean", "probs"),
                                           ("s16_tw_logits", 16, "token-weighted", "logits")], corpus, rng)
    print("deberta_cls 2 cases")


if __name__ == "__main__":
    main()
