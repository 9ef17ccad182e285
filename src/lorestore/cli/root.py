"""The top of the command tree: the ``lorestore`` group, its options and its help, shared by
the whole tree (cli/main.py) and by ``lorestore --help`` and ``lorestore`` alone, which list
the commands from cli/index.json (generated from the tree by cli/reference.py) without building
the tree. Building it imports the catalog, its models and every command's module and reads
every command's signature: about 0.2 s that a page of names and their help does not need
(docs/benchmarks.md, "Start-up work of 2026-12-05")."""

from __future__ import annotations

import json
from importlib import resources
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

HELP = "A lesson store for coding agents: every version kept, corrections that stick."


def _version(value: bool) -> None:
    if value:
        from lorestore import __version__

        print(f"lorestore {__version__}")
        raise typer.Exit()


def root_app(cls: type[TyperGroup]) -> typer.Typer:
    """The ``lorestore`` Typer app, its group built as ``cls``, with no command yet."""
    app = typer.Typer(
        cls=cls,
        name="lorestore",
        help=HELP,
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _main(
        version: Annotated[
            bool,
            typer.Option(
                "--version", callback=_version, is_eager=True, help="print the version and exit"
            ),
        ] = False,
    ) -> None:
        """lorestore keeps the lessons coding agents learn, with every version and correction."""

    return app


class _Listing(TyperGroup):
    """The group with a stand-in for each command of the index: its name and its help, all
    that the group's own help page shows of it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        index = resources.files("lorestore.cli").joinpath("index.json").read_text("utf-8")
        for name, text in json.loads(index):
            self.add_command(TyperCommand(name, help=text))


def show_help() -> None:
    """``lorestore --help`` (or ``lorestore`` alone, which shows it and exits 2), as the whole
    tree prints it (tests/surfaces/test_cli_help.py holds the two equal)."""
    root_app(_Listing)()
