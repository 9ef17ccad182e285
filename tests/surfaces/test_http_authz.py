"""Authorisation holes a security review found, each closed and checked through the REST
handler beside the call that is allowed: a confined token cannot mint a broader one or act
for the account as a whole, a confined token cannot set the owner-wide default policy, an
org admin cannot remove an owner, a member cannot hard-delete team lessons, and a policy
change on an org scope is audited in the org's chain."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import approve_pending
from tests.serving import Api, error_of, make_api

from lorestore.auth.actor import local_actor
from lorestore.models import TokenCreateParams

TEAM = "repo::acme/app"


@pytest.fixture
def api(home: Path) -> Iterator[Api]:
    yield from make_api(home)


def token_of(api: Api, user: str, **kw: object) -> str:
    """An admin token of ``user`` (a person of the same store)."""
    params = TokenCreateParams.model_validate({"name": user, "permission": "admin", **kw})
    return api.service.token_create(local_actor(principal=f"user:{user}"), params).token


def acme(api: Api) -> dict[str, str]:
    """Org acme bound to repo::acme/*: alice and dan own it, bob administers, mia is a
    member. Returns each person's admin token."""
    tokens = {name: token_of(api, name) for name in ("alice", "dan", "bob", "mia")}
    api.ok("org_create", {"slug": "acme"}, token=tokens["alice"])
    api.ok("org_bind", {"org": "acme", "pattern": "repo::acme/*"}, token=tokens["alice"])
    approve_pending(api.service.store)  # the others hold tokens already: an operator approves
    for user, role in (("dan", "owner"), ("bob", "admin"), ("mia", "member")):
        code = api.ok(
            "org_invite", {"org": "acme", "user": user, "role": role}, token=tokens["alice"]
        )
        api.ok("org_accept", {"code": code["code"]}, token=tokens[user])
    return tokens


def test_an_org_confined_token_mints_only_tokens_as_confined(api: Api) -> None:
    tokens = acme(api)
    confined = api.ok(
        "token_create",
        {"name": "acme-only", "permission": "admin", "orgs": ["acme"]},
        token=tokens["alice"],
    )["token"]
    broader = api.post("token_create", {"name": "escape", "orgs": ["acme", "other"]}, confined)
    assert error_of(broader, 403)["code"] == "forbidden"
    inherited = api.ok("token_create", {"name": "child", "permission": "write"}, token=confined)
    assert inherited["info"]["orgs"] == ["acme"]  # no orgs named: the creator's confinement
    personal = api.post("memory_read", {"scope": "global", "key": "k"}, inherited["token"])
    assert error_of(personal, 403)["code"] == "forbidden"
    for name, body in (
        ("token_list", None),
        ("token_revoke", {"id": inherited["info"]["id"]}),
        ("org_create", {"slug": "other"}),
    ):
        assert error_of(api.post(name, body, confined), 403)["code"] == "forbidden", name
    # The controls: the unconfined token may do each of them.
    assert len(api.ok("token_list", token=tokens["alice"])["tokens"]) >= 2
    api.ok("token_revoke", {"id": inherited["info"]["id"]}, token=tokens["alice"])
    api.ok("org_create", {"slug": "other"}, token=tokens["alice"])
    refused = api.post("org_bind", {"org": "other", "pattern": "repo::other/*"}, confined)
    assert error_of(refused, 403)["code"] == "forbidden"
    api.ok("org_bind", {"org": "acme", "pattern": "repo::acme-web/*"}, token=confined)


def test_a_confined_token_cannot_set_the_owner_wide_default_policy(api: Api) -> None:
    tokens = acme(api)
    alice = tokens["alice"]
    scoped = api.ok(
        "token_create",
        {"name": "s", "permission": "review", "scopes": ["repo::alice/*"]},
        token=alice,
    )["token"]
    org_only = api.ok(
        "token_create", {"name": "o", "permission": "review", "orgs": ["acme"]}, token=alice
    )["token"]
    for token in (scoped, org_only):
        refused = api.post("memory_policy", {"scope": "*", "require_review": True}, token)
        assert error_of(refused, 403)["code"] == "forbidden"
    inside = api.ok(
        "memory_policy", {"scope": "repo::alice/notes", "require_review": True}, token=scoped
    )
    assert inside["require_review"] is True  # the control: within its scopes it may
    default = api.ok("memory_policy", {"scope": "repo::alice/other"}, token=alice)
    assert default["require_review"] is False and default["inherited_from"] is None
    api.ok("memory_policy", {"scope": "*", "require_review": True}, token=alice)  # unconfined


def test_an_org_admin_cannot_remove_an_owner(api: Api) -> None:
    tokens = acme(api)
    refused = api.post("org_remove", {"org": "acme", "user": "alice"}, tokens["bob"])
    assert error_of(refused, 403)["code"] == "forbidden"
    members = api.ok("org_members", {"org": "acme"}, token=tokens["alice"])["members"]
    assert {m["member"] for m in members} >= {"user:alice", "user:dan"}
    api.ok("org_remove", {"org": "acme", "user": "mia"}, token=tokens["bob"])  # a member: fine
    api.ok("org_remove", {"org": "acme", "user": "dan"}, token=tokens["alice"])  # owner by owner


def test_a_member_cannot_hard_delete_team_lessons(api: Api) -> None:
    tokens = acme(api)
    api.ok(
        "memory_write", {"scope": TEAM, "key": "x", "value": "team knowledge"}, token=tokens["mia"]
    )
    erase = {"scope": TEAM, "key": "x", "reason": "gone"}
    refused = api.post("memory_delete", erase, tokens["mia"])
    assert (
        error_of(refused, 403)["code"] == "forbidden"
        and "archive" in refused.json()["error"]["hint"]
    )
    api.ok("memory_archive", {"scope": TEAM, "key": "x"}, token=tokens["mia"])  # members may
    assert api.ok("memory_delete", erase, token=tokens["bob"])["deleted"] is True  # an admin


def test_a_policy_on_an_org_scope_is_audited_in_the_org_chain(api: Api) -> None:
    tokens = acme(api)
    api.ok("memory_policy", {"scope": TEAM, "revision_policy": "files"}, token=tokens["alice"])
    events = api.ok("memory_audit", {"scope": None}, token=tokens["mia"])["events"]
    policy = [e for e in events if e["action"] == "policy"]
    assert len(policy) == 1 and policy[0]["owner"] == "org:acme"
    assert policy[0]["actor"] == "user:alice"
    assert api.ok("audit_verify", token=tokens["mia"])["ok"] is True


def test_a_failing_store_is_reported_as_such_not_as_a_rate_limit(api: Api, home: Path) -> None:
    """The per-request budget is counted in the store; when the store itself fails, the
    client is told that (storage_error), not to retry every second (rate_limited)."""
    api.ok("memory_write", {"scope": "global", "key": "k", "value": "v"})  # the control
    for suffix in ("", "-wal", "-shm"):
        (home / f"lorestore.db{suffix}").unlink(missing_ok=True)
    failed = api.post("memory_write", {"scope": "global", "key": "k2", "value": "w"})
    assert error_of(failed, 500)["code"] == "storage_error"
    assert "restart" in failed.json()["error"]["hint"]
