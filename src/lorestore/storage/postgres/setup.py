"""Setting up a PostgreSQL database for lorestore: roles, grants, migrations.

``init_database`` runs with a superuser (or a role that may create roles): it creates
``lorestore_owner`` (owns the schema, cannot log in), ``lorestore_definer`` (owns only the
SECURITY DEFINER membership readers; may bypass RLS) and ``lorestore_app`` (logs in, owns
nothing, NOBYPASSRLS), then applies migrations *as the owner role*. The application then
connects as ``lorestore_app`` only.
"""

from __future__ import annotations

import secrets
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import tuple_row

from lorestore.core.errors import LorestoreError
from lorestore.storage import migrations

PACKAGE = "lorestore.storage.postgres.migrations"
OWNER_ROLE, DEFINER_ROLE, APP_ROLE = "lorestore_owner", "lorestore_definer", "lorestore_app"

_ROLES = (
    "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lorestore_owner') THEN "
    "CREATE ROLE lorestore_owner NOLOGIN NOBYPASSRLS; END IF; "
    "IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lorestore_definer') THEN "
    "CREATE ROLE lorestore_definer NOLOGIN BYPASSRLS; END IF; "
    "IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lorestore_app') THEN "
    "CREATE ROLE lorestore_app LOGIN NOBYPASSRLS; END IF; END $$",
    # The owner hands function ownership to the definer, so it must be able to act as it.
    "GRANT lorestore_definer TO lorestore_owner",
    "GRANT CREATE, USAGE ON SCHEMA public TO lorestore_owner",
    # Required to be handed the ownership of a function in this schema.
    "GRANT CREATE ON SCHEMA public TO lorestore_definer",
    "GRANT USAGE ON SCHEMA public TO lorestore_app, lorestore_definer",
)

_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    number      integer PRIMARY KEY,
    name        text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class InitReport:
    applied: list[str]
    app_url: str
    password_set: bool


def _applied(conn: psycopg.Connection[Any]) -> dict[int, tuple[str, str]]:
    cur = conn.cursor(row_factory=tuple_row)
    rows = cur.execute("SELECT number, name, checksum FROM schema_migrations").fetchall()
    return {int(r[0]): (str(r[1]), str(r[2])) for r in rows}


def check_migrations(conn: psycopg.Connection[Any]) -> None:
    """Refuse to serve a database whose schema is missing, behind or changed."""
    try:
        with conn.transaction():
            applied = _applied(conn)
    except psycopg.errors.UndefinedTable as exc:
        raise LorestoreError(
            "config_error",
            "this PostgreSQL database has no lorestore schema",
            hint="run `lorestore db init --database-url postgresql://SUPERUSER@HOST/DB` once",
        ) from exc
    migrations.require_current(
        PACKAGE,
        applied,
        what="the database",
        hint="run `lorestore db init` with an admin URL to apply them",
    )


def init_database(admin_url: str, *, app_password: str | None = None) -> InitReport:
    """Create roles, apply pending migrations as the owner role, return the app's URL."""
    try:
        conn = psycopg.connect(admin_url, autocommit=True)
    except psycopg.Error as exc:
        raise LorestoreError("config_error", f"cannot connect to PostgreSQL: {exc}") from exc
    with conn:
        # Serialise concurrent inits (two test sessions, two deploys) on one cluster.
        conn.execute("SELECT pg_advisory_lock(hashtextextended('lorestore.init', 0))")
        for statement in _ROLES:
            conn.execute(statement)
        secure_database(conn)
        password_set = False
        if app_password is not None:
            conn.execute(
                sql.SQL("ALTER ROLE lorestore_app PASSWORD {}").format(sql.Literal(app_password))
            )
            password_set = True
        applied = _migrate(conn)
        conn.execute("SELECT pg_advisory_unlock(hashtextextended('lorestore.init', 0))")
    params = conninfo_to_dict(admin_url)
    params["user"] = APP_ROLE
    params.pop("password", None)
    if app_password is not None:
        params["password"] = app_password
    return InitReport(applied, _as_url(params), password_set)


def secure_database(conn: psycopg.Connection[Any]) -> None:
    """The database-wide rights (a superuser's to change, not a migration's): the app role may
    connect, and nobody but the database owner may create temporary tables, which a session
    could otherwise use to shadow a table by name. PostgreSQL does not copy these rights
    into a database made from this one as a template."""
    dbname = sql.Identifier(conn.info.dbname)
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO lorestore_app").format(dbname))
    conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(dbname))


class PostgresLedger:
    """The database's migration record for the shared runner (``storage/migrations.py``),
    written as the owner role. Its lock is the session advisory lock ``init_database``
    holds throughout, so concurrent inits apply each migration once."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def applied(self) -> dict[int, tuple[str, str]]:
        try:
            return _applied(self._conn)
        except psycopg.errors.UndefinedTable:  # a new database: no schema_migrations yet
            return {}

    def locked(self) -> AbstractContextManager[Any]:
        return self._conn.transaction()

    def prepare(self) -> None:
        self._conn.execute(_MIGRATIONS_TABLE)
        self._conn.execute("GRANT SELECT ON schema_migrations TO lorestore_app")

    def apply(self, migration: migrations.Migration) -> None:
        self._conn.execute(migration.sql.encode("utf-8"))
        self._conn.execute(
            "INSERT INTO schema_migrations (number, name, checksum, applied_at) "
            "VALUES (%s, %s, %s, %s)",
            (migration.number, migration.name, migration.checksum, datetime.now(UTC)),
        )


def _migrate(conn: psycopg.Connection[Any]) -> list[str]:
    conn.execute("SET ROLE lorestore_owner")
    try:
        applied = migrations.migrate(PostgresLedger(conn), PACKAGE)
    finally:
        conn.execute("RESET ROLE")
    return [m.name for m in applied]


def _as_url(params: dict[str, Any]) -> str:
    """A postgresql:// URL for the given connection parameters."""
    from urllib.parse import quote

    user = quote(str(params.pop("user")), safe="")
    password = params.pop("password", None)
    host = params.pop("host", "localhost")
    port = params.pop("port", None)
    dbname = quote(str(params.pop("dbname", "")), safe="")
    auth = user + (f":{quote(str(password), safe='')}" if password else "")
    netloc = f"{auth}@{host}" + (f":{port}" if port else "")
    extra = make_conninfo(**params) if params else ""
    query = "?" + "&".join(part for part in extra.split(" ") if part) if extra else ""
    return f"postgresql://{netloc}/{dbname}{query}"


def new_password() -> str:
    return secrets.token_urlsafe(24)
