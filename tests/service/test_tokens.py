"""Bearer tokens: shown once, stored hashed, permission levels, scope confinement, expiry and
revocation, each refusal beside the call that succeeds."""

from __future__ import annotations

import pytest
from tests.conftest import Cli, break_table, dump_text

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    Address,
    AuditParams,
    ChangeParams,
    DeleteParams,
    ListParams,
    NoParams,
    PurgeParams,
    ReadParams,
    RejectParams,
    ReviewQueueParams,
    SearchParams,
    TokenCreateParams,
    TokenRevokeParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.service.budget import lease_size

PERSON = local_actor()
APP = "repo::acme/app"
OTHER = "repo::other/app"


def mint(service: LessonService, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("name", "t")
    return service.token_create(PERSON, TokenCreateParams(**kw))


def code_of(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(LorestoreError) as err:
        fn()
    return err.value.code


def test_token_is_shown_once_and_stored_hashed(service: LessonService, store) -> None:  # type: ignore[no-untyped-def]
    created = mint(service, permission="read")
    assert created.token.startswith("lst_") and len(created.token) == 47
    dump = dump_text(store)
    assert created.token not in dump
    assert created.info.prefix in dump  # positive control: the row is there
    listed = service.token_list(PERSON, NoParams()).tokens
    assert [t.id for t in listed] == [created.info.id]
    assert created.token not in listed[0].model_dump_json()


def test_authenticate_and_permission_levels(service: LessonService) -> None:
    service.memory_write(PERSON, WriteParams(scope=APP, key="k", value="v"))
    reader = service.authenticate(mint(service, permission="read").token)
    writer = service.authenticate(mint(service, permission="write").token)
    reviewer = service.authenticate(mint(service, permission="review").token)
    assert service.memory_read(reader, ReadParams(scope=APP, key="k")).lesson.value == "v"
    assert (
        code_of(lambda: service.memory_write(reader, WriteParams(scope=APP, key="k", value="x")))
        == "forbidden"
    )
    assert service.memory_write(writer, WriteParams(scope=APP, key="k", value="x")).result == (
        "updated"
    )
    # An agent's write token can never verify or reject; a reviewer's can.
    assert code_of(lambda: service.memory_verify(writer, VerifyParams(scope=APP, key="k"))) == (
        "forbidden"
    )
    assert (
        code_of(
            lambda: service.memory_reject(writer, RejectParams(scope=APP, key="k", reason="no"))
        )
        == "forbidden"
    )
    verified = service.memory_verify(reviewer, VerifyParams(scope=APP, key="k"))
    assert verified.lesson.trust == "verified"
    assert verified.lesson.review.by == "user:local"  # type: ignore[union-attr]
    # Only admin may delete or mint tokens.
    assert code_of(lambda: service.memory_delete(reviewer, DeleteParams(scope=APP, key="k"))) == (
        "forbidden"
    )
    assert code_of(lambda: service.token_create(reviewer, TokenCreateParams(name="x"))) == (
        "forbidden"
    )


@pytest.mark.parametrize("bad", ["", "Bearer x", "lst_short", "lst_" + "A" * 43])
def test_unknown_or_malformed_tokens_are_refused(service: LessonService, bad: str) -> None:
    assert code_of(lambda: service.authenticate(bad)) == "unauthenticated"
    good = mint(service).token
    assert service.authenticate(good).principal == "user:local"


def test_revoked_and_expired_tokens_stop_working(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    revoked = mint(service)
    service.token_revoke(PERSON, TokenRevokeParams(id=revoked.info.id))
    with pytest.raises(LorestoreError, match="revoked"):
        service.authenticate(revoked.token)
    assert (
        code_of(lambda: service.token_revoke(PERSON, TokenRevokeParams(id=revoked.info.id)))
        == "not_found"
    )
    expiring = mint(service, expires_days=1)
    assert service.authenticate(expiring.token).token_id == expiring.info.id
    clock.advance(days=2)
    with pytest.raises(LorestoreError, match="expired"):
        service.authenticate(expiring.token)


def test_last_used_is_recorded(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    created = mint(service)
    service.authenticate(created.token)
    used = service.token_list(PERSON, NoParams()).tokens[0].last_used_at
    assert used is not None and used.startswith("2026-01-01T12:00")


def test_scope_confined_token_reaches_nothing_outside(service: LessonService) -> None:
    for scope in (APP, "branch::acme/app::main", OTHER, "global"):
        service.memory_write(PERSON, WriteParams(scope=scope, key="k", value=f"postgres {scope}"))
    token = service.authenticate(mint(service, permission="admin", scopes=["repo::acme/*"]).token)
    # Inside: the repo and its branches.
    assert service.memory_read(token, ReadParams(scope=APP, key="k")).lesson.scope == APP
    assert (
        service.memory_read(token, ReadParams(scope="branch::acme/app::main", key="k")).lesson.key
        == "k"
    )
    hits = service.memory_search(token, SearchParams(query="postgres", scopes=[APP])).hits
    assert [h.lesson.scope for h in hits] == [APP]
    inventory = [s.scope for s in service.memory_scopes(token, NoParams()).scopes]
    assert sorted(inventory) == ["branch::acme/app::main", APP]
    # Outside: every operation is refused, and nothing changes.
    outside = [
        lambda: service.memory_read(token, ReadParams(scope=OTHER, key="k")),
        lambda: service.memory_history(token, Address(scope=OTHER, key="k")),
        lambda: service.memory_list(token, ListParams(scope="global")),
        lambda: service.memory_search(token, SearchParams(query="postgres", scopes=[APP, OTHER])),
        lambda: service.memory_write(token, WriteParams(scope=OTHER, key="k", value="x")),
        lambda: service.memory_archive(token, ChangeParams(scope=OTHER, key="k")),
        lambda: service.memory_restore(token, ChangeParams(scope=OTHER, key="k")),
        lambda: service.memory_delete(token, DeleteParams(scope=OTHER, key="k")),
        lambda: service.memory_purge(token, PurgeParams()),
        lambda: service.memory_purge_expired(token, NoParams()),
        lambda: service.memory_audit(token, AuditParams()),
        lambda: service.memory_review_queue(token, ReviewQueueParams()),
        lambda: service.token_create(token, TokenCreateParams(name="wider", scopes=["global"])),
        lambda: service.token_create(token, TokenCreateParams(name="wider", scopes=["repo::*/*"])),
    ]
    for call in outside:
        assert code_of(call) == "forbidden"
    assert service.memory_read(PERSON, ReadParams(scope=OTHER, key="k")).lesson.version == 1
    # Positive controls for the mutations, inside the confinement.
    assert service.memory_archive(token, ChangeParams(scope=APP, key="k")).lesson.status == (
        "archived"
    )
    assert service.memory_restore(token, ChangeParams(scope=APP, key="k")).lesson.status == (
        "active"
    )
    assert service.memory_audit(token, AuditParams(scope=APP)).events
    assert service.memory_delete(token, DeleteParams(scope=APP, key="k")).deleted


def test_a_token_cannot_exceed_its_creator(service: LessonService) -> None:
    admin = service.authenticate(mint(service, permission="admin", scopes=["repo::acme/*"]).token)
    inherited = service.token_create(admin, TokenCreateParams(name="x")).info
    assert inherited.scopes == ["repo::acme/*"]  # a confined token makes confined tokens
    narrower = ["repo::acme/app", "branch::acme/lib::*", "repo::acme/a*"]
    made = service.token_create(admin, TokenCreateParams(name="y", scopes=narrower)).info
    assert made.scopes == narrower
    for wider in (
        ["repo::*/*"],
        ["repo::acme/app", "global"],
        ["branch::*/*::*"],
        ["repo::acme*/*"],
    ):
        params = TokenCreateParams(name="z", scopes=wider)
        assert code_of(lambda p=params: service.token_create(admin, p)) == "forbidden"
    assert code_of(lambda: mint(service, scopes=[])) == "invalid_scope"
    assert code_of(lambda: mint(service, scopes=["repo:acme/*"])) == "invalid_scope"


def test_cli_token_commands(cli: Cli) -> None:
    created = cli.ok(
        "token",
        "create",
        "--name",
        "ci",
        "--permission",
        "read",
        "--scope",
        "repo::acme/*",
        "--expires-days",
        "30",
    )
    assert created["token"].startswith("lst_")
    assert created["info"]["scopes"] == ["repo::acme/*"]
    listed = cli.ok("token", "list")["tokens"]
    assert [t["id"] for t in listed] == [created["info"]["id"]]
    revoked = cli.ok("token", "revoke", created["info"]["id"])
    assert revoked["revoked_at"]
    assert cli("token", "revoke", "nope", "--json").error()["code"] == "not_found"
    # The table shows an id's first 8 characters: they are enough to revoke it.
    second = cli.ok("token", "create", "--name", "two")["info"]["id"]
    assert cli("token", "revoke", second[:7], "--json").error()["code"] == "not_found"  # too short
    assert cli.ok("token", "revoke", second[:8].upper())["id"] == second


def test_rate_limit_per_token_with_retry_after(store, clock) -> None:  # type: ignore[no-untyped-def]
    service = LessonService(store, clock=clock, rate_limit=3)
    busy = mint(service).token
    other = mint(service).token
    for _ in range(3):
        service.authenticate(busy)
    with pytest.raises(LorestoreError) as err:
        service.authenticate(busy)
    assert err.value.code == "rate_limited"
    assert 1 <= err.value.details["retry_after"] <= 60
    assert service.authenticate(other).principal == "user:local"  # another token's budget
    clock.advance(minutes=1)
    assert service.authenticate(busy).principal == "user:local"  # a new window


@pytest.mark.fresh_database  # renames token_usage away
def test_rate_limiter_fails_closed(store, clock) -> None:  # type: ignore[no-untyped-def]
    service = LessonService(store, clock=clock)  # the default 600 a minute: leases of 30
    token = mint(service).token
    assert service.authenticate(token).principal == "user:local"  # positive control
    break_table(store, "token_usage")
    for _ in range(lease_size(600) - 1):  # reserved, and counted, before the break
        assert service.authenticate(token).principal == "user:local"
    with pytest.raises(LorestoreError) as err:  # the next reservation cannot be counted
        service.authenticate(token)
    assert err.value.code == "storage_error"  # refused, and said to be the store's failure


def test_a_limit_taken_in_leases_is_exact_in_one_process(store, clock) -> None:  # type: ignore[no-untyped-def]
    service = LessonService(store, clock=clock, rate_limit=100)  # leases of 5
    busy, other = mint(service).token, mint(service).token
    for _ in range(100):
        service.authenticate(busy)
    with pytest.raises(LorestoreError) as err:
        service.authenticate(busy)
    assert err.value.code == "rate_limited"
    assert service.authenticate(other).principal == "user:local"  # another token's budget
    clock.advance(minutes=1)
    assert service.authenticate(busy).principal == "user:local"  # a new window


def test_a_limit_holds_across_processes_sharing_the_store(store, clock) -> None:  # type: ignore[no-untyped-def]
    """Two services on one store (two server processes): each reserves leases in the same
    counter, so together they never pass the limit, and each is refused at most a lease's
    worth early."""
    first = LessonService(store, clock=clock, rate_limit=100)
    second = LessonService(store, clock=clock, rate_limit=100)
    token = mint(first).token
    served = {id(first): 0, id(second): 0}
    for turn in range(300):
        service = (first, second)[turn % 2 if turn < 60 else 1]
        try:
            service.authenticate(token)
        except LorestoreError as exc:
            assert exc.code == "rate_limited"
            continue
        served[id(service)] += 1
    assert 100 - (lease_size(100) - 1) <= sum(served.values()) <= 100
    assert min(served.values()) >= 25  # both served: the positive control


def test_a_token_cannot_outlive_its_creator(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    parent = mint(service, permission="admin", expires_days=2).info
    admin = service.authenticate(mint(service, permission="admin", expires_days=2).token)
    assert parent.expires_at is not None
    child = service.token_create(admin, TokenCreateParams(name="c")).info
    assert child.expires_at == admin.token_expires_at  # omitted: ends with its creator
    shorter = service.token_create(admin, TokenCreateParams(name="s", expires_days=1)).info
    assert shorter.expires_at is not None and shorter.expires_at < child.expires_at
    for days in (3, 3650):
        params = TokenCreateParams(name="l", expires_days=days)
        assert code_of(lambda p=params: service.token_create(admin, p)) == "forbidden"
    forever = mint(service, permission="admin").info  # the control: a person's own has no end
    assert forever.expires_at is None
