#!/usr/bin/env python3
"""Writes tests/fixtures/text/<name>/: end-to-end fixtures "from text". Each is a tiny random Hugging
Face encoder saved by save_pretrained (safetensors) together with real tokenizer files (copied from
tests/fixtures/tokenizer/models/<variant>/), an input.csv of corpus texts and the expected.csv that
transformers computes from those texts the way the seed recipe does:

    enc = AutoTokenizer(text[, text_b], truncation=True, max_length=64, padding=True)   (one batch)
    classifiers: softmax(logits) per label; embedders: mean over attention_mask, L2-normalised
    then pandas groupby("id", sort=False).mean()  (duplicate ids averaged, first-appearance order)

so that `mcinfer run DIR --input DIR/input.csv --output out.csv --max-len 64 <flags>` must reproduce
expected.csv. Weights are re-drawn like tools/gen_fixtures.py does (same randomize()), so that a
wrong token id, a dropped token type or a mis-placed position changes the outputs visibly.

Regenerate: tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_text_fixtures.py
Idempotent: deletes and rewrites tests/fixtures/text/. Deterministic: same bytes on every run.
"""
import csv
import io
import json
import random
import shutil
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F
import transformers
from transformers import (AutoTokenizer, BertConfig, BertForSequenceClassification, DebertaV2Config,
                          DebertaV2ForSequenceClassification, DistilBertConfig,
                          DistilBertForSequenceClassification, RobertaConfig, RobertaForSequenceClassification,
                          XLMRobertaConfig, XLMRobertaForSequenceClassification, XLMRobertaModel)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_weights import randomize  # noqa: E402  (one weight recipe for all model fixtures)

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/text"
TOK = ROOT / "tests/fixtures/tokenizer"
MAX_LEN = 64
ROWS = 40
SEED = 20261215
PAD_TOL = 1e-5  # batch (padded) vs row alone (unpadded)


@dataclass
class Spec:
    name: str
    cls: type
    variant: str  # tests/fixtures/tokenizer/models/<variant>
    config: dict  # model-specific config arguments (vocab and pad id come from the tokenizer)
    task: str  # classify | embed
    flags: list = field(default_factory=list)
    pair: bool = False  # text_b column, passed to the tokenizer as the second sequence
    notes: list = field(default_factory=list)


BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=MAX_LEN, type_vocab_size=2, layer_norm_eps=1e-12)
# RoBERTa / XLM-R positions start at pad_token_id + 1 = 2, so the table needs MAX_LEN + 2 rows.
ROBERTA = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
               max_position_embeddings=MAX_LEN + 2, type_vocab_size=1, bos_token_id=0, eos_token_id=2,
               layer_norm_eps=1e-5)

# DeBERTa-v3's switches (relative positions only, log buckets, shared keys, c2p + p2c).
DEBERTA = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
               max_position_embeddings=MAX_LEN, type_vocab_size=0, layer_norm_eps=1e-7, relative_attention=True,
               pos_att_type=["p2c", "c2p"], position_buckets=16, max_relative_positions=64, share_att_key=True,
               norm_rel_ebd="layer_norm", position_biased_input=False)

