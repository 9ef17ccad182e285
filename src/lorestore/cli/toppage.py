"""``lorestore --help`` and ``lorestore`` alone, printed without Typer or the command tree.

What the page says (usage, help, options, commands) is read from cli/index.json, generated
from the tree (``python -m lorestore.cli.reference --index``). How it looks is Typer's:
``typer.rich_utils.rich_format_help`` for a group whose help is one paragraph and whose
options are flags, the same Rich panels, tables, styles and highlighters, built here from
Rich itself. Importing ``typer.rich_utils`` imports Rich's Markdown, traceback, pretty and
syntax modules (markdown-it, Pygments, attrs) at module level: about half the page's time,
for a page that uses none of them (docs/benchmarks.md, "Start-up work of 2026-12-05, second
pass"). tests/surfaces/test_cli_help.py holds this page and the tree's byte for byte equal,
at several widths, with colour and without; the generator refuses a tree this page could not
show as Typer would (cli/reference.py, ``render_index``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from rich.align import Align
from rich.columns import Columns
from rich.console import Console, Group
from rich.highlighter import RegexHighlighter
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.theme import Theme

from lorestore.config import help_look

INDEX = Path(__file__).with_name("index.json")

# typer.rich_utils's styles, as its rich_format_help applies them to this page.
THEME = {
    "option": "bold cyan",
    "switch": "bold green",
    "negative_option": "bold magenta",
    "negative_switch": "bold red",
    "types": "bold yellow",
    "types_sep": "dim",
    "usage": "yellow",
}
USAGE_COMMAND = "bold"
PANEL_BORDER = "dim"
COMMAND_NAME = "bold cyan"


class _Options(RegexHighlighter):
    highlights: ClassVar[list[str]] = [
        r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])",
        r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
        r"(?P<types>\<[^\>]+\>)",
        r"(?P<usage>Usage: )",
    ]


class _NegativeOptions(RegexHighlighter):
    highlights: ClassVar[list[str]] = [
        r"(^|\W)(?P<negative_switch>\-\w+)(?![a-zA-Z0-9])",
        r"(^|\W)(?P<negative_option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
    ]


class _Types(RegexHighlighter):
    highlights: ClassVar[list[str]] = [
        r"^(?P<types_sep>(\[|<))",
        r"(?P<types_sep>\|)",
        r"(?P<types_sep>(\]|>))(\.\.\.)?$",
    ]


def _console(highlighter: RegexHighlighter) -> Console:
    """Typer's help console, as the environment sets it."""
    width, terminal = help_look()
    return Console(
        theme=Theme(THEME),
        highlighter=highlighter,
        color_system="auto",
        force_terminal=terminal,
        width=width,
    )


def _table(**columns: Any) -> Table:
    return Table(
        show_header=False,
        expand=True,
        box=None,
        show_lines=False,
        leading=0,
        border_style=None,
        row_styles=None,
        pad_edge=False,
        padding=(0, 1),
        **columns,
    )


def show(*, alone: bool) -> int:
    """Print the page; the exit status: 0 for ``--help``, 2 for ``lorestore`` alone, which
    prints it as a usage error does, without the trailing blank line."""
    index = json.loads(INDEX.read_text(encoding="utf-8"))
    options, negative, types = _Options(), _NegativeOptions(), _Types()
    console = _console(options)
    console.print(Padding(options(index["usage"]), 1), style=USAGE_COMMAND)
    about = options(Text.from_markup(index["help"]))
    console.print(Padding(Align(Group(about), pad=False), (0, 1, 1, 1)))

    # Typer's six columns: long and short names, their negative forms (none for a flag
    # without one), the type (none for a flag) and the help.
    flags = _table(highlight=True)
    for long, short, said in index["options"]:
        flags.add_row(
            options(long),
            options(short),
            negative(""),
            negative(""),
            types(Text(style=THEME["types"], overflow="fold")),
            Columns([options(Text.from_markup(said))]),
        )
    console.print(Panel(flags, border_style=PANEL_BORDER, title="Options", title_align="left"))

    commands = _table(highlight=False)
    width = max((len(name) for name, _ in index["commands"]), default=0)
    commands.add_column(style=COMMAND_NAME, no_wrap=True, width=width)
    commands.add_column("Description", justify="left", no_wrap=False, ratio=10)
    for name, said in index["commands"]:
        commands.add_row(Text(name), options(Text.from_markup(said)))
    console.print(Panel(commands, border_style=PANEL_BORDER, title="Commands", title_align="left"))
    if alone:
        return 2
    print()  # click echoes the (empty) string Typer's help returns: one more newline
    return 0
