"""``lorestore install``, ``uninstall``, ``doctor`` and ``hook``: lorestore in an agent host
(hosts/, docs/hosts.md). ``hook`` is answered by the entry point without this tree (it runs
at every host event); the command here serves ``--help`` and the reference."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lorestore.cli.render import failure
from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:
    from lorestore.hosts.edits import Edit
    from lorestore.hosts.formats import Target
    from lorestore.hosts.install import Change

HostOption = Annotated[
    str, typer.Option("--host", metavar="HOST", help="claude-code, cursor or codex")
]
UserOption = Annotated[
    bool,
    typer.Option(
        "--user/--project",
        help="your own configuration (--user) or the current repository's (--project, the default)",
        show_default=False,
    ),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="show the diff of every file; write nothing")
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the result (or error) as JSON")]


def _targets(
    host: str, user: bool, remote: str | None, token_env: str, hooks: bool | None
) -> tuple[Target, list[Edit]]:
    from lorestore.hosts.formats import edits
    from lorestore.hosts.install import resolve_target

    target = resolve_target(
        host, user=user, remote=remote, token_env=token_env, hooks=hooks, cwd=os.getcwd()
    )
    return target, edits(target)


def _report(changes: list[Change], root: Path, dry_run: bool, as_json: bool, verb: str) -> None:
    if as_json:
        files = [
            {"path": str(c.path), "action": c.action, **({"diff": c.diff(root)} if dry_run else {})}
            for c in changes
        ]
        print(json.dumps({"dry_run": dry_run, "files": files}, indent=2))
        return
    past = {"create": "created", "edit": "edited", "remove": "removed", "unchanged": "unchanged"}
    would = {"create": "would create", "edit": "would edit", "remove": "would remove"}
    for change in changes:
        shown = change.path
        if dry_run and change.action != "unchanged":
            print(f"{would[change.action]} {shown}")
            print(change.diff(root), end="")
        else:
            print(f"{past[change.action]} {shown}")
    if dry_run:
        print(f"(dry run: nothing was {verb})")


def install_command(
    host: HostOption,
    user: UserOption = False,
    remote: Annotated[
        str | None,
        typer.Option(
            "--remote",
            metavar="URL",
            help="use the lorestore server at URL (streamable HTTP) instead of the embedded store",
        ),
    ] = None,
    token_env: Annotated[
        str,
        typer.Option(
            "--token-env",
            metavar="NAME",
            help="with --remote: the environment variable the host reads the agent's token "
            "from (the token itself is never written)",
        ),
    ] = "LORESTORE_TOKEN",  # noqa: S107 - the variable's name, not a token
    hooks: Annotated[
        bool | None,
        typer.Option(
            "--hooks/--no-hooks",
            help="install the lifecycle hooks (default: yes; for Codex, when the installed "
            "Codex has them, else its AGENTS.md says to recall)",
        ),
    ] = None,
    dry_run: DryRunOption = False,
    json_output: JsonOption = False,
) -> None:
    """Connect an agent host to lorestore: its MCP server entry, lifecycle hooks that run
    `lorestore hook`, and a short skill or rules file on when to recall and write lessons.
    Prints each file it wrote; running it again changes nothing; `lorestore uninstall`
    takes out exactly what it added."""
    from lorestore.config import load_settings
    from lorestore.hosts.install import Manifest, apply_install, plan_install

    try:
        target, planned = _targets(host, user, remote, token_env, hooks)
        changes = plan_install(planned)
        if not dry_run:
            apply_install(changes, Manifest(load_settings(use_login=False).home), target.host)
    except LorestoreError as error:
        raise failure(error, json_output) from None
    except OSError as exc:
        raise failure(_io_error(exc), json_output) from None
    _report(changes, target.root, dry_run, json_output, "written")


def uninstall_command(
    host: HostOption,
    user: UserOption = False,
    dry_run: DryRunOption = False,
    json_output: JsonOption = False,
) -> None:
    """Take out what `lorestore install` added for a host: a file it created is removed, a
    file it edited gets back its other content (byte for byte when nothing changed it since);
    every other server, hook, rule and setting stays as it is."""
    from lorestore.config import load_settings
    from lorestore.hosts.install import Manifest, apply_uninstall, plan_uninstall

    try:
        target, planned = _targets(host, user, None, "LORESTORE_TOKEN", True)
        manifest = Manifest(load_settings(use_login=False).home)
        changes = plan_uninstall(planned, manifest)
        if not dry_run:
            apply_uninstall(changes, manifest)
    except LorestoreError as error:
        raise failure(error, json_output) from None
    except OSError as exc:
        raise failure(_io_error(exc), json_output) from None
    _report(changes, target.root, dry_run, json_output, "changed")


def _io_error(exc: OSError) -> LorestoreError:
    return LorestoreError(
        "config_error",
        f"{exc.filename or 'a file'}: {exc.strerror or exc}",
        hint="check the folder exists and you may write there",
    )


def hook_command(
    event: Annotated[
        str,
        typer.Argument(
            metavar="EVENT", help="session-start, prompt, tool-failure, tool-done or stop"
        ),
    ],
    host: HostOption,
) -> None:
    """What a host's lifecycle hook runs: reads the host's hook JSON on stdin and answers in
    the host's format (recalled lessons, a nudge to record one). Never breaks the host: any
    error answers an empty result and is logged to LORESTORE_HOME/hooks.log."""
    from lorestore.hosts.hook import main

    main([event, "--host", host])


def doctor_command(
    host: Annotated[
        list[str] | None,
        typer.Option("--host", metavar="HOST", help="check only this host (repeatable)"),
    ] = None,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="also write, read, recall and delete a probe lesson in a scratch scope",
        ),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Check lorestore end to end: its install in each host (files present and current),
    the store or server (reachable, schema current, the token valid and an agent's), the
    scopes this folder resolves to, and with --deep a round trip. Each failure says how to
    fix it; the exit status is 1 when any check failed."""
    from lorestore.hosts import HOSTS
    from lorestore.hosts.doctor import run_doctor

    chosen = tuple(host) if host else HOSTS
    unknown = [h for h in chosen if h not in HOSTS]
    if unknown:
        raise failure(
            LorestoreError(
                "invalid_argument",
                f"unknown host {unknown[0]!r}",
                hint=f"use --host {' | '.join(HOSTS)}",
            ),
            json_output,
        )
    checks = run_doctor(hosts=chosen, deep=deep)
    ok = all(c.ok for c in checks)
    if json_output:
        print(json.dumps({"ok": ok, "checks": [c.to_dict() for c in checks]}, indent=2))
    else:
        for check in checks:
            print(f"{'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
            if check.fix:
                print(f"     fix: {check.fix}")
    if not ok:
        raise typer.Exit(1)
