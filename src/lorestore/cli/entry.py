"""The ``lorestore`` script's entry point: ``lorestore --version`` answers before anything else
is imported; every other command line goes to the command tree (cli/main.py)."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:  # the command tree and its models cost ~0.2 s to import
        from lorestore import __version__

        print(f"lorestore {__version__}")
        return
    from lorestore.cli.main import main as run

    run()
