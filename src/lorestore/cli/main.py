"""Entry point of the ``lorestore`` command (composition root for the CLI): the operation
commands generated from the catalog, and ``mcp``, ``serve`` and ``maintain``. With
``LORESTORE_URL`` set, operations and ``mcp`` run on that server instead of the local store."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from lorestore.auth.actor import local_actor
from lorestore.cli.backend import open_backend, with_git_context
from lorestore.cli.commands import build_command, default_action
from lorestore.cli.db import db_app
from lorestore.cli.eval import eval_command
from lorestore.cli.hosts import doctor_command, hook_command, install_command, uninstall_command
from lorestore.cli.importing import import_command
from lorestore.cli.login import login_command, logout_command
from lorestore.cli.migrate import migrate_command
from lorestore.cli.portable import export_command
from lorestore.cli.reindex import reindex_command
from lorestore.cli.render import confirmation, failure, make_console, render
from lorestore.cli.root import root_app
from lorestore.config import MAX_WORKERS, load_settings
from lorestore.core.errors import LorestoreError
from lorestore.operations import CLI_GROUPS, Operation, on_surface

# Typer carries its own copy of click (typer._click); its exception classes are reached from
# the one Typer exports, whichever click it is built on.
_UsageError: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
)
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class _Commands(TyperGroup):
    """The command tree; with ``--json`` on the command line, a usage error (an unknown
    option, a missing argument, a value of the wrong type) is reported as the JSON error
    every other failure is, with exit status 2 as before."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode or "--json" not in argv:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, False, **extra)
        except _UsageError as exc:
            usage: Any = exc  # click's UsageError: a message and the command's context
            where = usage.ctx.command_path if usage.ctx is not None else "lorestore"
            error = LorestoreError(
                "invalid_argument", usage.format_message(), hint=f"see `{where} --help`"
            )
            raise SystemExit(failure(error, as_json=True).exit_code) from None
        except _ClickException as exc:
            other: Any = exc
            other.show()
            raise SystemExit(other.exit_code) from None
        except typer.Abort:
            print("Aborted!", file=sys.stderr)
            raise SystemExit(1) from None
        raise SystemExit(code if isinstance(code, int) else 0)


app = root_app(_Commands)


def _fail(error: LorestoreError, as_json: bool) -> typer.Exit:
    return failure(error, as_json)


def run_operation(op: Operation, data: dict[str, Any], as_json: bool) -> None:
    try:
        settings = load_settings()
        params = op.parse(data)
        actor = local_actor(
            principal=settings.principal, session=settings.session, agent=settings.agent
        )
        backend = open_backend(settings, actor)
        try:
            result = with_git_context(backend.invoke, os.getcwd())(op, params)
        finally:
            backend.close()
    except LorestoreError as error:
        raise _fail(error, as_json) from None
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        console = make_console()
        done = confirmation(op.name, params)
        if done is not None:
            console.print(done, highlight=False)
        render(console, result)
    if result.found_fault():
        raise typer.Exit(1)


_default_actions = {op.cli_name for op in on_surface("cli") if op.cli_group is None}
_groups = {
    name: typer.Typer(name=name, help=text, no_args_is_help=name not in _default_actions)
    for name, text in CLI_GROUPS.items()
}
for _op in on_surface("cli"):
    if _op.streaming:
        continue  # hand-written below: export and import stream records
    if _op.cli_group is None and _op.cli_name in _groups:
        # `lorestore audit` lists the log and `lorestore audit verify` checks it: an operation
        # named like a group is the group's own action when no sub-command follows.
        _groups[_op.cli_name].callback(invoke_without_command=True, help=_op.summary)(
            default_action(build_command(_op, run_operation))
        )
        continue
    _target = _groups[_op.cli_group] if _op.cli_group else app
    _target.command(_op.cli_name, help=_op.summary)(build_command(_op, run_operation))
for _name, _group in _groups.items():
    app.add_typer(_group, name=_name)
# Store administration, beside the catalog's operations: PostgreSQL setup and store copies.
app.add_typer(db_app, name="db")
app.command("migrate")(migrate_command)
app.command("eval")(eval_command)
app.command("reindex")(reindex_command)
# The streaming operations of the catalog, each with its own adapter.
app.command("export")(export_command)
app.command("import")(import_command)
# The person's own credential for a server, kept out of the environment agents inherit.
app.command("login")(login_command)
app.command("logout")(logout_command)
# lorestore in an agent host: its configuration, and what its lifecycle hooks run.
app.command("install")(install_command)
app.command("uninstall")(uninstall_command)
app.command("hook")(hook_command)
app.command("doctor")(doctor_command)


