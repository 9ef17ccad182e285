"""The ``lorestore`` script's entry point. Some command lines skip the command tree (the
catalog, its models and every command's options, cli/main.py): ``lorestore --version``,
answered before anything else is imported; ``lorestore --help`` and ``lorestore`` alone, whose
page is printed from an index (cli/toppage.py); ``lorestore mcp`` as hosts start it at
every session, which goes straight to the server (cli/stdio.py) with the same output and exit
status; and ``lorestore hook EVENT --host H``, which a host runs as a cold process at every
lifecycle event (hosts/hook.py). Every other one (and ``lorestore hook --help``) goes to the
tree."""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args == ["--version"]:  # the command tree and its models cost ~0.2 s to import
        from lorestore import __version__

        print(f"lorestore {__version__}")
        return
    from lorestore.config import completion_requested, quiet_pydantic_plugins

    # Completing a command's options needs the tree (here and for `mcp` below).
    if args in ([], ["--help"]) and not completion_requested():
        from lorestore.cli.toppage import show

        if status := show(alone=not args):
            raise SystemExit(status)
        return
    quiet_pydantic_plugins()  # before the first model is built
    if args[:1] == ["hook"] and not {"--help", "-h"} & set(args):
        from lorestore.hosts.hook import main as hook

        hook(args[1:])
        return
    if args == ["mcp"] and not completion_requested():
        from lorestore.cli.stdio import main_mcp

        main_mcp()
        return
    from lorestore.cli.main import main as run

    run()