SPECS = [
    Spec("bert_cls", BertForSequenceClassification, "wp_uncased_json",
         dict(BERT, num_labels=3, id2label={0: "negative", 1: "neutral", 2: "positive"},
              label2id={"negative": 0, "neutral": 1, "positive": 2}),
         "classify", ["--text-pair-col", "text_b"], pair=True,
         notes=["sentence pairs (text, text_b): [CLS] a [SEP] b [SEP], token types 0 then 1, "
                "truncation longest_first"]),
    Spec("distilbert_cls", DistilBertForSequenceClassification, "wp_cased_vocab",
         dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=MAX_LEN,
              sinusoidal_pos_embds=False, num_labels=2, id2label={0: "NEG", 1: "POS"},
              label2id={"NEG": 0, "POS": 1}),
         "classify",
         notes=["tokenizer_config.json says BertTokenizer (vocab.txt only, built by the fast converter); "
                "its token_type_ids are not passed to DistilBERT, which has no token types"]),
    Spec("roberta_cls", RobertaForSequenceClassification, "bpe_files", dict(ROBERTA, num_labels=2), "classify",
         notes=["byte-level BPE from vocab.json + merges.txt; id2label HF default LABEL_0, LABEL_1"]),
    Spec("xlmr_embed", XLMRobertaModel, "unigram_spm", dict(ROBERTA), "embed", ["--task", "embed", "--normalize"],
         notes=["Unigram from sentencepiece.bpe.model; <mask> is an added token after the spm pieces; "
                "output: mean of last_hidden_state over attention_mask (special tokens included), L2-normalised"]),
    Spec("xlmr_cls_json", XLMRobertaForSequenceClassification, "unigram_json", dict(ROBERTA, num_labels=2),
         "classify", notes=["Unigram from tokenizer.json only (no sentencepiece model); id2label HF default"]),
    # Appended (seeds follow the position in SPECS).
    Spec("deberta_cls", DebertaV2ForSequenceClassification, "deberta_spm", dict(DEBERTA, num_labels=2), "classify",
         notes=["DeBERTa-v3 layout: spm.model + tokenizer_config.json (DebertaV2Tokenizer, [MASK] after the "
                "pieces); rows longer than the 8 exact buckets"]),
]


# --- texts -------------------------------------------------------------------------------------------

def read_corpus():
    data = (TOK / "corpus.txt").read_bytes()
    assert data.endswith(b"\n")
    return [line.decode("utf-8") for line in data[:-1].split(b"\n")]  # split on b"\n" only


def letter_scripts(t):
    return Counter(unicodedata.name(c, "?").split()[0] for c in t if unicodedata.category(c).startswith("L"))


def dominant(t, *names, share=0.8):
    s = letter_scripts(t)
    n = sum(s.values())
    return n >= 4 and sum(s[k] for k in names) >= share * n


def has(t, *chars):
    return any(c in t for c in chars)


def longest_word(t):
    return max((len(w) for w in t.split()), default=0)


