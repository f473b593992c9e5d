"""Small helpers shared by the benchmark drivers (run_benchmark.py, compare.py)."""
import subprocess
from pathlib import Path


def sh(cmd: list, timeout: float = 120) -> str:
    """stdout of cmd, stripped; "" when it cannot run."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def git_revision(repo: Path) -> str:
    """The commit measured, marked when tracked files differ from it. The results the drivers
    write (bench/RESULTS.md, its plots) do not count as changes to what was measured."""
    rev = sh(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"])
    dirty = sh(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--", ".",
                ":!bench/RESULTS.md", ":!bench/*.png"])
    return rev + (" (with uncommitted changes)" if dirty else "")
