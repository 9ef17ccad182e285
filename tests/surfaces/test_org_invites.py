"""Invites through the REST handler on both backends: joining an org takes a person's token
(an agent's, or one confined to some scopes, is refused); an admin lists and revokes invites;
a removed or demoted admin's pending invites are void; and on PostgreSQL the database's
clock, not the caller's, decides whether an invite has expired. Each refusal has its control."""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import pytest
from tests.conftest import app_connection
from tests.migrating import pg_url
from tests.pg import Template
from tests.serving import Api, api_on_both_backends, error_of, make_api

from lorestore.auth.actor import local_actor
from lorestore.models import TokenCreateParams
from lorestore.storage.postgres import PostgresStore

api = api_on_both_backends()


def token_of(api: Api, user: str, permission: str = "admin", **kw: object) -> str:
    params = TokenCreateParams.model_validate(
        {"name": f"{user}-{permission}", "permission": permission, **kw}
    )
    return api.service.token_create(local_actor(principal=f"user:{user}"), params).token


def org(api: Api) -> dict[str, str]:
    """Org acme owned by alice with bob as admin; each person's admin token."""
    tokens = {name: token_of(api, name) for name in ("alice", "bob", "carol", "dan")}
    api.ok("org_create", {"slug": "acme"}, token=tokens["alice"])
    code = api.ok(
        "org_invite", {"org": "acme", "user": "bob", "role": "admin"}, token=tokens["alice"]
    )
    api.ok("org_accept", {"code": code["code"]}, token=tokens["bob"])
    return tokens


def test_an_agents_token_or_a_confined_one_cannot_accept_an_invite(api: Api) -> None:
    tokens = org(api)
    code = api.ok("org_invite", {"org": "acme", "user": "carol"}, token=tokens["alice"])["code"]
    agent = token_of(api, "carol", "write")
    confined = token_of(api, "carol", "admin", scopes=["repo::carol/*"])
    for token in (agent, confined):
        refused = error_of(api.post("org_accept", {"code": code}, token), 403)
        assert refused["code"] == "forbidden"
        assert "hint" in refused
    members = api.ok("org_members", {"org": "acme"}, token=tokens["alice"])["members"]
    assert "user:carol" not in [m["member"] for m in members]  # nothing changed
    # The control: carol's own person's token (review or admin) accepts the same code.
    person = token_of(api, "carol", "review")
    assert api.ok("org_accept", {"code": code}, token=person) == {
        "org": "org:acme",
        "role": "member",
    }


def test_an_admin_lists_and_revokes_invites(api: Api) -> None:
    tokens = org(api)
    kept = api.ok("org_invite", {"org": "acme", "user": "dan"}, token=tokens["alice"])
    taken = api.ok("org_invite", {"org": "acme", "user": "carol"}, token=tokens["alice"])
    listed = api.ok("org_invites", {"org": "acme"}, token=tokens["bob"])["invites"]
    states = {i["invitee"]: i["state"] for i in listed}
    assert states == {"user:bob": "accepted", "user:dan": "pending", "user:carol": "pending"}
    revoked = api.ok("org_invite_revoke", {"org": "acme", "id": taken["id"]}, token=tokens["bob"])
    assert (revoked["state"], revoked["revoked_by"]) == ("revoked", "user:bob")
    refused = error_of(api.post("org_accept", {"code": taken["code"]}, tokens["carol"]), 404)
    assert refused["code"] == "not_found"
    again = api.post("org_invite_revoke", {"org": "acme", "id": taken["id"]}, tokens["bob"])
    assert error_of(again, 404)["code"] == "not_found"  # revoked once; nothing left to take
    outsider = api.post("org_invites", {"org": "acme"}, tokens["carol"])
    assert error_of(outsider, 403)["code"] == "forbidden"
    # The control: the invite not revoked still works.
    assert api.ok("org_accept", {"code": kept["code"]}, token=tokens["dan"])["org"] == "org:acme"


def test_a_removed_admins_pending_invites_are_void(api: Api) -> None:
    tokens = org(api)
    by_bob = api.ok("org_invite", {"org": "acme", "user": "carol"}, token=tokens["bob"])
    by_alice = api.ok("org_invite", {"org": "acme", "user": "dan"}, token=tokens["alice"])
    api.ok("org_remove", {"org": "acme", "user": "bob"}, token=tokens["alice"])
    listed = api.ok("org_invites", {"org": "acme"}, token=tokens["alice"])["invites"]
    assert {i["invitee"]: i["state"] for i in listed}["user:carol"] == "void"
    refused = api.post("org_accept", {"code": by_bob["code"]}, tokens["carol"])
    assert error_of(refused, 404)["code"] == "not_found"
    # The control: the invite of an admin still in place works.
    assert (
        api.ok("org_accept", {"code": by_alice["code"]}, token=tokens["dan"])["org"] == "org:acme"
    )


def test_accepting_uses_the_databases_clock(
    pg_template: Template, pg_database: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the app role, the caller can no longer pass the time an expiry is compared with; an
    invite past its expiry by the database's clock is refused, one within it accepted."""
    monkeypatch.setenv("LORESTORE_DATABASE_URL", pg_url(pg_template.app_url(pg_database)))
    for api in make_api(home):
        tokens = org(api)
        late = api.ok("org_invite", {"org": "acme", "user": "carol"}, token=tokens["alice"])
        live = api.ok("org_invite", {"org": "acme", "user": "dan"}, token=tokens["alice"])
        with psycopg.connect(pg_template.admin_url(pg_database), autocommit=True) as admin:
            admin.execute(
                "UPDATE invites SET expires_at = now() - interval '1 minute' WHERE id = %s",
                [late["id"]],
            )
        store = api.service.store
        assert isinstance(store, PostgresStore)
        digest = hashlib.sha256(late["code"].encode()).hexdigest()
        with (
            app_connection(store, "user:carol") as conn,
            pytest.raises(psycopg.errors.UndefinedFunction),
        ):
            conn.execute("SELECT lorestore_accept_invite(%s, '2000-01-01'::timestamptz)", [digest])
        with app_connection(store, "user:carol") as conn:
            assert conn.execute("SELECT lorestore_accept_invite(%s)", [digest]).fetchone() == (
                None,
            )
        refused = api.post("org_accept", {"code": late["code"]}, tokens["carol"])
        assert error_of(refused, 404)["code"] == "not_found"
        assert (
            api.ok("org_accept", {"code": live["code"]}, token=tokens["dan"])["org"] == "org:acme"
        )
