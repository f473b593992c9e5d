#!/usr/bin/env python3
"""Seeded generator of a realistic benchmark test set (`id,text` CSV).

Row lengths follow a long-tailed, online-comment-like distribution: a lognormal in
tokens (median ~40, special tokens included), clipped to [--min-tokens, --max-tokens].
Texts are built from real sentences (examples/sentences.csv plus the fragments below),
so the words, punctuation and accents are real; a row is a run of whole sentences, the
last one cut at a word boundary to land on the drawn length.

Lengths are measured with the all-MiniLM-L6-v2 WordPiece tokenizer (BERT uncased, vocab
30522). BERT's pre-tokenizer splits on whitespace first, so the token count of a text is
the sum of the counts of its whitespace-separated words plus [CLS] and [SEP]; the script
uses that to build rows quickly and then re-tokenises every finished row to report the
achieved quantiles (and to fail loudly if the two ever disagree).

    .venv-legacy/bin/python bench/gen_testset.py                    # 20,000 rows -> bench/work/testset.csv
    .venv-legacy/bin/python bench/gen_testset.py --rows 300 --out /tmp/t.csv
"""

import argparse
import csv
import json
import math
import os
import random
import sys
from pathlib import Path

from tokenizers import Tokenizer

REPO = Path(__file__).resolve().parent.parent

