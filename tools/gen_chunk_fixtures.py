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
to be refused by HF.

<model>/: input.csv (long corpus rows, one id twice) and expected_<case>.csv for models of
tests/fixtures/text/: every window through transformers alone (eager attention, fp32, 1 thread),
then each row's output reduced from its windows as mcinfer's --chunk-reduce defines it, in
float64: mean, max, first, token-weighted (weights: the window's tokens, special tokens
included). Classifiers reduce logits then apply softmax (--chunk-values logits) or reduce
softmax rows (probs); embedders reduce the windows' mean-pooled vectors, then L2-normalise.
Duplicate ids are averaged (groupby("id", sort=False).mean()). cases.json lists each case's flags
and windows per row, and each row's untruncated length (for the truncation counts).

Regenerate: tools/venv.sh && .venv/bin/python tools/gen_chunk_fixtures.py
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
    source = long_texts(corpus, rng, 1, 600, 800)[0]
    for m in WINDOW_MAX_LENS:
        for n in (m - specials, m - specials + 1):
            t = at_length(tok, source, n)
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
    return {"variant": variant, "specials": specials, "prefix": prefix, "suffix": suffix,
            "texts": records}


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


def window_outputs(model, task, windows):
    """Each window alone through the model: logits, or the mean-pooled last hidden state."""
    out = []
    with torch.no_grad():
        for w in windows:
            ids = torch.tensor([w])
            mask = torch.ones_like(ids)
            if task == "classify":
                out.append(model(input_ids=ids, attention_mask=mask).logits[0].double().numpy())
            else:
                h = model(input_ids=ids, attention_mask=mask).last_hidden_state[0].double()
                out.append(h.mean(dim=0).numpy())
    return out


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def model_case(name, task, cases, corpus, rng):
    d = TEXT / name
    tok = AutoTokenizer.from_pretrained(d)
    cls = AutoModelForSequenceClassification if task == "classify" else AutoModel
    model = cls.from_pretrained(d, attn_implementation="eager").eval()
    texts = long_texts(corpus, rng, 9, 150, 700) + ["short row", ""]
    ids = [f"doc{i}" for i in range(len(texts))]
    ids[5] = ids[2]  # a duplicate id: its two rows' outputs are averaged
    out = OUT / name
    out.mkdir(parents=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "text"])
    w.writerows(zip(ids, texts))
    (out / "input.csv").write_text(buf.getvalue(), encoding="utf-8")
    if task == "classify":
        columns = [model.config.id2label[i] for i in range(model.config.num_labels)]
    else:
        columns = [f"e{i}" for i in range(model.config.hidden_size)]
    meta = []
    for tag, stride, how, values in cases:
        rows = []
        windows_per_row = []
        for text in texts:
            windows = hf_windows(tok, text, MODEL_MAX_LEN, stride)
            windows_per_row.append(len(windows))
            outs = window_outputs(model, task, windows)
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
        meta.append({"case": tag, "flags": flags, "windows_per_row": windows_per_row})
        if max(windows_per_row) < 3:
            raise RuntimeError(f"{name} {tag}: rows are not long enough")
    tokens = [len(tok(t)["input_ids"]) for t in texts]  # untruncated, special tokens included
    (out / "cases.json").write_text(json.dumps(
        {"max_len": MODEL_MAX_LEN, "tokens_per_row": tokens, "cases": meta}, indent=1) + "\n")


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "windows").mkdir(parents=True)
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


if __name__ == "__main__":
    main()