# (label, predicate): one corpus line per entry, drawn with a seeded RNG among the lines that match.
CATEGORIES = [
    ("empty", lambda t: t == ""),
    ("both mask literals", lambda t: "[MASK]" in t and "<mask>" in t and len(t) < 100),
    ("other special literals", lambda t: has(t, "[CLS]", "[SEP]") and has(t, "<s>", "</s>") and len(t) < 100),
    ("english ascii", lambda t: t.isascii() and t.isprintable() and dominant(t, "LATIN", share=1.0)
     and 20 <= len(t) <= 80 and not has(t, "[", "<")),
    ("latin diacritics", lambda t: dominant(t, "LATIN") and not t.isascii() and 20 <= len(t) <= 90),
    ("cyrillic", lambda t: dominant(t, "CYRILLIC") and len(t) <= 120),
    ("greek", lambda t: dominant(t, "GREEK") and len(t) <= 120),
    ("arabic", lambda t: dominant(t, "ARABIC") and len(t) <= 120),
    ("hebrew", lambda t: dominant(t, "HEBREW") and len(t) <= 120),
    ("devanagari", lambda t: dominant(t, "DEVANAGARI") and len(t) <= 120),
    ("bengali", lambda t: dominant(t, "BENGALI") and len(t) <= 120),
    ("tamil/telugu", lambda t: dominant(t, "TAMIL", "TELUGU") and len(t) <= 120),
    ("thai", lambda t: dominant(t, "THAI") and len(t) <= 120),
    ("han", lambda t: dominant(t, "CJK") and len(t) <= 120),
    ("kana", lambda t: dominant(t, "HIRAGANA", "KATAKANA", "HALFWIDTH", share=0.5) and len(t) <= 120),
    ("hangul", lambda t: dominant(t, "HANGUL") and len(t) <= 120),
    ("georgian/armenian", lambda t: dominant(t, "GEORGIAN", "ARMENIAN") and len(t) <= 120),
    ("ethiopic/tifinagh/cherokee/mongolian",
     lambda t: dominant(t, "ETHIOPIC", "TIFINAGH", "CHEROKEE", "MONGOLIAN") and len(t) <= 120),
    ("emoji zwj / skin tone", lambda t: has(t, "\u200d", "\U0001f3fd", "\U0001f3fb") and len(t) <= 120),
    ("combining marks", lambda t: any(unicodedata.category(c) == "Mn" for c in t) and dominant(t, "LATIN")
     and len(t) <= 120),
    ("full-width forms", lambda t: any("\uff01" <= c <= "\uff5e" for c in t) and len(t) <= 120),
    ("url", lambda t: "://" in t and len(t) <= 120),
    ("code", lambda t: has(t, "{") and has(t, ";") and len(t) <= 120),
    ("c0 controls", lambda t: any(c < " " and c != "\t" for c in t) and len(t) <= 120),
    ("line/paragraph separators, NEL", lambda t: has(t, "\u0085", "\u2028", "\u2029") and len(t) <= 120),
    ("odd spaces", lambda t: has(t, "\u00a0", "\u3000", "\u2003", "\u2009") and len(t) <= 120),
    ("random code points", lambda t: len(letter_scripts(t)) >= 6 and " " not in t and len(t) <= 40),
    ("csv quoting", lambda t: '"' in t and "," in t and len(t) <= 150),
    ("edge whitespace", lambda t: len(t) > 3 and (t[0] in " \t" or t[-1] in " \t") and len(t) <= 120),
    ("replacement char / private use", lambda t: any(c == "\ufffd" or unicodedata.category(c) in ("Co", "Cn")
                                                      for c in t) and len(t) <= 120),
    ("digits", lambda t: sum(c.isdigit() for c in t) >= 12 and len(t) <= 120),
    ("word > 100 chars", lambda t: longest_word(t) > 100),
    ("long latin", lambda t: len(t) >= 200 and dominant(t, "LATIN", share=0.6)),
    ("long cyrillic", lambda t: len(t) >= 200 and dominant(t, "CYRILLIC", share=0.5)),
    ("long indic/thai", lambda t: len(t) >= 150 and dominant(t, "DEVANAGARI", "BENGALI", "TAMIL", "TELUGU", "THAI",
                                                           share=0.5)),
    ("long cjk/hangul", lambda t: len(t) >= 120 and dominant(t, "CJK", "HIRAGANA", "KATAKANA", "HANGUL",
                                                             share=0.5)),
    ("long mixed", lambda t: len(t) >= 400),
    ("medium mixed", lambda t: 90 <= len(t) <= 150 and len(letter_scripts(t)) >= 3),
    ("short", lambda t: 1 <= len(t) <= 6),
]
DUP_OF = 3  # index (0-based, before shuffling) of the row whose id the last row repeats: "english ascii"


def pick_texts(corpus):
    rng = random.Random(SEED)
    used = set()
    picked = []
    for label, pred in CATEGORIES + [("duplicate id, second text", lambda t: dominant(t, "LATIN") and
                                      20 <= len(t) <= 80)]:
        cands = [i for i, t in enumerate(corpus) if i not in used and "\x00" not in t and pred(t)]
        if not cands:
            raise RuntimeError(f"no corpus line for category {label!r}")
        i = rng.choice(cands)
        used.add(i)
        picked.append((label, i))
    assert len(picked) == ROWS
    # Mixed order (lengths and scripts interleaved); the duplicate stays last so that its id's group
    # is ordered by the first appearance, not by where the second text sits.
    body = picked[:-1]
    dup_line = body[DUP_OF][1]
    rng.shuffle(body)
    rows = body + [picked[-1]]
    ids = [f"t{k + 1:02d}" for k in range(ROWS - 1)]
    dup_id = ids[[line for _, line in body].index(dup_line)]
    ids.append(dup_id)
    return rows, ids


def pair_rotation(rows, corpus, tok):
    """text_b[k] = text[(k + r) % n]: the smallest r >= 7 giving a long+long pair, long+short and
    short+long pairs, an empty text_b and an empty text with a non-empty text_b."""
    n = len(rows)
    lens = [len(tok(corpus[line], add_special_tokens=False)["input_ids"]) for _, line in rows]
    for r in range(7, n):
        b = [(k + r) % n for k in range(n)]
        ok = (any(lens[k] > MAX_LEN and lens[b[k]] > MAX_LEN for k in range(n))
              and any(lens[k] > MAX_LEN and lens[b[k]] < 10 for k in range(n))
              and any(lens[k] < 10 and lens[b[k]] > MAX_LEN for k in range(n)))
        if ok:
            return r
    raise RuntimeError("no rotation gives the wanted pair shapes")


