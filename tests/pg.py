"""PostgreSQL for the test suite: the server named by LORESTORE_TEST_DATABASE_URL, else the
local one on 127.0.0.1:5432, else a throwaway cluster started with initdb/pg_ctl.

Under CI=true a PostgreSQL test that cannot connect fails; elsewhere it is skipped with the
reason. Each test gets its own database copied from a template that `init_database` built,
and talks to it as the application role, so row-level security is really exercised.
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

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from lorestore.storage.postgres.setup import init_database

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


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
    """A database with lorestore's roles and migrations, copied for each test."""

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
