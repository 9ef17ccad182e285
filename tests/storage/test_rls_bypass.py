"""A PostgreSQL role that bypasses row-level security (a superuser, or BYPASSRLS) would serve
every tenant's lessons to everyone: `serve`, the CLI's operations and `lorestore mcp` refuse
it with the fix; `db cap`, which needs such a role, says so and goes on. The app role (the
positive control) is used as before."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.migrating import pg_url
from tests.pg import Template
from tests.serving import EXE, base_env

pytestmark = pytest.mark.slow


def _run(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = base_env(home, LORESTORE_DATABASE_URL=url, LORESTORE_USER="alice")
    return subprocess.run(
        [EXE, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_role_that_bypasses_rls_is_refused_where_it_serves(
    tmp_path: Path, pg_template: Template, pg_database: str
) -> None:
    admin = pg_url(pg_template.admin_url(pg_database))
    app = pg_url(pg_template.app_url(pg_database))
    for args in (("write", "global", "k", "v", "--json"), ("mcp",), ("serve", "--port", "0")):
        refused = _run(tmp_path, admin, *args)
        assert refused.returncode == 1, (args, refused.stderr)
        assert "bypasses row-level security" in refused.stderr, args
        assert "lorestore_app" in refused.stderr, args  # the fix: the app role's URL
    written = _run(tmp_path, app, "write", "global", "k", "v", "--json")
    assert written.returncode == 0, written.stderr  # the control: the app role works
    capped = _run(tmp_path, admin, "db", "cap", "user:alice", "5", "--database-url", admin)
    assert capped.returncode == 0, capped.stderr
    assert "warning:" in capped.stderr and "bypasses row-level security" in capped.stderr