def write_csv(path, header, rows):
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")  # RFC 4180 quoting, LF records
    w.writerow(header)
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode("utf-8"))


# --- models ------------------------------------------------------------------------------------------

def make_config(spec, tok):
    kw = dict(spec.config, vocab_size=len(tok), pad_token_id=tok.pad_token_id)
    cfg = {BertForSequenceClassification: BertConfig, DistilBertForSequenceClassification: DistilBertConfig,
           RobertaForSequenceClassification: RobertaConfig, XLMRobertaModel: XLMRobertaConfig,
           XLMRobertaForSequenceClassification: XLMRobertaConfig,
           DebertaV2ForSequenceClassification: DebertaV2Config}[spec.cls](**kw)
    cfg._attn_implementation = "eager"
    return cfg


def model_inputs(model, enc):
    # The seed recipe does model(**enc); DistilBERT's forward has no token_type_ids.
    keys = ["input_ids", "attention_mask"] + (["token_type_ids"] if model.config.model_type != "distilbert" else [])
    return {k: enc[k] for k in keys if k in enc}


def outputs(model, spec, enc):
    with torch.no_grad():
        kw = model_inputs(model, enc)
        if spec.task == "classify":
            return torch.softmax(model(**kw).logits.float(), dim=-1)
        h = model(**kw).last_hidden_state.float()
        m = kw["attention_mask"].unsqueeze(-1).to(h.dtype)
        mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        return F.normalize(mean, p=2, dim=1)


def encode(tok, a, b=None, **kw):
    return tok(a, b, truncation=True, max_length=MAX_LEN, **kw) if b is not None else \
        tok(a, truncation=True, max_length=MAX_LEN, **kw)


def check_tokenizer(spec, d, src, corpus, texts, texts_b):
    """The copied files load and give the source variant's ids: whole corpus, and the fixture's rows."""
    tok = AutoTokenizer.from_pretrained(d)
    if len(tok) != len(src) or tok.pad_token_id != src.pad_token_id or type(tok) is not type(src):
        raise RuntimeError(f"{spec.name}: tokenizer differs from {spec.variant}: {type(tok).__name__} {len(tok)}")
    if tok(corpus)["input_ids"] != src(corpus)["input_ids"]:
        raise RuntimeError(f"{spec.name}: corpus ids differ from {spec.variant}")
    if encode(tok, texts, texts_b).data != encode(src, texts, texts_b).data:
        raise RuntimeError(f"{spec.name}: fixture rows encode differently from {spec.variant}")
    return tok


