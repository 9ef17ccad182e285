"""PostgreSQL for the test suite: the server named by LORESTORE_TEST_DATABASE_URL, else the
local one on 127.0.0.1:5432, else a throwaway cluster started with initdb/pg_ctl.

Under CI=true a PostgreSQL test that cannot connect fails; elsewhere it is skipped with the
reason. A `Template` is built once by `init_database`. Tests borrow a database of the `Pool`,
copies of the template emptied between tests by one TRUNCATE; a test that changes a schema,
a role or the migrations gets a copy of its own (`Template.copy`). Tests talk to their
database as the application role, so row-level security is really exercised.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from lorestore.storage.postgres.setup import init_database, secure_database

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
# Every tenant table: forced row-level security on each (test_postgres_rls), and every table
# the migrations leave empty, which a pooled database is emptied of (test_pg_pool).
TENANT_TABLES = frozenset(
    {
        "principals",
        "memberships",
        "lessons",
        "lesson_versions",
        "lesson_sessions",
        "lesson_vectors",
        "tombstones",
        "audit_log",
        "audit_heads",
        "recall_log",
        "scope_policies",
        "owner_stats",
        "scope_tallies",
        "audit_day_counts",
        "recall_day_counts",
        "tokens",
        "invites",
        "scope_bindings",
        "token_usage",
        "foreign_records",
        "project_repos",
        "webhooks",
        "webhook_deliveries",
        "webhook_counts",
    }
)


def _reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _throwaway_cluster() -> str | None:
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    initdb = shutil.which("initdb") or (binaries[-1] if binaries else None)
    if initdb is None:
        return None
    bindir = Path(initdb).parent
    data = Path(tempfile.mkdtemp(prefix="lorestore-pg-"))
    port = _free_port()
    user = "postgres"
    run = {"check": True, "capture_output": True}
    subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", user, "-A", "trust"], **run)  # type: ignore[call-overload]
    subprocess.run(  # type: ignore[call-overload]
        [
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(data / "log"),
            "-w",
            "-o",
            f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
            "start",
        ],
        **run,
    )

    def stop() -> None:
        subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(data, ignore_errors=True)

    atexit.register(stop)
    return f"postgresql://{user}@127.0.0.1:{port}/postgres"


_ADMIN_URL: str | None = None


def admin_url() -> str:
    """A superuser URL, or a failure (CI) / skip (elsewhere) saying why there is none."""
    global _ADMIN_URL
    if _ADMIN_URL is None:
        url = os.environ.get("LORESTORE_TEST_DATABASE_URL") or DEFAULT_URL
        if not _reachable(url) and not os.environ.get("LORESTORE_TEST_DATABASE_URL"):
            url = _throwaway_cluster() or url
        if not _reachable(url):
            message = f"PostgreSQL is not reachable at {url}"
            if os.environ.get("CI") == "true":
                pytest.fail(message + " (CI=true: PostgreSQL tests never skip)")
            pytest.skip(message)
        _ADMIN_URL = url
    return _ADMIN_URL


def url_for(url: str, dbname: str, **changes: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    if "user" in changes:
        params.pop("password", None)  # the admin's password is not the app role's
    params.update(changes)
    return make_conninfo(**params)


class Template:
    """A database with lorestore's roles and migrations, copied for the pool and for each test
    that needs a database of its own."""

    def __init__(self) -> None:
        self.admin = admin_url()
        self.name = f"lorestore_tpl_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        report = init_database(url_for(self.admin, self.name))
        self.app_user = conninfo_to_dict(report.app_url)["user"]

    def copy(self) -> str:
        name = f"lorestore_t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                    sql.Identifier(name), sql.Identifier(self.name)
                )
            )
        with psycopg.connect(self.admin_url(name), autocommit=True) as conn:
            secure_database(conn)  # database-wide rights are not copied from a template
        return name

    def drop(self, name: str) -> None:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def app_url(self, name: str) -> str:
        return url_for(self.admin, name, user=str(self.app_user))

    def admin_url(self, name: str) -> str:
        return url_for(self.admin, name)


# One statement over the catalog: the schema of a database (tables, columns, constraints,
# indexes, triggers and whether they fire, policies, functions, grants, database settings),
# the roles lorestore made, and the rows of the tables the migrations fill. Two databases with
# the same text are interchangeable for a test once their other tables are emptied.
_FINGERPRINT = """
SELECT md5(concat_ws(E'\\n',
  (SELECT string_agg(concat_ws(' ', c.relname, c.relkind, c.relrowsecurity,
            c.relforcerowsecurity, c.relowner::regrole, c.relacl::text), E'\\n'
            ORDER BY c.relname)
     FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace),
  (SELECT string_agg(concat_ws(' ', a.attrelid::regclass, a.attname, a.atttypid::regtype,
            a.attnotnull, a.attisdropped, pg_get_expr(d.adbin, d.adrelid)), E'\\n'
            ORDER BY a.attrelid::regclass::text, a.attnum)
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0),
  (SELECT string_agg(concat_ws(' ', conrelid::regclass, conname, pg_get_constraintdef(oid)),
            E'\\n' ORDER BY conrelid::regclass::text, conname)
     FROM pg_constraint WHERE connamespace = 'public'::regnamespace),
  (SELECT string_agg(pg_get_indexdef(indexrelid), E'\\n' ORDER BY indexrelid::regclass::text)
     FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
     WHERE c.relnamespace = 'public'::regnamespace),
  (SELECT string_agg(concat_ws(' ', t.tgrelid::regclass, t.tgname, t.tgenabled,
            pg_get_triggerdef(t.oid)), E'\\n' ORDER BY t.tgrelid::regclass::text, t.tgname)
     FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal),
  (SELECT string_agg(concat_ws(' ', polrelid::regclass, polname, polcmd, polpermissive,
            polroles::text, pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid)),
            E'\\n' ORDER BY polrelid::regclass::text, polname)
     FROM pg_policy),
  (SELECT string_agg(concat_ws(' ', p.oid::regprocedure, p.proowner::regrole, p.prosecdef,
            p.proacl::text, p.proconfig::text, md5(p.prosrc)), E'\\n'
            ORDER BY p.oid::regprocedure::text)
     FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace),
  (SELECT string_agg(concat_ws(' ', nspname, nspowner::regrole, nspacl::text), E'\\n'
            ORDER BY nspname)
     FROM pg_namespace WHERE nspname !~ '^pg_' AND nspname <> 'information_schema'),
  (SELECT concat_ws(' ', datacl::text, datallowconn, datconnlimit)
     FROM pg_database WHERE datname = current_database()),
  (SELECT string_agg(setconfig::text, E'\\n' ORDER BY setrole)
     FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
     WHERE d.datname = current_database()),
  (SELECT string_agg(concat_ws(' ', rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb,
            rolcanlogin, rolbypassrls, rolconnlimit, rolvaliduntil, rolconfig::text), E'\\n'
            ORDER BY rolname)
     FROM pg_roles WHERE rolname ^@ 'lorestore'),
  (SELECT string_agg(concat_ws(' ', roleid::regrole, member::regrole), E'\\n'
            ORDER BY roleid::regrole::text, member::regrole::text)
     FROM pg_auth_members WHERE roleid::regrole::text ^@ 'lorestore'),
  {seeded}
))
"""

# The tables whose identity (or serial) sequence has handed out a number since it was made or
# restarted: a rolled-back insert leaves no row but uses one up.
_IDENTITIES_USED = """
SELECT t.relname::text FROM pg_sequences s
  JOIN pg_class q ON q.relname = s.sequencename AND q.relnamespace = 'public'::regnamespace
  JOIN pg_depend d ON d.objid = q.oid AND d.classid = 'pg_class'::regclass
   AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
  JOIN pg_class t ON t.oid = d.refobjid
 WHERE s.schemaname = 'public' AND s.last_value IS NOT NULL
