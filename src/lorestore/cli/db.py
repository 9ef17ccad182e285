"""``lorestore db``: set up a PostgreSQL database for lorestore (roles, grants, migrations) and set
an owner's cap on active lessons, on either backend."""

from __future__ import annotations

import json
import re
import sys
from typing import Annotated, Any

import typer

from lorestore.cli.render import failure, make_console
from lorestore.core.errors import LorestoreError

db_app = typer.Typer(
    name="db",
    help="Set up the PostgreSQL backend: roles, row-level security, migrations.",
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


@db_app.command("cap")
def cap_command(
    owner: Annotated[
        str, typer.Argument(help="user:NAME or org:SLUG", metavar="OWNER", show_default=False)
    ],
    limit: Annotated[
        int, typer.Argument(help="most active lessons the owner may hold", metavar="LIMIT")
    ],
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            help="sqlite:///PATH, or a PostgreSQL URL that may see every tenant (superuser); "
            "default: LORESTORE_DATABASE_URL",
            metavar="URL",
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Set an owner's cap on active lessons (10,000 unless set). Writes and restores beyond
    it fail with cap_exceeded; archiving, deleting or purging expired lessons makes room
    (an expired lesson counts until the purge sweep erases it)."""
    from lorestore.composition import open_database, rls_bypass
    from lorestore.config import load_settings

    warning = None
    try:
        kind, _, name = owner.strip().lower().partition(":")
        named = re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,62}", name)  # a user's or org's name
        if kind not in ("user", "org") or not named or not 0 <= limit <= 10_000_000:
            raise LorestoreError(
                "invalid_argument",
                f"{owner!r} {limit}: the owner is user:NAME or org:SLUG and the limit 0-10,000,000",
                hint="e.g. lorestore db cap org:acme 50000",
            )
        if not database_url:
            settings = load_settings(use_login=False)
            if settings.remote:
                raise LorestoreError(
                    "config_error",
                    "db cap works on a database directly and LORESTORE_URL points to a server",
                    hint="run it where the database is, with --database-url or without "
                    "LORESTORE_URL (a superuser URL on PostgreSQL)",
                )
            database_url = settings.database_url
        store = open_database(database_url)
        try:
            warning = rls_bypass(store)  # this command needs such a role: said, not refused
            target = f"{kind}:{name}"
            # A user is a principal from the first time it acts or is named: the transaction
            # registers it, as it does an actor's first write (both backends).
            with store.transaction(write=True, actor=target if kind == "user" else None) as tx:
                if kind == "org" and not tx.org_members(target):  # an org has an owner
                    raise LorestoreError(
                        "not_found",
                        f"there is no org {name} in this database",
                        hint="check the slug (lorestore org list), or create the org first",
                    )
                tx.set_max_active(target, limit)
        finally:
            store.close()
    except LorestoreError as error:
        raise failure(error, json_output) from None
    result: dict[str, object] = {"owner": f"{kind}:{name}", "max_active": limit}
    if json_output:
        print(json.dumps(result | ({"warning": warning} if warning else {})))
        return
    if warning:
        print(f"warning: {warning}; fine for this command, never for serve", file=sys.stderr)
    print(f"{result['owner']}: at most {limit:,} active")


def _operator_store(database_url: str | None, what: str) -> tuple[Any, str | None]:
    """The store an operator's command opens: --database-url, else LORESTORE_DATABASE_URL
    (never a remote server); with the warning when the role bypasses row-level security,
    which these commands need on PostgreSQL."""
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
    if warning is None and hasattr(store, "role_bypassing_rls"):
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

    from lorestore.core.records import format_ts
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
