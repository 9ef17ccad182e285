"""Renders the CLI reference (docs/cli.md) and the top page's index (cli/index.json, what
``lorestore --help`` shows without building the tree) from the command tree itself, so neither
can drift: a test regenerates both and compares. Run ``python -m lorestore.cli.reference >
docs/cli.md`` and ``python -m lorestore.cli.reference --index > src/lorestore/cli/index.json``."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any

import typer

from lorestore.cli.main import app

HEADER = """# CLI reference

Generated from the command definitions by `python -m lorestore.cli.reference > docs/cli.md`;
a test fails when this file and the commands disagree. Every operation command takes
`--json`, which prints the result (or, on stderr, the error) as JSON. Exit status: 0 on
success, 2 for bad input (`invalid_*`, `value_too_large`), 1 for any other error and for
a check that found a fault (`audit verify` on a broken or cut chain).
"""


def _param_line(param: Any) -> str:
    if param.param_type_name == "argument":
        name = f"`{param.name.upper()}`"
        kind = "argument" + ("" if param.required else ", optional")
    else:
        opts = [*param.opts, *getattr(param, "secondary_opts", ())]
        name = ", ".join(f"`{opt}`" for opt in opts)
        kind = "flag" if getattr(param, "is_flag", False) else "option"
        if getattr(param, "multiple", False):
            kind += ", repeatable"
        if param.required:
            kind += ", required"
    help_text = getattr(param, "help", None) or ""
    default = param.default
    if default not in (None, False, (), []) and not callable(default):
        help_text += f" (default: {default})"
    return f"- {name} ({kind}): {help_text}".rstrip(": ")


def _top_commands() -> Iterator[tuple[str, Any]]:
    """The tree's top-level commands and groups, in its order, each with its name."""
    # Typer vendors its own click; only the command tree's duck-typed API is used here.
    group: Any = typer.main.get_command(app)
    ctx = group.context_class(group)
    for name in group.list_commands(ctx):
        yield name, group.get_command(ctx, name)


def render() -> str:
    parts = [HEADER]
    for name, command in _top_commands():
        if hasattr(command, "list_commands"):
            if any(p.name != "help" for p in command.params):
                _render_command(parts, name, command)  # the group's own action
            sub_ctx = command.context_class(command)
            for sub in command.list_commands(sub_ctx):
                _render_command(parts, f"{name} {sub}", command.get_command(sub_ctx, sub))
        else:
            _render_command(parts, name, command)
    return "\n".join(parts)


def _render_command(parts: list[str], name: str, command: Any) -> None:
    parts.append(f"## `lorestore {name}`\n")
    parts.append((command.help or "").strip() + "\n")
    lines = [_param_line(p) for p in command.params if p.name != "help"]
    if lines:
        parts.append("\n".join(lines) + "\n")


def render_index() -> str:
    """cli/index.json: what the group's own page shows (cli/toppage.py), as Typer's help
    shows it: the usage line, the help's first paragraph, each flag with its help and each
    command with its help's first paragraph, in order. Raises for anything that page does not
    render as Typer would (a help of several paragraphs, an option that is not a flag, a help
    panel of its own, a deprecated command)."""
    group: Any = typer.main.get_command(app)
    ctx = group.context_class(group, info_name="lorestore")
    help_text = inspect.cleandoc(group.help or "").partition("\f")[0]
    _only(help_text.count("\n\n") == 0 and not help_text.startswith("\b"), "a one-paragraph help")
    options = []
    for param in group.get_params(ctx):
        if param.hidden:
            continue
        _only(
            param.is_flag and not param.secondary_opts and not param.required and not param.envvar,
            f"flags (not {param.name})",
        )
        _only(not getattr(param, "rich_help_panel", None), "the default Options panel")
        text = "\n".join(p.replace("\n", " ").strip() for p in (param.help or "").split("\n\n"))
        options.append(
            [
                ",".join(o for o in param.opts if "--" in o),
                ",".join(o for o in param.opts if "--" not in o),
                text.strip(),
            ]
        )
    commands = []
    for name, command in _top_commands():
        if command.hidden:
            continue
        _only(not command.deprecated, f"commands not deprecated (not {name})")
        _only(not getattr(command, "rich_help_panel", None), "the default Commands panel")
        first = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
        _only(not first.startswith("\b"), f"help without \\b (not {name}'s)")
        commands.append([name, first.strip()])
    page = {
        "usage": group.get_usage(ctx),
        "help": help_text.replace("\n", " ").strip(),
        "options": options,
        "commands": commands,
    }
    return json.dumps(page, indent=1, ensure_ascii=False) + "\n"


def _only(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"cli/toppage.py shows {what} only: render it there, then regenerate")


if __name__ == "__main__":
    import sys

    print(render_index() if sys.argv[1:] == ["--index"] else render(), end="")