"""


# What migration 0033 (count_per_statement) changed, undone: its statement-level counting
# triggers and functions go, the row-level triggers of 0025 and 0030 (and 0030's audit
# function) come back, and 0033 is no longer recorded, so that `init_database` applies it
# again. For a test that takes an older migration back and applies it anew.
_UNDO_0033 = """
DROP TRIGGER lessons_count_added ON lessons;
DROP TRIGGER lessons_count_removed ON lessons;
DROP TRIGGER lessons_count_changed ON lessons;
DROP TRIGGER lessons_tally_added ON lessons;
DROP TRIGGER lessons_tally_removed ON lessons;
DROP TRIGGER lessons_tally_changed ON lessons;
DROP TRIGGER lesson_versions_count_added ON lesson_versions;
DROP TRIGGER lesson_versions_count_removed ON lesson_versions;
DROP TRIGGER lesson_versions_count_changed ON lesson_versions;
DROP TRIGGER foreign_records_count_added ON foreign_records;
DROP TRIGGER foreign_records_count_removed ON foreign_records;
DROP TRIGGER foreign_records_count_changed ON foreign_records;
DROP TRIGGER tombstones_count_added ON tombstones;
DROP TRIGGER tombstones_count_removed ON tombstones;
DROP TRIGGER tombstones_count_changed ON tombstones;
DROP TRIGGER scope_policies_count_added ON scope_policies;
DROP TRIGGER scope_policies_count_removed ON scope_policies;
DROP TRIGGER scope_policies_count_changed ON scope_policies;
DROP TRIGGER audit_log_tally_added ON audit_log;
DROP FUNCTION lorestore_count_lessons(), lorestore_count_stored_rows(),
    lorestore_tally_lessons(), lorestore_tally_audits();