@app.command("mcp")
def mcp_command(
    announce: Annotated[
        bool,
        typer.Option(
            "--announce",
            help="print how to connect an MCP host to stderr before serving (done anyway when "
            "stdin is a terminal)",
        ),
    ] = False,
    allow_person_token: Annotated[
        bool,
        typer.Option(
            "--allow-person-token",
            help="bridge even with a review or admin LORESTORE_TOKEN: the agent could then "
            "verify, reject and delete lessons (refused without this)",
        ),
    ] = False,
) -> None:
    """Serve the MCP tools over stdio (for Claude Code, Cursor, Codex and other hosts); with
    LORESTORE_URL and an agent's LORESTORE_TOKEN set, on that server. Your own `lorestore
    login` credential is never used here."""
    from lorestore.cli.stdio import serve_mcp

    try:
        serve_mcp(announce=announce, allow_person_token=allow_person_token)
    except LorestoreError as error:
        raise _fail(error, False) from None


@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(metavar="HOST", help="address to listen on")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            metavar="PORT", help="port to listen on, 0-65535 (0: any free one)", min=0, max=65535
        ),
    ] = 8765,
    no_admin_token: Annotated[
        bool,
        typer.Option(
            "--no-admin-token",
            help="on first start (no live token for the local user) do not create and print "
            "the admin token it otherwise shows once",
        ),
    ] = False,
    log_format: Annotated[
        str,
        typer.Option(
            metavar="FORMAT",
            help="auto (readable lines at a terminal, JSON when piped), json or text",
        ),
    ] = "auto",
    workers: Annotated[
        int,
        typer.Option(
            metavar="N",
            help=f"worker processes serving the port, 1-{MAX_WORKERS}: more answer more "
            "requests at once on a machine with more cores (PostgreSQL: each opens its own "
            "pool)",
            min=1,
            max=MAX_WORKERS,
        ),
    ] = 1,
) -> None:
    """Serve MCP (streamable HTTP, /mcp) and REST (/api/v1, OpenAPI) on the local store, with
    bearer tokens, the maintenance schedule and request logs on stderr."""
    from lorestore.transports.http.server import serve

    try:
        settings = load_settings(use_login=False)
        serve(
            settings,
            host=host,
            port=port,
            admin_token=not no_admin_token,
            log_format=log_format,
            workers=workers,
        )
    except LorestoreError as error:
        raise _fail(error, False) from None


@app.command("maintain")
def maintain_command(
    json_output: Annotated[
        bool, typer.Option("--json", help="print the report (or error) as JSON")
    ] = False,
) -> None:
    """Run the maintenance sweeps once (for cron): erase expired lessons, archived ones past
    LORESTORE_ARCHIVE_RETENTION_DAYS, recall-log entries past LORESTORE_RECALL_RETENTION_DAYS and
    webhook delivery ids past LORESTORE_WEBHOOK_RETENTION_DAYS, each switchable off. Each sweep
    that runs writes an audit event with its counts."""
    from lorestore.composition import build_service, sweep_plan
    from lorestore.service.maintenance import Maintenance

    try:
        settings = load_settings(use_login=False)
        if settings.remote:
            raise LorestoreError(
                "config_error",
                "maintain works on a store directly and LORESTORE_URL points to a server",
                hint="the server runs the sweeps itself (LORESTORE_MAINTENANCE_HOURS); run "
                "`lorestore maintain` on the server's host without LORESTORE_URL",
            )
        service = build_service(settings)
        try:
            report = Maintenance(service).run(sweep_plan(settings), principal=settings.principal)
        finally:
            service.store.close()
    except LorestoreError as error:
        raise _fail(error, json_output) from None
    if json_output:
        print(report.model_dump_json(indent=2))
    else:
        for sweep in report.sweeps:
            state = f"purged {sweep.purged}" if sweep.enabled else "off"
            print(f"{sweep.sweep}: {state}")


def _flowing(text: str) -> str:
    """Help text with each paragraph on one line, for Rich to wrap: the command list keeps a
    docstring's own line breaks, which came out as ragged lines in the middle of a row."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _flow_help(tree: typer.Typer) -> None:
    for command in tree.registered_commands:
        text = command.help or inspect.getdoc(command.callback)
        if text:
            command.help = _flowing(text)
    for group in tree.registered_groups:
        if group.typer_instance is not None:
            _flow_help(group.typer_instance)


_flow_help(app)


def command_app(name: str) -> typer.Typer:
    """The tree with only the top-level command or group ``name`` (the whole tree if there is
    none such): what running it builds. Typer builds every command it holds from its signature
    before it runs one, 20 ms for the whole tree; the page of a command, its errors and what it
    runs are the same either way (tests/surfaces/test_cli_help.py)."""
    only = root_app(_Commands)
    only.registered_commands = [c for c in app.registered_commands if c.name == name]
    only.registered_groups = [g for g in app.registered_groups if g.name == name]
    return only if only.registered_commands or only.registered_groups else app


def main() -> None:
    args = sys.argv[1:]
    (command_app(args[0]) if args else app)()
