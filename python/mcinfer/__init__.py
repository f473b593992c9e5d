"""mcinfer: Hugging Face encoder checkpoints over whole data sets on every core.

``Model`` loads a model directory once (one shared copy of the weights, one replica per core)
and computes embeddings (``encode``) or classifier probabilities (``predict``) for lists of
strings, numpy/pandas string columns or Arrow arrays; ``run`` is ``mcinfer run`` (files in,
one checked prediction file out).
"""

from __future__ import annotations

from mcinfer._core import Error, PrecisionCheckError, StoppedError, UsageError
from mcinfer._core import __version__ as __version__
from mcinfer._model import Model
from mcinfer._run import run

__all__ = [
    "Error",
    "Model",
    "PrecisionCheckError",
    "StoppedError",
    "UsageError",
    "run",
]
