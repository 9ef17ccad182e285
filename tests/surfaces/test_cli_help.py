"""`--help` reads as a Typer/Click user expects: no `<bool>`/`<str>` type labels, no
`{SCOPE}` in the usage line, no `[default: admin-token]`-style defaults of flags, paragraphs
that flow in the command list, and shell completion offered."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer
from tests.conftest import Cli

from lorestore.cli.main import app

ODD = re.compile(r"<(bool|str|int|float|list\[[a-z]+\])[^>]*>|\{[A-Z_]+\}")
# Text in square brackets that Rich, which renders the help, would take for a style tag and
# drop: `lorestore[semantic]` came out as `lorestore`. Written `\[semantic]` it shows.
MARKUP = re.compile(r"(?<!\\)\[[a-z][\w ,=#/.-]*\]")


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    if hasattr(command, "commands"):  # a group (of the click Typer is built on)
        for name, sub in command.commands.items():
            yield from _paths(sub, (*prefix, name))


def test_every_help_page_reads_as_click_help(cli: Cli) -> None:
    root = typer.main.get_command(app)
    pages = list(_paths(root))
    assert len(pages) > 30  # every command and group, the control that the walk found them
    for path in pages:
        shown = cli(*path, "--help")
        assert shown.exit_code == 0, path
        assert not ODD.search(shown.stdout), (path, ODD.search(shown.stdout))
        for flag in re.findall(r"\[default: ([a-z-]+)\]", shown.stdout):
            assert f"--{flag}" not in shown.stdout, (path, flag)  # a flag's name as its default


def test_no_help_text_loses_its_square_brackets(cli: Cli) -> None:
    root = typer.main.get_command(app)
    commands = [root]
    for path in list(_paths(root))[1:]:
        command = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        commands.append(command)
    texts = [c.help or "" for c in commands]
    texts += [getattr(p, "help", None) or "" for c in commands for p in c.params]
    assert any("lorestore\\[semantic]" in t for t in texts)  # the walk saw the escaped ones
    assert not [m for t in texts for m in MARKUP.findall(t)]
    shown = " ".join(cli("reindex", "--help").stdout.split())
    assert "pip install 'lorestore[semantic]'" in shown
    assert "lorestore[semantic]" in "".join(cli("eval", "--help").stdout.split()).replace("│", "")


def test_the_command_list_flows_and_completion_is_offered(cli: Cli) -> None:
    shown = cli("--help").stdout
    assert "--install-completion" in shown and "--show-completion" in shown
    rows = [line for line in shown.splitlines() if line.startswith("│")]
    # A docstring's own line break came out as a short line in the middle of a row.
    (serve,) = [i for i, line in enumerate(rows) if line.startswith("│ serve ")]
    assert "on the local store, with bearer tokens" in " ".join(
        " ".join(r.strip("│ ").split()) for r in rows[serve : serve + 3]
    )
