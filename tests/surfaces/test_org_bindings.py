"""Scope bindings through the REST handler on both backends: two orgs' bindings never share a
scope, patterns compared as patterns in both directions (a branch pattern under another org's
repository wildcard, a wildcard over another org's repository), and on PostgreSQL the same
rules hold for the app role's own INSERT. Each refusal beside its control."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.conftest import app_connection, table_rows
from tests.pg import Template
from tests.serving import Api, backend_api, error_of

from lorestore.auth.actor import local_actor
from lorestore.models import TokenCreateParams
from lorestore.storage.postgres import PostgresStore


@pytest.fixture(params=["sqlite", "postgres"])
def api(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Api]:
    yield from backend_api(request, home, monkeypatch)


def token_of(api: Api, user: str) -> str:
    params = TokenCreateParams.model_validate({"name": user, "permission": "admin"})
    return api.service.token_create(local_actor(principal=f"user:{user}"), params).token


def orgs(api: Api) -> dict[str, str]:
    """alice's org acme bound to repo::acme/*, eve's org evil with no binding yet."""
    tokens = {name: token_of(api, name) for name in ("alice", "eve")}
    api.ok("org_create", {"slug": "acme"}, token=tokens["alice"])
    api.ok("org_bind", {"org": "acme", "pattern": "repo::acme/*"}, token=tokens["alice"])
    api.ok("org_create", {"slug": "evil"}, token=tokens["eve"])
    return tokens


@pytest.mark.parametrize(
    "pattern", ["branch::acme/*::main", "branch::acme/app*::release", "repo::acme/app"]
)
def test_no_binding_takes_scopes_under_another_orgs_wildcard(api: Api, pattern: str) -> None:
    tokens = orgs(api)
    before = table_rows(api.service.store, "scope_bindings")
    refused = api.post("org_bind", {"org": "evil", "pattern": pattern}, tokens["eve"])
    body = error_of(refused, 409)
    assert body["code"] == "conflict" and "repo::acme/*" in body["message"]
    assert table_rows(api.service.store, "scope_bindings") == before
    # The controls: acme's own member still owns acme's main branches; eve binds her own.
    written = api.ok(
        "memory_write",
        {"scope": "branch::acme/app::main", "key": "k", "value": "acme's"},
        token=tokens["alice"],
    )
    assert written["lesson"]["owner"] == {"org": "acme"}
    api.ok("org_bind", {"org": "evil", "pattern": "branch::evil/*::main"}, token=tokens["eve"])
    api.ok("org_bind", {"org": "acme", "pattern": "branch::acme/*::main"}, token=tokens["alice"])


def test_a_wildcard_may_not_cover_another_orgs_binding(api: Api) -> None:
    tokens = orgs(api)
    api.ok("org_bind", {"org": "evil", "pattern": "repo::evil/app"}, token=tokens["eve"])
    refused = api.post("org_bind", {"org": "acme", "pattern": "repo::*l/app"}, tokens["alice"])
    assert error_of(refused, 400)["code"] == "invalid_scope"  # a wildcard owner: no claim
    refused = api.post(
        "org_bind", {"org": "acme", "pattern": "branch::evil/a*::*"}, tokens["alice"]
    )
    assert error_of(refused, 409)["code"] == "conflict"  # the broader pattern, bound second
    api.ok("org_bind", {"org": "acme", "pattern": "repo::acme-web/*"}, token=tokens["alice"])


def test_the_app_role_cannot_insert_a_binding_past_the_rules(
    pg_template: Template, pg_database: str
) -> None:
    from lorestore.models import OrgBindParams, OrgCreateParams
    from lorestore.service import LessonService

    store = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    try:
        service = LessonService(store)
        alice, eve = local_actor(principal="user:alice"), local_actor(principal="user:eve")
        service.org_create(alice, OrgCreateParams(slug="acme"))
        service.org_bind(alice, OrgBindParams(org="acme", pattern="repo::acme/*"))
        service.org_create(eve, OrgCreateParams(slug="evil"))
        insert = (
            "INSERT INTO scope_bindings (org, pattern, created_by, created_at) "
            "VALUES ('org:evil', %s, 'user:eve', now())"
        )
        with app_connection(store, "user:eve") as conn:
            for pattern in ("branch::acme/*::main", "branch::acme/app*::release", "repo::acme/x"):
                with pytest.raises(psycopg.Error, match="shares scopes with repo::acme/\\*"):
                    conn.execute(insert, [pattern])
            for pattern in ("global", "repo::*/*", "project::*", "*"):
                with pytest.raises(psycopg.Error, match="names no owner or project"):
                    conn.execute(insert, [pattern])
            conn.execute(insert, ["repo::evil/*"])  # the control: its own name
        assert [b.pattern for b in _bindings(store, "org:evil")] == ["repo::evil/*"]
    finally:
        store.close()


def _bindings(store: PostgresStore, org: str) -> list:  # type: ignore[type-arg]
    with store.transaction(write=False, actor="user:eve") as tx:
        return [b for b in tx.bindings_for("user:eve") if b.org == org]
