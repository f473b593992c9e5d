"""``mcinfer.run``: ``mcinfer run`` as a call."""

from __future__ import annotations

import json
import os
from typing import Any

from mcinfer import _core

PathLike = str | os.PathLike[str]


def run(
    model_dir: PathLike,
    input: PathLike,
    output: PathLike,
    *,
    precision: str = "auto",
    **options: Any,
) -> dict[str, Any]:
    """Runs ``mcinfer run MODEL_DIR --input INPUT --output OUTPUT [flags]`` and returns its report.

    Every flag of ``mcinfer run`` is a keyword here, spelled with ``_`` for ``-``
    (``text_col="body"``, ``check_precision=64``, ``on_bad_row="skip"``, ``report="r.json"``,
    ``replicas=4``); the job is the CLI's: every core, shards, resume, the merge at the end.
    Raises ``mcinfer.UsageError`` for a wrong value (naming the flag), ``mcinfer.Error`` for a
    failed run (nothing is written at ``output``), ``mcinfer.PrecisionCheckError`` when the
    precision check's bounds are missed. Ctrl-C stops the run after the batches in flight (the
    shards keep them: ``resume=True`` goes on) and raises KeyboardInterrupt.
    """
    values: dict[str, Any] = {
        "model_dir": os.fspath(model_dir),
        "input": os.fspath(input),
        "output": os.fspath(output),
        "precision": precision,
    }
    for key, value in options.items():
        values[key] = os.fspath(value) if isinstance(value, os.PathLike) else value
    report: dict[str, Any] = json.loads(_core.run(values))
    return report
