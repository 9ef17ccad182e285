"""Entry point of the ``lorestore`` command (composition root for the CLI)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from lorestore import __version__
from lorestore.auth.actor import local_actor
from lorestore.cli.commands import build_command
from lorestore.cli.render import render, render_error
from lorestore.config import load_settings
from lorestore.core.errors import LorestoreError
from lorestore.operations import CLI_GROUPS, Operation, on_surface

app = typer.Typer(
    name="lorestore",
    help="A lesson store for coding agents: every version kept, corrections that stick.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_error(error: LorestoreError, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"error": error.to_dict()}, ensure_ascii=False), file=sys.stderr)
    else:
        render_error(Console(stderr=True), error)


def run_operation(op: Operation, data: dict[str, Any], as_json: bool) -> None:
    try:
        settings = load_settings()
        from lorestore.composition import build_service

        service = build_service(settings)
        params = op.parse(data)
        actor = local_actor(session=settings.session, agent=settings.agent)
        result = op.invoke(service, actor, params)
    except LorestoreError as error:
        _print_error(error, as_json)
        raise typer.Exit(2 if error.bad_input else 1) from None
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        render(Console(), result)


_groups = {
    name: typer.Typer(name=name, help=text, no_args_is_help=True)
    for name, text in CLI_GROUPS.items()
}
for _name, _group in _groups.items():
    app.add_typer(_group, name=_name)
for _op in on_surface("cli"):
    _target = _groups[_op.cli_group] if _op.cli_group else app
    _target.command(_op.cli_name, help=_op.summary)(build_command(_op, run_operation))


@app.command("mcp")
def mcp_command(
    announce: Annotated[
        bool,
        typer.Option(
            "--announce", help="print how to connect an MCP host to stderr before serving"
        ),
    ] = False,
) -> None:
    """Serve the MCP tools over stdio (for Claude Code, Cursor, Codex and other hosts)."""
    try:
        settings = load_settings()
        if announce:
            from lorestore.transports.mcp.stdio import announce as print_announcement

            print_announcement(settings)
        from lorestore.transports.mcp.stdio import serve_stdio

        serve_stdio(settings)
    except LorestoreError as error:
        _print_error(error, False)
        raise typer.Exit(2 if error.bad_input else 1) from None


def _version(value: bool) -> None:
    if value:
        print(f"lorestore {__version__}")
        raise typer.Exit()


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


def main() -> None:
    app()
