"""The top of the command tree: the ``lorestore`` group, its options and its help, shared by
the whole tree (cli/main.py) and by a one-shot command's tree of its own (``command_app``).
``lorestore --help`` and ``lorestore`` alone are printed without either (cli/toppage.py)."""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperGroup

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
