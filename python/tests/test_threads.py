"""The call runs on the engine's threads: the GIL is free meanwhile, Ctrl-C stops it after the
batches in flight, progress reaches tqdm, and a spawned child can use the package afterwards."""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import mcinfer
import numpy as np
import pytest

# Long enough that a call lasts well over the waits below (~2 s on 2 Zen 4 cores in fp32).
MANY = [
    f"sentence number {i} about the weather and the markets, again and again" for i in range(6000)
]


@pytest.fixture(scope="module")
def model(minilm_dir: Path) -> mcinfer.Model:
    return mcinfer.Model(minilm_dir, precision="fp32")


def test_the_gil_is_released_while_the_engine_works(model: mcinfer.Model) -> None:
    ticks = 0
    running = True

    def count() -> None:
        nonlocal ticks
        while running:
            ticks += 1
            time.sleep(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    began = time.perf_counter()
    model.encode(MANY)
    seconds = time.perf_counter() - began
    running = False
    thread.join()
    # Held GIL: the counter could run only at the 50 ms wake-ups (~20 per second).
    assert ticks >= 100 * seconds, (ticks, seconds)


@pytest.fixture
def python_sigint_handler() -> Iterator[None]:
    """Python's own SIGINT handler, as in a terminal (a shell's background job starts with SIGINT
    ignored, and Python keeps it so)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_sigint_handler")
def test_ctrl_c_stops_the_call_and_the_model_stays_usable(model: mcinfer.Model) -> None:
    before = model.encode(MANY[:8])
    # Sent to the main thread, as a terminal's Ctrl-C reaches Python: a process-directed kill may
    # land on a thread an earlier test left behind (Ray's), and once, in a full run on a Zen 3,
    # the call then ran to its end.
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    began = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        model.encode(MANY * 4)
    assert time.perf_counter() - began < 3.0  # the batches in flight, not the whole call
    timer.join()
    assert np.array_equal(model.encode(MANY[:8]), before)


def test_progress_goes_to_tqdm(model: mcinfer.Model, capsys: pytest.CaptureFixture[str]) -> None:
    model.encode(MANY[:500], show_progress_bar=True)
    err = capsys.readouterr().err
    assert "500/500" in err, err


def _encode_in_child(directory: str, texts: list[str]) -> np.ndarray:
    return mcinfer.Model(directory, precision="fp32").encode(texts)


def test_a_spawned_child_works_after_encode(model: mcinfer.Model, minilm_dir: Path) -> None:
    parent = model.encode(MANY[:16])
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        child = pool.apply(_encode_in_child, (str(minilm_dir), MANY[:16]))
    assert np.array_equal(child, parent)
