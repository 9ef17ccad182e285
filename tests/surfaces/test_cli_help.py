"""`--help` reads as a Typer/Click user expects: no `<bool>`/`<str>` type labels, no
`{SCOPE}` in the usage line, no `[default: admin-token]`-style defaults of flags, paragraphs
that flow in the command list, and shell completion offered."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from tests.conftest import Cli

from lorestore.cli.main import app, command_app

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


def test_the_top_page_without_the_tree_is_the_trees_own(home: Path) -> None:
    """`lorestore --help` and `lorestore` alone print the page from cli/index.json without
    Typer or the tree (cli/toppage.py): through the console script, the same page, byte for
    byte, and the same exit status as the whole tree prints (the control: a run of the tree
    itself, through the same interpreter), at several widths, in colour and without."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORESTORE_", "_LORESTORE"))}
    for name in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TERMINAL_WIDTH", "NO_COLOR"):
        env.pop(name, None)
    env |= {"LORESTORE_HOME": str(home), "TERM": "dumb"}
    lorestore = str(Path(sys.executable).with_name("lorestore"))
    tree = "import sys; from lorestore.cli.main import main; sys.argv[0] = 'lorestore'; main()"
    looks = [
        {"COLUMNS": "97"},
        {"COLUMNS": "40"},
        {"COLUMNS": "200", "FORCE_COLOR": "1", "TERM": "xterm-256color"},
        {"TERMINAL_WIDTH": "72", "PY_COLORS": "1"},
        {"COLUMNS": "80", "FORCE_COLOR": "1", "_TYPER_FORCE_DISABLE_TERMINAL": "1"},
    ]
    coloured = False
    for look in looks:
        for args in (["--help"], []):
            short, whole = (
                subprocess.run(command, env=env | look, capture_output=True, text=True, timeout=60)
                for command in ([lorestore, *args], [sys.executable, "-c", tree, *args])
            )
            assert "write" in whole.stdout and "serve" in whole.stdout
            assert (short.returncode, short.stdout, short.stderr) == (
                whole.returncode,
                whole.stdout,
                whole.stderr,
            ), (look, args)
            assert short.returncode == (2 if args == [] else 0)  # alone: as a usage error
            coloured |= "\x1b[" in short.stdout
    assert coloured  # the control: a look in colour was compared, with its styles


def test_a_command_runs_in_a_tree_of_its_own_as_in_the_whole_tree() -> None:
    """`lorestore NAME ...` builds only NAME's command or group (cli/main.py, command_app): its
    page and a usage error of it are the whole tree's."""
    from typer.testing import CliRunner

    runner = CliRunner()
    root = typer.main.get_command(app)
    names = list(root.commands)  # type: ignore[attr-defined]
    assert {"write", "token", "db", "mcp", "serve"} <= set(names)  # the control: the walk
    for name in names:
        own = command_app(name)
        assert own is not app and len(typer.main.get_command(own).commands) == 1  # type: ignore[attr-defined]
        for args in ([name, "--help"], [name, "--no-such-option"]):
            alone, whole = (runner.invoke(tree, args, env={"COLUMNS": "97"}) for tree in (own, app))
            assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output), args
    assert command_app("no-such-command") is app  # its error lists the whole tree's names