# Extra material beyond examples/sentences.csv: comment-style sentences and fragments, so
# the generated rows do not repeat the demo file too visibly. Written for this benchmark.
FRAGMENTS = [
    # forum / support threads
    "I had the same issue and fixed it by clearing the cache.",
    "Tried that already, didn't help.",
    "Same here, it started right after the last update.",
    "Make sure you are on the latest firmware before you try anything else.",
    "For what it's worth, mine has been running for three years without a problem.",
    "This thread saved me hours, thank you.",
    "Can confirm, the workaround in the second post still works.",
    "Has anyone contacted support about this?",
    "Support told me it's a known bug and a fix is coming next month.",
    "Did you check whether the cable is the problem?",
    "Swapping the power supply solved it for me.",
    "Not sure why this is getting downvoted, it's a fair question.",
    "Edit: it turned out to be a loose connector.",
    "Update: the replacement arrived today and works perfectly.",
    "The error only shows up when the laptop is on battery.",
    "I rolled back to the previous version and everything is fine again.",
    "Please post your logs, otherwise nobody can help.",
    "You need admin rights to change that setting.",
    "Restarting fixes it for a day, then it comes back.",
    "It works on my desktop but not on my phone.",
    "The documentation is out of date, the option was renamed.",
    "I opened a ticket two weeks ago and still have no answer.",
    "If you hold the button for ten seconds it resets to factory settings.",
    "Be careful, that will delete all your saved data.",
    "Back up your files before you try this.",
    "Mine is the older model, so this may not apply to yours.",
    "That setting is hidden under the advanced tab.",
    "Worked like a charm, thanks!",
    "Still broken for me on the latest version.",
    "In my experience the cheaper cables are the problem nine times out of ten.",
    # opinions and reactions
    "Honestly, I expected more.",
    "This is exactly what I was looking for.",
    "I can't believe how long it took them to fix this.",
    "Couldn't agree more.",
    "I see your point, but I think you are missing the bigger picture.",
    "That's a fair criticism.",
    "Completely disagree, the first one was much better.",
    "The comments here are more entertaining than the article.",
    "Who approved this design?",
    "This made my day.",
    "I don't get why people are so angry about it.",
    "Give it a chance, it gets better after the first few chapters.",
    "It's overpriced for what you get.",
    "Worth every penny.",
    "I'm not convinced, to be honest.",
    "The headline is misleading, read the whole article.",
    "Good article, but it ignores the cost of maintenance.",
    "That is simply not true.",
    "Source?",
    "Thanks for sharing, this is really helpful.",
    "I've been saying this for years.",
    "Interesting take, I hadn't thought of it that way.",
    "Nobody asked for this feature.",
    "Finally, someone said it.",
    "What a time to be alive.",
    "I laughed way harder than I should have.",
    "This is the kind of news we need more of.",
    "So glad this is getting attention.",
    "Well, that escalated quickly.",
    "Respectfully, no.",
    # daily life
    "We spent the weekend painting the spare bedroom a pale green.",
    "The neighbours' dog barks every time a bicycle goes past.",
    "I walk to work when the weather is nice, which is about twice a year.",
    "The supermarket has moved everything around again.",
    "My sister is visiting next week with her two boys.",
    "We finally found a babysitter we trust.",
    "I forgot my umbrella and of course it started pouring.",
    "The heating in our building has been broken since Monday.",
    "Dinner was leftover pasta and a salad from the garden.",
    "I've started getting up at six to go swimming before work.",
    "Our landlord raised the rent by eight percent this year.",
    "The kids have been off school for a week because of the snow.",
    "I spent the whole evening on hold with the bank.",
    "My phone screen cracked the day after the warranty expired.",
    "We're thinking about getting a second cat.",
    "The farmers' market is back on Saturdays from May.",
    "I finally finished the puzzle after three weeks.",
    "Our car failed its inspection because of a worn tyre.",
    "The new café down the road makes excellent cinnamon rolls.",
    "I've been learning to play the guitar from online videos.",
    # food and restaurants
    "The pasta was overcooked and the sauce came from a jar.",
    "Best pizza I've had outside of Naples.",
    "The waiter recommended the fish, and he was right.",
    "Portions were small for the price.",
    "We had to wait forty minutes for a table even though we had booked.",
    "The dessert menu alone is worth the trip.",
    "Too much salt in everything.",
    "The coffee was cold by the time it reached our table.",
    "Vegetarian options are limited but tasty.",
    "They forgot half of our order and charged us for all of it.",
    "Fresh bread, good olive oil, friendly staff.",
    "The soup of the day was lentil with a hint of cumin.",
    "I'd go back just for the fries.",
    "The kitchen closes at nine, which is early for a Friday.",
    "Lovely terrace, but the wasps were a nightmare.",
    # travel
    "The hotel was right next to the station, which made early trains easy.",
    "Our luggage arrived a day after we did.",
    "The view from the room was spectacular.",
    "Public transport in the city is cheap and reliable.",
    "Book the museum tickets online, the queue was over an hour.",
    "The beach was crowded in the morning but empty by six.",
    "We rented a car for two days to explore the coast.",
    "The old town is beautiful but full of tourist traps.",
    "The ferry was cancelled because of high winds.",
    "Take cash, many of the small shops don't accept cards.",
    "The hostel was clean, cheap and very social.",
    "Our guide spoke four languages and knew everyone in the village.",
    "The night train was slower than expected but surprisingly comfortable.",
    "Check-in took forever because the system was down.",
    "We got lost twice but found an amazing little bakery on the way.",
    # work and tech
    "The meeting could have been an email.",
    "Our deployment pipeline takes forty minutes on a good day.",
    "We moved the database to a bigger server and the timeouts disappeared.",
    "The new laptop is fast, but the keyboard is awful.",
    "I spent the morning reviewing code and the afternoon in meetings.",
    "Someone pushed directly to the main branch again.",
    "The tests pass locally but fail on the build server.",
    "We need better monitoring before the next release.",
    "The customer wants the feature by Friday, which is not realistic.",
    "Half the team is on holiday, so progress is slow this week.",
    "The password policy forces a change every thirty days.",
    "I automated the weekly report and saved myself two hours.",
    "The outage lasted twenty minutes and affected about a third of our users.",
    "Our office moved to the fourth floor and the lift is always full.",
    "The spreadsheet has grown to forty tabs and nobody understands it anymore.",
    "The intern found a bug that had been there for five years.",
    "Remote work has made our meetings shorter and more focused.",
    "The vendor changed their API without telling anyone.",
    "I'm on call this weekend, so fingers crossed.",
    "The migration script ran for six hours and then failed at ninety-nine percent.",
    # sport
    "The referee missed an obvious penalty in the second half.",
    "What a comeback, down by two goals at half time and they still won.",
    "The new coach has completely changed the way they play.",
    "Our goalkeeper was the best player on the pitch.",
    "They've lost five games in a row and the fans are restless.",
    "The race was decided in the last hundred metres.",
    "She broke the national record by almost a second.",
    "The stadium was half empty because of the ticket prices.",
    "Injuries have ruined their season.",
    "That was the most boring final I've ever watched.",
    # health and fitness
    "My doctor told me to cut down on coffee.",
    "I've been sleeping much better since I stopped looking at my phone in bed.",
    "Stretching after a run really does make a difference.",
    "The gym is packed every January and empty by March.",
    "Drink more water, especially when it's this hot.",
    "The waiting list for a specialist is six months.",
    "Walking thirty minutes a day helped my back more than any medicine.",
    "I've had a cold for two weeks and it won't go away.",
    "Yoga classes are a great way to meet people in a new city.",
    "The pharmacy ran out of the children's fever syrup again.",
    # movies, books, music
    "The soundtrack is the best part of the film.",
    "The book is much better than the series.",
    "I fell asleep halfway through.",
    "The ending left me speechless.",
    "Too long, but the last hour is fantastic.",
    "Her new album sounds nothing like the old ones, and I love it.",
    "The dialogue feels forced and unnatural.",
    "A beautiful story about friendship and second chances.",
    "The special effects have aged badly.",
    "I read it in one sitting.",
    "The translation loses a lot of the humour.",
    "The concert was loud, sweaty and absolutely worth it.",
    "The main character is impossible to like.",
    "Every episode ends on a cliffhanger, so good luck going to bed early.",
    "The documentary is well researched but a little one-sided.",
    # news-style
    "The proposal will be discussed at the next council meeting.",
    "Residents have been asked to boil tap water until further notice.",
    "The road will be closed for resurfacing between Monday and Wednesday.",
    "The company plans to cut around 400 jobs over the next two years.",
    "Ticket sales opened at noon and sold out within minutes.",
    "The new hospital wing will add 120 beds.",
    "Rainfall this spring was less than half the usual amount.",
    "The investigation is ongoing and no arrests have been made.",
    "Officials expect the repairs to take at least three weeks.",
    "The study followed 12,000 adults for more than a decade.",
    "Exports rose for the third month in a row.",
    "The bridge carries about 50,000 vehicles a day.",
    "The agreement still has to be approved by parliament.",
    "Local businesses say the roadworks have cut their sales in half.",
    "The festival returns this summer after a three-year break.",
    # fragments and clauses (comments often trail off or run on)
    "which, to be fair, is what they promised",
    "and then it just stopped working",
    "but that's another story",
    "not to mention the shipping costs",
    "at least in my experience",
    "if that makes any sense",
    "as long as you don't mind the noise",
    "even after three attempts",
    "for the second time this year",
    "unless you really need the extra storage",
    "so I gave up and bought a new one",
    "because nobody reads the manual",
    "which is why I'm writing this review",
    "although the price has gone up since",
    "and the kids loved every minute of it",
    "despite what the website says",
    "just in case anyone else has the same problem",
    "without any warning whatsoever",
    "before the end of the month",
    "after waiting almost two hours",
    # numbers, codes and links as they appear in comments
    "Model number is XR-2210, bought in March 2023.",
    "Tracking says it left the warehouse on 14 May.",
    "The fix is described here: https://support.example.com/kb/article/10482",
    "Paid $39.99 on sale, normally $59.",
    "Firmware 3.1.7 is the one that broke it, 3.1.6 is fine.",
    "It uses 2 AA batteries, which last about a month.",
    "Measured 71 dB at one metre, so not exactly quiet.",
    "See the photos at https://imgur.example.net/a/x7Yq2 for the damage.",
    "Weight is 1.8 kg without the stand.",
    "Error code E-104 appears after about 15 minutes.",
    # non-English comments
    "Rien à redire, livraison rapide et produit conforme.",
    "Franchement décevant pour ce prix.",
    "Je l'utilise tous les jours depuis six mois, aucun souci.",
    "Le son est correct, sans plus.",
    "Leider nach zwei Wochen kaputt gegangen.",
    "Für den Preis absolut empfehlenswert.",
    "Die Anleitung ist nur auf Englisch, das ist schade.",
    "Schnelle Lieferung, alles bestens.",
    "Muy buena calidad, lo recomiendo.",
    "Llegó tarde y con la caja rota.",
    "No es lo que esperaba, pero cumple.",
    "El tamaño es más pequeño de lo que parece en las fotos.",
]


