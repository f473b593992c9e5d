"""The ``mcinfer`` console script: the command line of the C++ tool, run in this process."""

from __future__ import annotations

import sys

from mcinfer import _core


def main() -> None:
    sys.stdout.flush()
    sys.exit(_core.cli_main(["mcinfer", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