CREATE FUNCTION public.lorestore_tally_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
BEGIN
    INSERT INTO public.audit_day_counts AS c (owner, day, action, events)
    VALUES (NEW.owner, pg_catalog.to_char(NEW.at AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
            NEW.action, 1)
    ON CONFLICT (owner, day, action) DO UPDATE SET events = c.events + 1;
    RETURN NULL;
END $$;
ALTER FUNCTION public.lorestore_tally_audit() OWNER TO lorestore_definer;
REVOKE EXECUTE ON FUNCTION public.lorestore_tally_audit() FROM PUBLIC;
CREATE TRIGGER lessons_count AFTER INSERT OR DELETE OR UPDATE OF owner, status, value, ext
    ON public.lessons FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_lesson();
CREATE TRIGGER lesson_versions_count AFTER INSERT OR DELETE OR UPDATE OF owner, value
    ON public.lesson_versions FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();
CREATE TRIGGER foreign_records_count AFTER INSERT OR DELETE OR UPDATE OF owner, record
    ON public.foreign_records FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();
CREATE TRIGGER tombstones_count AFTER INSERT OR DELETE OR UPDATE OF owner, ext
    ON public.tombstones FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();
CREATE TRIGGER scope_policies_count AFTER INSERT OR DELETE OR UPDATE OF owner, ext
    ON public.scope_policies FOR EACH ROW EXECUTE FUNCTION public.lorestore_count_stored();
CREATE TRIGGER lessons_tally AFTER INSERT OR DELETE OR UPDATE OF owner, scope, status, trust
    ON public.lessons FOR EACH ROW EXECUTE FUNCTION public.lorestore_tally_lesson();
CREATE TRIGGER audit_log_tally AFTER INSERT
    ON public.audit_log FOR EACH ROW EXECUTE FUNCTION public.lorestore_tally_audit();
DELETE FROM schema_migrations WHERE number = 33;
"""


def undo_0033(conn: psycopg.Connection[Any]) -> None:
    """Take migration 0033 back on a database its migrations built (as a superuser)."""
    conn.execute(_UNDO_0033)


class Pool:
    """Databases copied from the template once and lent to one test at a time. When a test
    gives one back, the connections it left are ended, the database is checked to be the one
    it lent (same fingerprint) and emptied by one TRUNCATE ... RESTART IDENTITY CASCADE, as
    the superuser, of the tables the migrations leave empty (those the test wrote to); the rows
    migrations write stay.
    A test that changed the schema fails at teardown and its database is dropped, not lent
    again."""

    def __init__(self, template: Template) -> None:
        self.template = template
        self._free: list[str] = []
        self._all: list[str] = []
        self._fingerprints: dict[str, str] = {}
        with psycopg.connect(template.admin_url(template.name), autocommit=True) as conn:
            tables = [
                str(name)
                for (name,) in conn.execute(
                    "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
                    "AND relkind IN ('r', 'p') ORDER BY relname"
                ).fetchall()
            ]
            seeded = []
            for table in tables:
                query = sql.SQL("SELECT EXISTS (SELECT FROM {})").format(sql.Identifier(table))
                if conn.execute(query).fetchone() == (True,):
                    seeded.append(table)
        self.emptied = tuple(t for t in tables if t not in seeded)
        self.seeded = tuple(seeded)
        holding = [
            sql.SQL("CASE WHEN EXISTS (SELECT FROM {}) THEN {} END").format(
                sql.Identifier(t), sql.Literal(t)
            )
            for t in self.emptied
        ]
        self._used = sql.SQL("SELECT array_remove(ARRAY[{}]::text[], NULL) || ARRAY({})").format(
            sql.SQL(", ").join(holding), sql.SQL(_IDENTITIES_USED)
        )
        seeded_rows = [
            sql.SQL("(SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {} AS t)").format(
                sql.Identifier(t)
            )
            for t in self.seeded
        ]
        self._fingerprint = sql.SQL(_FINGERPRINT).format(
            seeded=sql.SQL(", ").join(seeded_rows) if seeded_rows else sql.SQL("''")
        )

    @property
    def names(self) -> tuple[str, ...]:
        """Every database of the pool, lent or free."""
        return tuple(self._all)

    def acquire(self) -> str:
        """An empty database of the pool, copied from the template if none is free."""
        if self._free:
            return self._free.pop()
        name = self.template.copy()
        self._all.append(name)
        with psycopg.connect(self.template.admin_url(name), autocommit=True) as conn:
            self._fingerprints[name] = self._fingerprint_of(conn)
        return name

    def release(self, name: str) -> None:
        """Empty ``name`` and lend it again; a database whose schema changed is dropped and
        the change reported, since the next test would not get what it asks for."""
        with psycopg.connect(self.template.admin_url(name), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            changed = self._fingerprint_of(conn) != self._fingerprints[name]
            if not changed:
                self._empty(conn)
        if changed:
            self._discard(name)
            raise AssertionError(
                f"the test changed the schema, roles or seeded rows of its pooled database "
                f"{name}; mark it @pytest.mark.fresh_database to get a database of its own"
            )
        self._free.append(name)

    def _empty(self, conn: psycopg.Connection[Any]) -> None:
        """One TRUNCATE of the tables the test left rows in or took an identity from. Each
        table truncated costs tens of milliseconds (new files for it and its indexes), so the
        tables a test never touched are left as they are: empty, identities unused."""
        row = conn.execute(self._used).fetchone()
        assert row is not None
        used = sorted(set(row[0]) & set(self.emptied))
        if used:
            conn.execute("SET lock_timeout = '10s'")
            conn.execute(
                sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
                    sql.SQL(", ").join(sql.Identifier(t) for t in used)
                )
            )

    def _fingerprint_of(self, conn: psycopg.Connection[Any]) -> str:
        row = conn.execute(self._fingerprint).fetchone()
        assert row is not None
        return str(row[0])

    def _discard(self, name: str) -> None:
        self.template.drop(name)
        self._all.remove(name)
        self._fingerprints.pop(name, None)

    def close(self) -> None:
        for name in list(self._all):
            self._discard(name)
        self._free.clear()
