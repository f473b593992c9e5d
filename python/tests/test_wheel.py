"""What was installed is the repaired wheel: the package comes from the environment, not the
source tree, and the libraries it needs (oneDNN, OpenMP) come from inside it."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import mcinfer


def _package_dir() -> Path:
    return Path(mcinfer.__file__).resolve().parent


def _imports_of(statement: str) -> set[str]:
    """The modules a fresh interpreter has imported after `statement`."""
    code = f"{statement}\nimport sys\nprint('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_package_is_the_installed_one() -> None:
    package = _package_dir()
    assert Path(sys.prefix).resolve() in package.parents, package
    source = os.environ.get("MCINFER_SOURCE_TREE")
    if source is not None:
        assert Path(source).resolve() / "python" not in package.parents, package
    # The version compiled into the extension is the one the wheel's metadata declares.
    assert mcinfer.__version__ == importlib.metadata.version("mcinfer")
    assert "importlib.metadata" not in _imports_of("import mcinfer")


def test_onednn_is_loaded_from_the_wheel() -> None:
    libs = _package_dir().parent / "mcinfer.libs"
    maps = Path("/proc/self/maps").read_text().splitlines()
    loaded = {line.split()[-1] for line in maps if "dnnl" in line or "gomp" in line}
    assert loaded, "libdnnl is not mapped"
    for path in loaded:
        assert Path(path).parent == libs, f"{path} is not from the wheel ({libs})"


def test_the_console_script_runs_the_cli() -> None:
    script = Path(sys.executable).parent / "mcinfer"
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"mcinfer {mcinfer.__version__}")
    done = subprocess.run([str(script), "run"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "model_dir" in done.stderr
