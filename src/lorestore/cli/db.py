"""``lorestore db``: set up a PostgreSQL database for lorestore (roles, grants, migrations), and
show or set the caps of an owner or the store's default, on either backend."""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lorestore.cli.render import failure, make_console
from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:
    from lorestore.storage.protocol import OwnerCaps

db_app = typer.Typer(
    name="db",
    help="The database itself: set up PostgreSQL (init: roles, row-level security, "
    "migrations) and show or set the per-owner caps of either backend (cap).",
    no_args_is_help=True,
)


@db_app.command("init")
def init_command(
    database_url: Annotated[
        str,
        typer.Option(
            "--database-url",
            help="an admin URL for the target database (a superuser or a role that may create "
            "roles), e.g. postgresql://postgres@127.0.0.1:5432/lorestore",
            metavar="URL",
        ),
    ],
    app_password: Annotated[
        str | None,
        typer.Option(
            "--app-password",
            help="set this password on the lorestore_app role ('generate' makes one); "
            "omit to leave the role's password as it is",
            metavar="PASSWORD",
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Create the roles (owner, definer, app), apply pending migrations as the owner role,
    and print the connection string the application should use (as lorestore_app)."""
    from lorestore.storage.postgres.setup import init_database, new_password

    password = new_password() if app_password == "generate" else app_password  # noqa: S105
    try:
        if password is not None and password.startswith("-"):
            # `--app-password --json` would take "--json" as the password and set it.
            raise LorestoreError(
                "invalid_argument",
                f"--app-password {password!r} looks like an option, not a password",
                hint="give the password after --app-password, or 'generate' for a new one",
            )
        if not database_url.startswith(("postgresql://", "postgres://")):
            sqlite = database_url.startswith("sqlite:")
            raise LorestoreError(
                "config_error" if sqlite else "invalid_argument",
                "db init sets up PostgreSQL; the embedded SQLite store needs no setup"
                if sqlite
                else f"--database-url {database_url!r} is not a PostgreSQL URL",
                hint="pass --database-url postgresql://SUPERUSER@HOST:PORT/DATABASE",
            )
        report = init_database(database_url, app_password=password)
    except LorestoreError as error:
        if json_output:
            print(json.dumps({"error": error.to_dict()}), file=sys.stderr, flush=True)
        else:
            make_console(stderr=True).print(f"[red]error[/] [bold]{error.code}[/]: {error.message}")
            if error.hint:
                make_console(stderr=True).print(f"[dim]hint:[/] {error.hint}")
        raise typer.Exit(2 if error.bad_input else 1) from None
    if json_output:
        print(json.dumps({"applied": report.applied, "app_url": report.app_url}))
        return
    console = make_console()
    if report.applied:
        console.print("applied " + ", ".join(report.applied))
    else:
        console.print("the schema is up to date")
    console.print("The application connects as lorestore_app (owns nothing, cannot bypass RLS):")
    # One line whatever the terminal's width: it is meant to be copied and pasted.
    console.print(f"  export LORESTORE_DATABASE_URL='{report.app_url}'", soft_wrap=True)
    if password is None:
        console.print(
            "[dim]No password was set on lorestore_app: add one with --app-password, or rely "
            "on your pg_hba.conf (e.g. a local socket).[/]"
        )


def _operator_store(
    database_url: str | None, what: str, *, every_tenant: bool = True
) -> tuple[Any, str | None]:
    """The store an operator's command opens: --database-url, else LORESTORE_DATABASE_URL
    (never a remote server); with the warning when the role bypasses row-level security,
    which these commands need on PostgreSQL. ``every_tenant``: refuse a role that sees only
    its own tenants (the binding decisions); ``db cap`` lets the database's grants decide."""
    from lorestore.composition import open_database, rls_bypass
    from lorestore.config import load_settings

    if not database_url:
        settings = load_settings(use_login=False)
        if settings.remote:
            raise LorestoreError(
                "config_error",
                f"{what} works on a database directly and LORESTORE_URL points to a server",
                hint="run it where the database is, with --database-url or without "
                "LORESTORE_URL (a superuser URL on PostgreSQL)",
            )
        database_url = settings.database_url
    store = open_database(database_url)
    warning = rls_bypass(store)
    if every_tenant and warning is None and hasattr(store, "role_bypassing_rls"):
        store.close()
        raise LorestoreError(
            "config_error",
            f"{what} decides for every tenant, and this PostgreSQL role sees only its own",
            hint="pass --database-url with a superuser of that database, e.g. "
            "postgresql://postgres@HOST/DB",
        )
    return store, warning


_DATABASE_URL_HELP = (
    "sqlite:///PATH, or a PostgreSQL URL that may see every tenant (superuser); "
    "default: LORESTORE_DATABASE_URL"
)


@db_app.command("cap")
def cap_command(
    owner: Annotated[
        str,
        typer.Argument(
            help="user:NAME or org:SLUG, or default (every owner without caps of its own)",
            metavar="OWNER",
            show_default=False,
        ),
    ],
    limit: Annotated[
        str | None,
        typer.Argument(
            help="most active lessons; 'default' follows the store's default (for OWNER "
            "default: 'none' for no cap); omit to show the caps",
            metavar="LIMIT",
            show_default=False,
        ),
    ] = None,
    max_bytes: Annotated[
        str | None,
        typer.Option(
            "--bytes",
            help="most bytes stored (values of every lesson and version, archived too, and "
            "what imports keep), e.g. 512MiB or 2GiB; 'default' or 'none' as for LIMIT",
            metavar="SIZE",
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option("--database-url", help=_DATABASE_URL_HELP, metavar="URL"),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Show or set the caps of an owner or of every owner (default), on either backend.

    LIMIT caps active lessons, --bytes the bytes stored; writes, restores and imports beyond
    them fail with cap_exceeded. Archiving, deleting or purging expired lessons makes room
    under LIMIT (an expired lesson counts until the purge sweep erases it); archived lessons
    and every version count against --bytes until erased. An owner without caps of its own
    follows the store's default: none on the embedded SQLite store, 10,000 lessons and 1 GiB
    on PostgreSQL; OWNER default changes it (docs/configuration.md#caps)."""
    from lorestore.core.caps import parse_limit

    warning = None
    try:
        target = _cap_owner(owner)
        of_default = target is None
        active = None if limit is None else parse_limit(limit, what="active", of_default=of_default)
        size = (
            None
            if max_bytes is None
            else parse_limit(max_bytes, what="bytes", of_default=of_default)
        )
        # On PostgreSQL this needs a role that bypasses RLS (its warning is shown, the
        # command goes on); with any other role the database's grants decide.
        store, warning = _operator_store(database_url, "db cap", every_tenant=False)
        try:
            # A user is a principal from the first time it acts or is named: the transaction
            # that sets its cap registers it, as an actor's first write does (both backends).
            # Showing the caps is a read.
            write = limit is not None or max_bytes is not None
            actor = target if write and target and target.startswith("user:") else None
            with store.transaction(write=write, actor=actor) as tx:
                if target and target.startswith("org:") and not tx.org_members(target):
                    raise LorestoreError(  # an org has an owner
                        "not_found",
                        f"there is no org {target.removeprefix('org:')} in this database",
                        hint="check the slug (lorestore org list), or create the org first",
                    )
                if write and target is None:
                    now = tx.owner_caps(None)
                    tx.set_default_caps(
                        now.default_active if limit is None else active,
                        now.default_bytes if max_bytes is None else size,
                    )
                elif write and target is not None:
                    if limit is not None:
                        tx.set_max_active(target, active)
                    if max_bytes is not None:
                        tx.set_max_bytes(target, size)
                caps = tx.owner_caps(target)
        finally:
            store.close()
    except LorestoreError as error:
        raise failure(error, json_output) from None
    _print_caps(owner.strip().lower() if target is None else target, caps, warning, json_output)


def _cap_owner(owner: str) -> str | None:
    """The owner a cap is set for (user:NAME or org:SLUG), or None for the store's default."""
    text = owner.strip().lower()
    if text == "default":
        return None
    kind, _, name = text.partition(":")
    if kind not in ("user", "org") or not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,62}", name):
        raise LorestoreError(
            "invalid_argument",
            f"{owner!r} is not an owner: give user:NAME, org:SLUG or default",
            hint="e.g. lorestore db cap org:acme 50000 --bytes 2GiB",
        )
    return f"{kind}:{name}"


def _print_caps(owner: str, caps: OwnerCaps, warning: str | None, json_output: bool) -> None:
    from lorestore.core.caps import format_size

    defaults: dict[str, object] = {
        "max_active": caps.default_active,
        "max_bytes": caps.default_bytes,
    }
    result: dict[str, object] = {"owner": owner}
    if owner == "default":
        result |= defaults
    else:
        result |= {
            "max_active": caps.active_cap,  # the caps in force: its own, else the default
            "max_bytes": caps.bytes_cap,
            "active_lessons": caps.active_lessons,
            "stored_bytes": caps.stored_bytes,
            "defaults": defaults,
        }
    if json_output:
        print(json.dumps(result | ({"warning": warning} if warning else {})))
        return
    if warning:
        print(f"warning: {warning}; fine for this command, never for serve", file=sys.stderr)
    if owner == "default":
        active = "no cap" if caps.default_active is None else f"at most {caps.default_active:,}"
        size = (
            "no cap" if caps.default_bytes is None else f"at most {format_size(caps.default_bytes)}"
        )
        print(f"owners without caps of their own: {active} active lessons, {size} stored")
        return
    active = "no cap" if caps.active_cap is None else f"at most {caps.active_cap:,}"
    size = "no cap" if caps.bytes_cap is None else f"at most {format_size(caps.bytes_cap)}"
    own = " (the default)" if caps.max_active is None else ""
    own_bytes = " (the default)" if caps.max_bytes is None else ""
    print(
        f"{owner}: {caps.active_lessons:,} active, {active}{own}; "
        f"{format_size(caps.stored_bytes)} stored, {size}{own_bytes}"
    )


@db_app.command("approve-binding")
def approve_binding_command(
    org: Annotated[str, typer.Argument(help="the org's slug", metavar="ORG", show_default=False)],
    pattern: Annotated[
        str, typer.Argument(help="the pending pattern", metavar="PATTERN", show_default=False)
    ],
    reject: Annotated[
        bool, typer.Option("--reject", help="refuse the request instead (it is removed)")
    ] = False,
    database_url: Annotated[
        str | None, typer.Option("--database-url", help=_DATABASE_URL_HELP, metavar="URL")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Approve (or --reject) an org's pending scope binding: an operator's decision, since a
    binding of a name nobody holds yet could squat another team's repositories. Approving is
    refused while other owners keep lessons at the scopes it claims."""
    from datetime import UTC, datetime

    from lorestore.core.timestamps import format_ts
    from lorestore.service.orgs import approve_binding

    try:
        store, warning = _operator_store(database_url, "db approve-binding")
        try:
            at = format_ts(datetime.now(UTC))
            approved = approve_binding(store, org, pattern, reject=reject, at=at)
        finally:
            store.close()
    except LorestoreError as error:
        raise failure(error, json_output) from None
    result = {"org": org, "pattern": pattern, "approved": approved}
    if json_output:
        print(json.dumps(result | ({"warning": warning} if warning else {})))
        return
    print(f"{pattern}: {'approved for' if approved else 'refused to'} {org}")


@db_app.command("pending-bindings")
def pending_bindings_command(
    database_url: Annotated[
        str | None, typer.Option("--database-url", help=_DATABASE_URL_HELP, metavar="URL")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """The scope bindings waiting for an operator's approval (they route nothing yet)."""
    try:
        store, _ = _operator_store(database_url, "db pending-bindings")
        try:
            with store.transaction(write=False, actor=None) as tx:
                pending = [{"org": b.org, "pattern": b.pattern} for b in tx.pending_bindings()]
        finally:
            store.close()
    except LorestoreError as error:
        raise failure(error, json_output) from None
    if json_output:
        print(json.dumps({"pending": pending}))
        return
    for item in pending:
        print(f"{item['org']}  {item['pattern']}")
    if not pending:
        print("no binding waits for approval")