def build(spec, corpus, rows, ids):
    d = OUT / spec.name
    src_dir = TOK / "models" / spec.variant
    src = AutoTokenizer.from_pretrained(src_dir)
    seed = SEED + SPECS.index(spec)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    cfg = make_config(spec, src)
    model = spec.cls(cfg).eval()
    randomize(model, gen)
    model.save_pretrained(d, safe_serialization=True)
    for f in sorted(src_dir.iterdir()):
        shutil.copyfile(f, d / f.name)
    del model

    texts = [corpus[line] for _, line in rows]
    texts_b = None
    rot = None
    if spec.pair:
        rot = pair_rotation(rows, corpus, src)
        texts_b = [texts[(k + rot) % len(texts)] for k in range(len(texts))]
    tok = check_tokenizer(spec, d, src, corpus, texts, texts_b)

    header = ["id", "text"] + (["text_b"] if spec.pair else [])
    table = [[i, t] + ([texts_b[k]] if spec.pair else []) for k, (i, t) in enumerate(zip(ids, texts))]
    write_csv(d / "input.csv", header, table)
    back = pd.read_csv(d / "input.csv", dtype=str, keep_default_na=False)  # as the seed recipe reads it
    if back.values.tolist() != table:
        raise RuntimeError(f"{spec.name}: input.csv does not read back through pandas")

    model = spec.cls.from_pretrained(d, torch_dtype=torch.float32, attn_implementation="eager").eval()
    enc = encode(tok, texts, texts_b, padding=True, return_tensors="pt")
    out = outputs(model, spec, enc)

    # Self-check: each row alone, unpadded, gives the batch's values.
    pad_err = 0.0
    for k in range(len(texts)):
        # A batch of one: a single call would drop an empty text_b (transformers tests `if text_pair`),
        # while a batch encodes it as an empty second segment, [CLS] a [SEP] [SEP].
        one = encode(tok, texts[k:k + 1], texts_b[k:k + 1] if spec.pair else None, return_tensors="pt")
        pad_err = max(pad_err, (outputs(model, spec, one)[0] - out[k]).abs().max().item())
    if pad_err > PAD_TOL:
        raise RuntimeError(f"{spec.name}: padded batch vs row alone differ by {pad_err}")
    sdpa_err = float("nan")  # DeBERTa has no sdpa attention in transformers 4.46
    if model.config.model_type != "deberta-v2":
        sdpa = spec.cls.from_pretrained(d, torch_dtype=torch.float32, attn_implementation="sdpa").eval()
        sdpa_err = (outputs(sdpa, spec, enc) - out).abs().max().item()

    if spec.task == "classify":
        columns = [cfg.id2label[i] for i in range(cfg.num_labels)]
    else:
        columns = [f"e{j}" for j in range(out.shape[1])]
    df = pd.DataFrame(out.double().numpy(), columns=columns)
    df.insert(0, "id", ids)
    grouped = df.groupby("id", sort=False).mean()
    write_csv(d / "expected.csv", ["id"] + columns,
              [[i] + [float.__repr__(float(v)) for v in r] for i, r in zip(grouped.index, grouped.values)])

    # Facts for the notes and the report.
    mask = enc["attention_mask"]
    full = [len(x) for x in (tok(texts, texts_b) if spec.pair else tok(texts))["input_ids"]]
    truncated = [ids[k] for k, n in enumerate(full) if n > MAX_LEN]
    if len(truncated) < 4:
        raise RuntimeError(f"{spec.name}: only {len(truncated)} rows reach truncation")
    mask_id = tok.mask_token_id
    mask_rows = [ids[k] for k in range(len(texts)) if (enc["input_ids"][k][mask[k].bool()] == mask_id).any()]
    if not mask_rows:
        raise RuntimeError(f"{spec.name}: no row holds the literal {tok.mask_token}")
    unk_rows = [ids[k] for k in range(len(texts))
                if (enc["input_ids"][k][mask[k].bool()] == tok.unk_token_id).any()]
    flat = out.flatten()
    dist = torch.cdist(out, out, p=float("inf"))
    distinct = [(a, b) for a in range(len(texts)) for b in range(a + 1, len(texts))
                if enc["input_ids"][a].tolist() != enc["input_ids"][b].tolist()]
    min_dist = min(dist[a, b].item() for a, b in distinct)
    dup_id = ids[-1]
    dup_rows = [k for k, i in enumerate(ids) if i == dup_id]
    dup_gap = (out[dup_rows[0]] - out[dup_rows[1]]).abs().max().item()

    notes = list(spec.notes)
    notes += [
        f"{spec.cls.__name__}, hidden {cfg.hidden_size if hasattr(cfg, 'hidden_size') else cfg.dim}, "
        f"{cfg.num_hidden_layers if hasattr(cfg, 'num_hidden_layers') else cfg.n_layers} layers, "
        f"{cfg.num_attention_heads if hasattr(cfg, 'num_attention_heads') else cfg.n_heads} heads, "
        f"intermediate {cfg.intermediate_size if hasattr(cfg, 'intermediate_size') else cfg.hidden_dim}, "
        f"max_position_embeddings {cfg.max_position_embeddings}, vocab_size {cfg.vocab_size} = len(tokenizer), "
        f"pad_token_id {cfg.pad_token_id}, seed {seed}",
        f"tokenizer files copied from tests/fixtures/tokenizer/models/{spec.variant} "
        f"({', '.join(sorted(f.name for f in src_dir.iterdir()))}); tokenizer_config model_max_length 512 "
        f"exceeds the position table, so the run needs --max-len {MAX_LEN}",
        f"input.csv: {len(texts)} rows, {len(grouped)} ids; {dup_id} appears twice (rows {dup_rows[0] + 1} and "
        f"{dup_rows[1] + 1}, outputs {dup_gap:.3g} apart) and expected.csv holds their mean",
        f"rows truncated at {MAX_LEN} tokens: {' '.join(truncated)}; literal {tok.mask_token} -> id {mask_id} in "
        f"{' '.join(mask_rows)}; {tok.unk_token} in {' '.join(unk_rows) or 'no row'}",
    ]
    if spec.pair:
        empty_b = [ids[k] for k in range(len(texts)) if texts_b[k] == ""]
        empty_a = [ids[k] for k in range(len(texts)) if texts[k] == ""]
        notes.append(f"text_b[k] = text[(k + {rot}) % {len(texts)}] (long+long, long+short, short+long and "
                     f"empty-side pairs); empty text_b in {' '.join(empty_b)}: the batch still encodes a second, "
                     "empty segment, [CLS] a [SEP] [SEP] with type 1 on the last [SEP] (a single-pair tokenizer "
                     f"call would drop it); empty text in {' '.join(empty_a)}: [CLS] [SEP] b [SEP]")
    notes.append("reference: attn_implementation eager, eval, float32, one padded batch; every row alone "
                 f"(unpadded) agrees within {pad_err:.2g}; "
                 + (f"sdpa differs by {sdpa_err:.2g}" if sdpa_err == sdpa_err else "no sdpa attention in 4.46"))
    ref = {"max_len": MAX_LEN, "task": spec.task, "flags": spec.flags, "notes": "; ".join(notes)}
    (d / "reference.json").write_text(json.dumps(ref, indent=2, ensure_ascii=False) + "\n")

    size = sum(f.stat().st_size for f in d.iterdir())
    return dict(name=spec.name, cls=spec.cls.__name__, variant=spec.variant, tokenizer=type(tok).__name__,
                vocab=cfg.vocab_size, mpe=cfg.max_position_embeddings, task=spec.task,
                columns=len(columns), rows=len(texts), ids=len(grouped), truncated=len(truncated),
                tokens=int(mask.sum()), padded=int(mask.numel()), pad_err=pad_err, sdpa_err=sdpa_err,
                range=(flat.min().item(), flat.max().item()), min_dist=min_dist, kib=size / 1024,
                flags=" ".join(spec.flags))


