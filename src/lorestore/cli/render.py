"""What the CLI prints for people, and how it reports an error: the console, the exit status
of a failure, the line a state change prints. The renderer of each result type lives in
cli/renderers.py, imported (with Rich) only when a result is shown; ``--json`` bypasses both and
prints the result model as is."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from lorestore.config import columns_given
from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:  # Rich costs a CLI start tens of milliseconds: imported when printing
    import typer
    from rich.console import Console

    from lorestore.models import Result

# Without a terminal (a pipe, a file) Rich lays output out for 80 columns, cutting table cells
# (ids, times, scopes) and breaking the commands a reader copies in two: piped, the width is
# this, unless COLUMNS says otherwise.
PIPED_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    """The console the CLI prints people's output with (stdout, or stderr)."""
    from rich.console import Console

    made = Console(stderr=stderr, emoji=False)
    if not made.is_terminal and not columns_given():
        made.width = PIPED_WIDTH
    return made


# What a command that changes a lesson's state did, said before the lesson is shown (the
# panel alone looks the same as a read's).
_DONE = {
    "memory_archive": "archived",
    "memory_restore": "restored",
    "memory_verify": "verified",
    "memory_dispute": "disputed",
    "memory_reject": "rejected",
}


def confirmation(operation: str, params: Any) -> str | None:
    """The line that says what ``operation`` did, for the people's output; None for reads."""
    done = _DONE.get(operation)
    if done is None:
        return None
    if operation == "memory_reject" and getattr(params, "undo", False):
        done = "rejection lifted"
    if getattr(params, "revision", False) and operation in ("memory_verify", "memory_reject"):
        done = {"verified": "revision accepted", "rejected": "revision rejected"}.get(
            done, "revisions' rejections lifted"
        )
    from rich.markup import escape

    from lorestore.core.recall import show_controls

    where = f"{getattr(params, 'scope', '')} / {getattr(params, 'key', '')}"
    return f"[green]{done}[/]: {escape(show_controls(where))}"


def render(console: Console, result: Result) -> None:
    from lorestore.cli.renderers import RENDERERS, shown

    result = shown(result)
    renderer = RENDERERS.get(type(result))
    if renderer is None:  # a result without a renderer of its own is still shown, as JSON
        console.print_json(result.model_dump_json())
    else:
        renderer(console, result)


def render_error(console: Console, error: LorestoreError) -> None:
    from rich.markup import escape

    console.print(f"[red]error[/] [bold]{error.code}[/]: {escape(error.message)}")
    if error.hint:
        console.print(f"[dim]hint:[/] {escape(error.hint)}")


def failure(error: LorestoreError, as_json: bool) -> typer.Exit:
    """Report an error on stderr (JSON with ``--json``) and the exit to raise: status 2 for
    bad input, 1 for anything else."""
    import typer

    if as_json:
        print(json.dumps({"error": error.to_dict()}, ensure_ascii=False), file=sys.stderr)
    else:
        render_error(make_console(stderr=True), error)
    return typer.Exit(2 if error.bad_input else 1)
