"""``mcinfer.Model(outputs=...)``: several outputs of one pass, each equal to what
``mcinfer run --outputs`` writes for the same rows and flags (truncated and chunked), and each
equal to the Model's one-output result of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mcinfer
import numpy as np
import pytest
from conftest import FIXTURES, model_keywords, read_csv_rows

CHUNK = FIXTURES / "chunk"
CASES = [
    # (chunk fixture, model, outputs, flags as `mcinfer run` takes them)
    ("bert_cls", "text/bert_cls", "probs,logits,cls,mean", ["--max-len", "32"]),
    (
        "bert_cls",
        "text/bert_cls",
        "logits,probs,mean",
        ["--max-len", "32", "--long-input", "chunk", "--stride", "8", "--chunk-reduce", "max"],
    ),
    ("xlmr_embed", "text/xlmr_embed", "mean,cls,max,normalized", ["--max-len", "32"]),
    (
        "xlmr_embed",
        "text/xlmr_embed",
        "normalized,mean",
        ["--max-len", "32", "--long-input", "chunk", "--stride", "0"],
    ),
]


def _cli_table(model_dir: Path, source: Path, out: Path, outputs: str, flags: list[str]) -> dict:
    script = Path(sys.executable).parent / "mcinfer"
    args = [str(script), "run", str(model_dir), "--input", str(source), "--output", str(out)]
    args += ["--precision", "fp32", "--quiet", "--outputs", outputs, *flags]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return {row["id"]: row for row in read_csv_rows(out)}


@pytest.mark.parametrize(("fixture", "model", "outputs", "flags"), CASES)
def test_outputs_of_one_pass_equal_the_runs(
    fixture: str, model: str, outputs: str, flags: list[str], tmp_path: Path
) -> None:
    source = CHUNK / fixture / "input.csv"
    rows = read_csv_rows(source)
    texts = [row["text"] for row in rows]
    keywords = model_keywords(flags)
    encoder = mcinfer.Model(FIXTURES / model, precision="fp32", outputs=outputs, **keywords)
    got = encoder.encode(texts) if encoder.task == "embed" else encoder.predict(texts)
    assert encoder.outputs == outputs.split(",")
    assert isinstance(got, dict) and list(got) == outputs.split(",")
    table = _cli_table(FIXTURES / model, source, tmp_path / "out.csv", outputs, flags)
    for name, values in got.items():
        columns = [c for c in encoder.labels if c.startswith(name + ".")]
        assert values.shape == (len(texts), len(columns))
        # The run's rows are per id: a duplicate id's rows averaged, as merge does.
        for row_id, want in table.items():
            mine = np.mean([v for r, v in zip(rows, values, strict=True) if r["id"] == row_id], 0)
            expected = np.array([float(want[c]) for c in columns])
            assert np.abs(mine - expected).max() <= 1e-6 * max(1.0, np.abs(expected).max())
        # Each output equals the Model's one-output result of it (the same pass, cut apart).
        alone_keywords = dict(keywords)
        if name == "normalized":
            alone_keywords["normalize"] = True
        elif name in ("probs", "logits"):
            alone_keywords["activation"] = "softmax" if name == "probs" else "none"
        elif encoder.task == "classify":
            alone_keywords.update(task="embed", pooling=name, normalize=False)
        else:
            alone_keywords.update(pooling=name, normalize=False)
        alone = mcinfer.Model(FIXTURES / model, precision="fp32", **alone_keywords)
        one = alone.encode(texts) if alone.task == "embed" else alone.predict(texts)
        assert np.abs(one - values).max() <= 1e-6, name


def test_outputs_are_refused_as_the_run_refuses_them() -> None:
    with pytest.raises(mcinfer.UsageError, match="--outputs"):
        mcinfer.Model(FIXTURES / "text" / "bert_cls", outputs="probs,nope")
    encoder = mcinfer.Model(FIXTURES / "text" / "xlmr_embed", outputs=["mean", "max"])
    with pytest.raises(ValueError, match="'normalized' output"):
        encoder.encode(["a text"], normalize_embeddings=True)
    one = encoder.encode("a text")
    assert set(one) == {"mean", "max"} and one["mean"].ndim == 1