README_HEAD = f"""# End-to-end text fixtures

Tiny random encoders that come with real tokenizer files, an input table of raw texts and the outputs
transformers computes from those texts. Generated by `tools/gen_text_fixtures.py`; do not edit by hand.

Regenerate (deletes and rewrites this folder, byte-identical on every run):

```
tools/venv.sh --legacy
.venv-legacy/bin/python tools/gen_text_fixtures.py
```

`mcinfer run` must reproduce each `expected.csv`:

```
mcinfer run tests/fixtures/text/<name> --input tests/fixtures/text/<name>/input.csv --output out.csv \\
    --max-len {MAX_LEN} <flags from reference.json>
```

Each `<name>/` holds:

- `config.json`, `model.safetensors` (float32): `save_pretrained` of a model with hidden 32, 2 layers,
  4 heads, intermediate 64, `vocab_size` = `len(tokenizer)` (added tokens included), `pad_token_id` =
  the tokenizer's, `max_position_embeddings` {MAX_LEN} (BERT, DistilBERT) or {MAX_LEN + 2} (RoBERTa, XLM-R:
  positions start at pad + 1). Weights re-drawn by `randomize()` of `tools/gen_fixtures.py` (see
  `tests/fixtures/models/README.md`), so outputs move visibly when a token id, a token type or a
  position is wrong.
- the tokenizer files of `tests/fixtures/tokenizer/models/<variant>/`, copied unchanged.
  `AutoTokenizer.from_pretrained(<name>)` is checked to give the variant's ids on the whole corpus.
- `input.csv`: `id,text` (`bert_cls`: `id,text,text_b`), {ROWS} rows, written by Python's `csv` module
  (RFC 4180 quoting, LF records, UTF-8). Texts are corpus lines (`tests/fixtures/tokenizer/corpus.txt`)
  drawn per category with a seeded RNG: an empty text, literal special tokens (`[MASK]` and `<mask>`,
  `[CLS]`/`[SEP]` with `<s>`/`</s>`), ~20 scripts, emoji/ZWJ, combining marks, full-width forms, URLs,
  code, C0 controls (tab, BEL, FF, ...), U+0085/U+2028/U+2029, odd spaces, random code points, quotes and
  commas, leading/trailing whitespace, U+FFFD / private use, a word over 100 characters, and long lines
  that exceed {MAX_LEN} tokens. No NUL. The last row repeats an earlier id with a different text.
- `expected.csv`: `id,<columns>`, one row per distinct id in first-appearance order, values written
  with `float.__repr__`. Computed as `AutoTokenizer(text[, text_b], truncation=True,
  max_length={MAX_LEN}, padding=True)` on all rows at once, the model in `eval()`, float32,
  `attn_implementation="eager"`; classifiers: `softmax(logits)` per label, columns the `id2label`
  names in id order; `xlmr_embed`: mean of `last_hidden_state` over `attention_mask` (special tokens
  included), L2-normalised, columns `e0..e31`. Then pandas `groupby("id", sort=False).mean()` (float64).
- `reference.json`: `max_len`, `task` (classify|embed), `flags` (extra `mcinfer run` flags), `notes`.

Generation checks: the input reads back unchanged through `pandas.read_csv(dtype=str,
keep_default_na=False)`; every row run alone without padding matches the padded batch within
{PAD_TOL:g}; at least 4 rows per fixture reach truncation; the mask literal becomes the mask id.

| fixture | class | tokenizer variant | vocab | max pos | task | flags | rows / ids | truncated | real / padded tokens | output range | KiB |
|---|---|---|---|---|---|---|---|---|---|---|---|
"""


