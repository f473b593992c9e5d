"""mcinfer.Model against the references transformers and sentence-transformers computed (the
committed fixtures), and against `mcinfer run` on the same rows."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import mcinfer
import numpy as np
import pytest
from conftest import FIXTURES, read_csv_rows, read_safetensors


def test_encode_matches_sentence_transformers_on_minilm(
    minilm_dir: Path, minilm_sentences: list[str], minilm_reference: np.ndarray
) -> None:
    model = mcinfer.Model(minilm_dir, precision="fp32")
    assert model.task == "embed"
    assert model.precision == "fp32"
    got = model.encode(minilm_sentences)
    assert got.dtype == np.float32 and got.shape == (66, 384)
    assert np.abs(got - minilm_reference).max() <= 1e-5


def test_encode_of_one_str_is_one_vector(
    minilm_dir: Path, minilm_sentences: list[str], minilm_reference: np.ndarray
) -> None:
    # As SentenceTransformer.encode("...") returns [D], not [1, D].
    got = mcinfer.Model(minilm_dir, precision="fp32").encode(minilm_sentences[3])
    assert got.dtype == np.float32 and got.shape == (384,)
    assert np.abs(got - minilm_reference[3]).max() <= 1e-5


def test_encode_auto_precision_stays_close_to_fp32(
    minilm_dir: Path, minilm_sentences: list[str], minilm_reference: np.ndarray
) -> None:
    model = mcinfer.Model(minilm_dir)  # auto: bf16 where the CPU has bf16 dot products
    got = model.encode(minilm_sentences)
    cosine = np.sum(got * minilm_reference, axis=1)  # both are normalised
    # What auto must pick, from the CPU's own flags rather than from what the model says it did.
    flags = set(Path("/proc/cpuinfo").read_text().split())
    native_bf16 = bool(flags & {"avx512_bf16", "amx_bf16"})
    assert model.precision == ("bf16" if native_bf16 else "fp32")
    assert cosine.min() >= (0.999 if native_bf16 else 0.99999)


@pytest.mark.parametrize(
    ("fixture", "case"),
    [
        ("st6_bert_prompts", "default"),
        ("st6_bert_prompts", "prompt_name_doc"),
        ("st6_bert_prompts", "prompt_text"),
        ("st6_bert_prompts", "prompt_name_document"),
        # Qwen3-Embedding's layout: a decoder, last-token pooling, its instruction prompt.
        ("st6_qwen3_embedding", "default"),
        ("st6_qwen3_embedding", "prompt_name_query"),
        ("st6_qwen3_embedding", "prompt_text"),
        # EmbeddingGemma's: bidirectional Gemma 3, mean pooling, two Dense, its task prompts.
        ("st6_embeddinggemma", "default"),
        ("st6_embeddinggemma", "prompt_name_query"),
        ("st6_embeddinggemma", "prompt_name_document"),
    ],
)
def test_prompts_per_call_as_encode_applies_them(fixture: str, case: str) -> None:
    directory = FIXTURES / "st" / fixture
    meta = json.loads((directory / "reference.json").read_text())
    args = next(c["encode_args"] for c in meta["cases"] if c["name"] == case)
    texts = [row["text"] for row in read_csv_rows(directory / "input.csv")]
    want = read_safetensors(directory / "reference.safetensors")[f"embeddings_{case}"]
    model = mcinfer.Model(directory, precision="fp32")
    got = model.encode(texts, **args)
    assert np.abs(got - want).max() <= 1e-5


@pytest.mark.parametrize(
    ("fixture", "case", "dim", "prompt_name"),
    [
        ("st6_qwen3_embedding", "truncate_dim_8_query", 8, "query"),
        ("st6_embeddinggemma", "truncate_dim_16", 16, None),
    ],
)
def test_truncate_dim_keeps_the_first_values_normalised(
    fixture: str, case: str, dim: int, prompt_name: str | None
) -> None:
    directory = FIXTURES / "st" / fixture
    texts = [row["text"] for row in read_csv_rows(directory / "input.csv")]
    want = read_safetensors(directory / "reference.safetensors")[f"embeddings_{case}"]
    model = mcinfer.Model(directory, precision="fp32", truncate_dim=dim)
    got = model.encode(texts, prompt_name=prompt_name)
    assert got.shape == (len(texts), dim)
    assert np.abs(got - want).max() <= 1e-5
    with pytest.raises(mcinfer.UsageError, match="truncate_dim must be a whole number, 1 or more"):
        mcinfer.Model(directory, truncate_dim=0)
    with pytest.raises(mcinfer.UsageError, match="--truncate-dim 999"):
        mcinfer.Model(directory, truncate_dim=999)


def test_a_prompt_name_the_directory_lacks_is_refused() -> None:
    model = mcinfer.Model(FIXTURES / "st" / "st6_bert_prompts", precision="fp32")
    with pytest.raises(mcinfer.UsageError, match="nope"):
        model.encode(["a"], prompt_name="nope")


def _group_mean(ids: list[str], values: np.ndarray) -> dict[str, np.ndarray]:
    rows: dict[str, list[np.ndarray]] = defaultdict(list)
    for key, row in zip(ids, values):
        rows[key].append(row)
    return {key: np.mean(r, axis=0) for key, r in rows.items()}


def test_predict_pairs_matches_transformers() -> None:
    directory = FIXTURES / "text" / "bert_cls"
    rows = read_csv_rows(directory / "input.csv")
    model = mcinfer.Model(directory, precision="fp32", max_len=64)
    assert model.task == "classify"
    probs = model.predict([(r["text"], r["text_b"]) for r in rows])
    expected = read_csv_rows(directory / "expected.csv")
    labels = [c for c in expected[0] if c != "id"]
    assert model.labels == labels
    assert probs.shape == (len(rows), len(labels))
    assert np.allclose(probs.sum(axis=1), 1, atol=1e-6)
    by_id = _group_mean([r["id"] for r in rows], probs)
    worst = max(
        abs(by_id[e["id"]][j] - float(e[label])) for e in expected for j, label in enumerate(labels)
    )
    assert worst <= 1e-5
    # Two columns give the same as a list of pairs.
    columns = model.predict(([r["text"] for r in rows], [r["text_b"] for r in rows]))
    assert np.array_equal(columns, probs)


CROSS_ENCODERS = [
    "ce6_bert_sigmoid",
    "ce6_bert_nli3",
    "ce53_bert_sigmoid",
    "ce53_bert_nli3",
    "ce33_bert_sigmoid",
    "ce33_bert_nli3",
    "ce6_xlmr_sigmoid",
    "ce6_modernbert_sigmoid",
]


@pytest.mark.parametrize("name", CROSS_ENCODERS)
def test_predict_pairs_matches_cross_encoder_predict(name: str) -> None:
    """Each layout sentence-transformers saved a CrossEncoder in (tools/gen_ce_fixtures.py):
    CrossEncoder(dir).predict(pairs), the Sigmoid of one label or the logits of three."""
    directory = FIXTURES / "ce" / name
    rows = read_csv_rows(directory / "input.csv")
    want = read_safetensors(directory / "reference.safetensors")["scores"]
    model = mcinfer.Model(directory, precision="fp32")
    assert model.task == "classify"
    got = model.predict([(r["text"], r["pair"]) for r in rows])
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5


@pytest.mark.parametrize("name", ["ce6_bert_sigmoid", "ce53_bert_sigmoid", "ce33_bert_sigmoid"])
def test_rank_matches_cross_encoder_rank(name: str) -> None:
    directory = FIXTURES / "ce" / name
    ranked = json.loads((directory / "reference.json").read_text(encoding="utf-8"))["rank"]
    model = mcinfer.Model(directory, precision="fp32")
    got = model.rank(ranked["query"], ranked["passages"])
    want = ranked["result"]
    assert [r["corpus_id"] for r in got] == [r["corpus_id"] for r in want]
    assert max(abs(g["score"] - w["score"]) for g, w in zip(got, want)) <= 1e-5
    assert set(got[0]) == {"corpus_id", "score"} and isinstance(got[0]["score"], float)
    top = model.rank(ranked["query"], ranked["passages"], top_k=2, return_documents=True)
    assert [r["corpus_id"] for r in top] == [r["corpus_id"] for r in want[:2]]
    assert [r["text"] for r in top] == [ranked["passages"][r["corpus_id"]] for r in want[:2]]


def test_rank_needs_one_label() -> None:
    model = mcinfer.Model(FIXTURES / "ce" / "ce6_bert_nli3", precision="fp32")
    with pytest.raises(ValueError, match="3 labels"):
        model.rank("q", ["a", "b"])
    with pytest.raises(TypeError, match="passages"):
        mcinfer.Model(FIXTURES / "ce" / "ce6_bert_sigmoid").rank("q", "a")


def test_encode_refuses_a_classifier_and_predict_checks_pairs() -> None:
    model = mcinfer.Model(FIXTURES / "text" / "bert_cls", precision="fp32", max_len=64)
    with pytest.raises(ValueError, match="classifier"):
        model.encode(["a"])
    with pytest.raises(ValueError, match="2 rows but pairs 1"):
        model.predict((["a", "b"], ["c"]))
    with pytest.raises(ValueError, match=r"sentences\[1\]"):
        model.predict([("a", "b"), ("c",)])


def _cli() -> str:
    """The console script installed with the package, next to this interpreter."""
    script = Path(sys.executable).parent / "mcinfer"
    assert script.is_file(), f"{script}: the mcinfer console script is not installed"
    return str(script)


def test_same_rows_give_the_same_values_as_mcinfer_run(
    tmp_path: Path, minilm_dir: Path, minilm_sentences: list[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(minilm_sentences)
        )
    )
    out_cli, out_api = tmp_path / "cli.csv", tmp_path / "api.csv"
    done = subprocess.run(
        [
            _cli(),
            "run",
            str(minilm_dir),
            "--input",
            str(source),
            "--output",
            str(out_cli),
            "--precision",
            "fp32",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = mcinfer.run(minilm_dir, source, out_api, precision="fp32", quiet=True)
    assert report["rows"] == len(minilm_sentences) and report["wrote_output"] is True
    assert report["precision"] == "fp32"
    encoded = mcinfer.Model(minilm_dir, precision="fp32").encode(minilm_sentences)
    for path in (out_cli, out_api):
        table = read_csv_rows(path)
        assert [r["id"] for r in table] == [f"r{i}" for i in range(len(minilm_sentences))]
        values = np.array([[float(v) for k, v in r.items() if k != "id"] for r in table])
        assert np.abs(values - encoded).max() <= 1e-6, path


def test_run_options_are_checked_by_name(tmp_path: Path, minilm_dir: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("id,text\n1,hello\n")
    with pytest.raises(TypeError, match="unknown option 'text_column'"):
        mcinfer.run(minilm_dir, source, tmp_path / "o.csv", text_column="text")
    with pytest.raises(
        mcinfer.UsageError, match="^precision must be auto, fp32, bf16, int8, not 'fp16'"
    ):
        mcinfer.run(minilm_dir, source, tmp_path / "o.csv", precision="fp16")
    # The same bounds as the CLI's, checked in the same place (NaN included) before the model loads.
    with pytest.raises(
        mcinfer.UsageError, match="^min_cosine must be a number from -1 to 1, not '1.5'"
    ):
        mcinfer.run(minilm_dir, source, tmp_path / "o.csv", precision="int8", min_cosine=1.5)
    with pytest.raises(
        mcinfer.UsageError, match="^min_agreement must be a number from 0 to 1, not 'nan'"
    ):
        mcinfer.run(
            minilm_dir, source, tmp_path / "o.csv", precision="int8", min_agreement=float("nan")
        )
    with pytest.raises(mcinfer.Error, match="missing.csv"):
        mcinfer.run(minilm_dir, tmp_path / "missing.csv", tmp_path / "o.csv", quiet=True)
    assert not (tmp_path / "o.csv").exists()


def test_loading_errors_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a model directory"):
        mcinfer.Model(tmp_path / "absent")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(mcinfer.Error, match="config.json"):
        mcinfer.Model(tmp_path)
    with pytest.raises(mcinfer.UsageError, match="replicas must be a whole number, 1 or more"):
        mcinfer.Model(FIXTURES / "text" / "bert_cls", replicas=0)