def load_units(sentences_csv: Path) -> list[str]:
    units = list(FRAGMENTS)
    with open(sentences_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            units.append(row["text"])
    return units


def load_tokenizer(model_dir: Path) -> Tokenizer:
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        sys.exit(f"gen_testset: no tokenizer at {path} (run scripts/get_minilm.sh)")
    tok = Tokenizer.from_file(str(path))
    # MiniLM's tokenizer.json ships with truncation and padding at 128; lengths must be the raw ones.
    tok.no_truncation()
    tok.no_padding()
    return tok


def word_counts(tok: Tokenizer, units: list[str]) -> dict[str, int]:
    words = sorted({w for u in units for w in u.split()})
    encs = tok.encode_batch(words, add_special_tokens=False)
    return {w: len(e.ids) for w, e in zip(words, encs)}


def quantiles(values: list[int]) -> dict[str, int]:
    s = sorted(values)
    q = lambda p: s[min(len(s) - 1, int(math.ceil(p * len(s))) - 1)]
    return {"p10": q(0.10), "p50": q(0.50), "p90": q(0.90), "p99": q(0.99), "max": s[-1], "mean": round(sum(s) / len(s), 1)}


def build_row(rng: random.Random, units, unit_words, unit_tokens, counts, target: int) -> str:
    """Whole sentences until the next would overshoot, then a word-level prefix of it."""
    budget = target - 2  # [CLS] and [SEP]
    parts = []
    misses = 0
    while budget > 0:
        i = rng.randrange(len(units))
        if unit_tokens[i] <= budget:
            parts.append(units[i])
            budget -= unit_tokens[i]
            continue
        # Cut this sentence at a word boundary and end the row there (a comment that trails
        # off), a token or two short at worst; if not even its first word fits, try a few
        # other sentences first so that short rows still get their words.
        taken = []
        for w in unit_words[i]:
            if counts[w] > budget:
                break
            taken.append(w)
            budget -= counts[w]
        if taken:
            parts.append(" ".join(taken))
            break
        misses += 1
        if parts and misses > 8:
            break
    sep = "\n" if rng.random() < 0.02 else " "  # a few comments come with line breaks
    return sep.join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--out", type=Path, default=REPO / "bench/work/testset.csv")
    ap.add_argument("--max-tokens", type=int, default=512, help="clip lengths here (special tokens included)")
    ap.add_argument("--min-tokens", type=int, default=4)
    ap.add_argument("--median-tokens", type=float, default=40.0)
    ap.add_argument("--sigma", type=float, default=0.95, help="lognormal shape (log-space standard deviation)")
    ap.add_argument("--tokenizer", type=Path, default=REPO / "models/all-MiniLM-L6-v2")
    ap.add_argument("--sentences", type=Path, default=REPO / "examples/sentences.csv")
    args = ap.parse_args()
    if args.rows < 1 or args.min_tokens < 3 or args.max_tokens < args.min_tokens:
        ap.error("need --rows >= 1 and 3 <= --min-tokens <= --max-tokens")

    tok = load_tokenizer(args.tokenizer)
    units = load_units(args.sentences)
    counts = word_counts(tok, units)
    unit_words = [u.split() for u in units]
    unit_tokens = [sum(counts[w] for w in ws) for ws in unit_words]

    rng = random.Random(args.seed)
    mu = math.log(args.median_tokens)
    targets, texts = [], []
    for _ in range(args.rows):
        t = int(round(rng.lognormvariate(mu, args.sigma)))
        t = max(args.min_tokens, min(args.max_tokens, t))
        targets.append(t)
        texts.append(build_row(rng, units, unit_words, unit_tokens, counts, t))

    lengths = [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=True)]
    over = sum(1 for n, t in zip(lengths, targets) if n > t)
    if over:
        sys.exit(f"gen_testset: {over} rows longer than drawn (word counts not additive?)")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    width = max(6, len(str(args.rows)))
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "text"])
        for i, text in enumerate(texts, 1):
            w.writerow([f"t{i:0{width}d}", text])
    os.replace(tmp, args.out)

    summary = {
        "out": str(args.out),
        "rows": args.rows,
        "seed": args.seed,
        "tokens": quantiles(lengths),
        "drawn": quantiles(targets),
        "total_tokens": sum(lengths),
        "rows_over_224": sum(1 for n in lengths if n > 224),
        "rows_at_max": sum(1 for n in lengths if n >= args.max_tokens),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
