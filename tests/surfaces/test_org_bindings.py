"""Scope bindings through the REST handler on both backends: two orgs' bindings never share a
scope, patterns compared as patterns in both directions (a branch pattern under another org's
repository wildcard, a wildcard over another org's repository), and on PostgreSQL the same
rules hold for the app role's own INSERT. Each refusal beside its control."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from tests.conftest import Cli, app_connection, table_rows
from tests.pg import Template
from tests.serving import Api, api_on_both_backends, error_of

from lorestore.auth.actor import local_actor
from lorestore.models import TokenCreateParams
from lorestore.storage.postgres import PostgresStore

api = api_on_both_backends()


def token_of(api: Api, user: str) -> str:
    params = TokenCreateParams.model_validate({"name": user, "permission": "admin"})
    return api.service.token_create(local_actor(principal=f"user:{user}"), params).token


def orgs(api: Api) -> dict[str, str]:
    """alice's org acme bound to repo::acme/* (approved at once: nobody else was there yet),
    eve's org evil with no binding yet."""
    tokens = {"alice": token_of(api, "alice")}
    api.ok("org_create", {"slug": "acme"}, token=tokens["alice"])
    assert api.ok("org_bind", {"org": "acme", "pattern": "repo::acme/*"}, token=tokens["alice"])[
        "bound"
    ]
    tokens["eve"] = token_of(api, "eve")
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
        with store.transaction(write=False, actor="user:eve") as tx:  # a request, unapproved
            assert [(b.org, b.pattern) for b in tx.pending_bindings()] == [
                ("org:evil", "repo::evil/*")
            ]
    finally:
        store.close()


def _operator_url(api: Api, home: Path, request: pytest.FixtureRequest) -> str:
    """What `lorestore db approve-binding --database-url` takes: the SQLite file, or a
    superuser's URL of the PostgreSQL database."""
    if request.node.callspec.params["api"] == "sqlite":
        return f"sqlite:///{home / 'lorestore.db'}"
    from tests.migrating import pg_url

    template: Template = request.getfixturevalue("pg_template")
    return pg_url(template.admin_url(request.getfixturevalue("pg_database")))


def test_a_binding_of_a_name_nobody_holds_waits_for_an_operator(
    api: Api, cli: Cli, home: Path, request: pytest.FixtureRequest
) -> None:
    tokens = {name: token_of(api, name) for name in ("alice", "eve")}
    api.ok(
        "memory_write",
        {"scope": "repo::victimco/app", "key": "k", "value": "alice's"},
        token=tokens["alice"],
    )
    api.ok("org_create", {"slug": "squat"}, token=tokens["eve"])
    # The same answer whether others keep lessons at the pattern or not: no oracle.
    held = api.ok("org_bind", {"org": "squat", "pattern": "repo::victimco/*"}, token=tokens["eve"])
    empty = api.ok("org_bind", {"org": "squat", "pattern": "repo::nobodyco/*"}, token=tokens["eve"])
    assert {**held, "pattern": "-"} == {**empty, "pattern": "-"}
    assert (held["bound"], held["pending"]) == (False, True) and "approve-binding" in held["hint"]
    # Pending, it routes nothing: alice keeps writing her own lessons there.
    written = api.ok(
        "memory_write",
        {"scope": "repo::victimco/web", "key": "k", "value": "still mine"},
        token=tokens["alice"],
    )
    assert written["lesson"]["owner"] == {"user": "alice"}
    url = _operator_url(api, home, request)
    pending = cli.ok("db", "pending-bindings", "--database-url", url)["pending"]
    assert {p["pattern"] for p in pending} == {"repo::victimco/*", "repo::nobodyco/*"}
    # The operator sees what the squatter could not: others keep lessons there.
    refused = cli(
        "db", "approve-binding", "squat", "repo::victimco/*", "--database-url", url, "--json"
    )
    assert refused.exit_code == 1 and refused.error()["code"] == "conflict"
    rejected = cli.ok(
        "db", "approve-binding", "squat", "repo::victimco/*", "--reject", "--database-url", url
    )
    assert rejected["approved"] is False
    # The controls: an approved binding routes; the rejected one is gone for the real owners.
    assert cli.ok("db", "approve-binding", "squat", "repo::nobodyco/*", "--database-url", url)[
        "approved"
    ]
    outside = api.post(
        "memory_write", {"scope": "repo::nobodyco/x", "key": "k", "value": "v"}, tokens["alice"]
    )
    assert error_of(outside, 403)["code"] == "forbidden"
    api.ok("org_create", {"slug": "victimco"}, token=tokens["alice"])
    mine = api.ok(
        "org_bind", {"org": "victimco", "pattern": "repo::victimco/*"}, token=tokens["alice"]
    )
    assert mine["pending"] is True  # alice's own org waits too: eve holds a token here