def write_readme(results, rows, ids):
    lines = [README_HEAD.rstrip("\n")]
    for r in results:
        lines.append(f"| {r['name']} | {r['cls']} | {r['variant']} ({r['tokenizer']}) | {r['vocab']} | {r['mpe']} | "
                     f"{r['task']} | {('`' + r['flags'] + '`') if r['flags'] else '—'} | {r['rows']} / {r['ids']} | {r['truncated']} | "
                     f"{r['tokens']} / {r['padded']} | {r['range'][0]:.3f} .. {r['range'][1]:.3f} | "
                     f"{r['kib']:.0f} |")
    lines += ["", "Notes per fixture:", ""]
    for r in results:
        notes = json.loads((OUT / r["name"] / "reference.json").read_text())["notes"]
        lines.append(f"- `{r['name']}`: {notes}")
    lines += ["", "Rows of every `input.csv` (`text`; corpus line numbers 1-based):", ""]
    lines += [f"- `{i}`: {label} (line {line + 1})" for i, (label, line) in zip(ids, rows)]
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


def main():
    corpus = read_corpus()
    rows, ids = pick_texts(corpus)
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    results = [build(s, corpus, rows, ids) for s in SPECS]
    write_readme(results, rows, ids)
    for r in results:
        print(f"{r['name']:<15} vocab {r['vocab']:>5}  truncated {r['truncated']}  "
              f"tokens {r['tokens']}/{r['padded']}  pad-invariance {r['pad_err']:.2e}  sdpa {r['sdpa_err']:.2e}  "
              f"range {r['range'][0]:.4f}..{r['range'][1]:.4f}  min row distance {r['min_dist']:.3g}  "
              f"{r['kib']:.0f} KiB")
    print("rows:", ", ".join(f"{i}={label}(line {line + 1})" for i, (label, line) in zip(ids, rows)))
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"total {total / 1024:.1f} KiB in {OUT} (transformers {transformers.__version__})")


if __name__ == "__main__":
    main()