def test_a_single_team_binds_without_an_operator(api: Api) -> None:
    tokens = {"alice": token_of(api, "alice")}
    api.ok("org_create", {"slug": "acme"}, token=tokens["alice"])
    bound = api.ok("org_bind", {"org": "acme", "pattern": "repo::acme/*"}, token=tokens["alice"])
    assert (bound["bound"], bound["pending"]) == (True, False)
    tokens["eve"] = token_of(api, "eve")  # someone outside the org now holds a token
    within = api.ok(
        "org_bind", {"org": "acme", "pattern": "branch::acme/app::main"}, token=tokens["alice"]
    )
    assert within["bound"] is True  # within the org's own binding: no operator needed
    outside = api.ok(
        "org_bind", {"org": "acme", "pattern": "project::payments"}, token=tokens["alice"]
    )
    assert outside["pending"] is True


def test_the_app_role_cannot_approve_a_binding_itself(
    pg_template: Template, pg_database: str
) -> None:
    from lorestore.models import OrgCreateParams, WriteParams
    from lorestore.service import LessonService

    store = PostgresStore(pg_template.app_url(pg_database), max_size=2)
    try:
        service = LessonService(store)
        alice, eve = local_actor(principal="user:alice"), local_actor(principal="user:eve")
        service.memory_write(alice, WriteParams(scope="repo::victimco/app", key="k", value="v"))
        service.org_create(eve, OrgCreateParams(slug="squat"))
        insert = (
            "INSERT INTO scope_bindings (org, pattern, created_by, created_at, approved_at) "
            "VALUES ('org:squat', %s, 'user:eve', now(), %s)"
        )
        with app_connection(store, "user:eve") as conn:
            with pytest.raises(psycopg.Error, match="needs an operator's approval"):
                conn.execute(insert, ["repo::victimco/*", "2026-01-01"])
            with pytest.raises(psycopg.Error, match="needs an operator's approval"):
                conn.execute(
                    "SELECT lorestore_scopes_held_by_others('org:squat', 'repo::victimco/*')"
                )
        with (
            app_connection(store, "user:eve") as conn,
            pytest.raises(psycopg.errors.UndefinedFunction),
        ):
            conn.execute("SELECT lorestore_scopes_held_by_others('org:squat', ARRAY['%'])")
        with app_connection(store, "user:eve") as conn:
            conn.execute(insert, ["repo::victimco/*", None])  # the control: a request
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("UPDATE scope_bindings SET approved_at = now()")
        with store.transaction(write=False, actor="user:alice") as tx:
            assert [b.pattern for b in tx.bindings_for("user:alice")] == []  # routes nothing
            assert [b.pattern for b in tx.pending_bindings()] == ["repo::victimco/*"]
    finally:
        store.close()


def test_approving_needs_the_operators_rights(
    cli: Cli, pg_template: Template, pg_database: str
) -> None:
    from tests.migrating import pg_url

    app = pg_url(pg_template.app_url(pg_database))
    refused = cli("db", "approve-binding", "acme", "repo::acme/*", "--database-url", app, "--json")
    assert refused.exit_code == 1 and refused.error()["code"] == "config_error"
    admin = pg_url(pg_template.admin_url(pg_database))  # the control: a superuser may ask
    assert cli.ok("db", "pending-bindings", "--database-url", admin)["pending"] == []
