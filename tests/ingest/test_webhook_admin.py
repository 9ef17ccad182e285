"""Webhook administration through the CLI (its real entry point) and REST: a secret shown once
and stored encrypted, the server key required, rotation with a grace period, removal, the
admin permission, an org's webhooks; and the body cap and the delivery sweep of the route."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests import github
from tests.conftest import Cli, Clock, dump_text
from tests.ingest.conftest import KEY, Hook

from lorestore.auth.actor import local_actor
from lorestore.config import WebhookSettings
from lorestore.core.errors import LorestoreError
from lorestore.ingest.models import WebhookTargetParams
from lorestore.models import (
    NoParams,
    OrgAcceptParams,
    OrgBindParams,
    OrgCreateParams,
    OrgInviteParams,
    ReadParams,
)
from lorestore.service import LessonService
from lorestore.service.capture import Delivery
from lorestore.service.maintenance import Maintenance, SweepPlan
from lorestore.storage.protocol import Store
from lorestore.transports.http.webhook import MAX_DELIVERY_BYTES

GOOD = "Use the frozen_clock fixture rather than mocking time.monotonic in these tests."


@pytest.fixture
def keyed(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("LORESTORE_WEBHOOK_KEY", KEY)
    return cli


def test_add_shows_the_secret_once_and_stores_it_encrypted(keyed: Cli, home: Path) -> None:
    added = keyed.ok("webhook", "add", "https://github.com/Acme/App")
    secret = added["secret"]
    assert len(secret) >= 40
    assert added["webhook"]["target"] == "acme/app"
    assert added["webhook"]["owner"] == "user:local"
    listed = keyed.ok("webhook", "list")["webhooks"]
    assert [w["target"] for w in listed] == ["acme/app"]
    assert secret not in str(listed)
    from lorestore.storage.sqlite import SQLiteStore

    store = SQLiteStore(home / "lorestore.db")
    try:
        text = dump_text(store)
    finally:
        store.close()
    assert secret not in text and "gAAAAA" in text  # a Fernet token, not the secret
    again = keyed("webhook", "add", "acme/app", "--json")
    assert again.exit_code == 1 and again.error()["code"] == "conflict"
    human = keyed("webhook", "add", "acme/lib")
    assert human.exit_code == 0 and "secret" in human.stdout


def test_without_the_server_key_a_webhook_is_refused_with_the_fix(cli: Cli) -> None:
    refused = cli("webhook", "add", "acme/app", "--json")
    assert refused.exit_code != 0
    error = refused.error()
    assert error["code"] == "config_error"
    assert "LORESTORE_WEBHOOK_KEY" in error["message"] and "Fernet" in error["hint"]
    assert cli.ok("webhook", "list")["webhooks"] == []  # nothing was stored


def test_rotate_and_remove(keyed: Cli) -> None:
    first = keyed.ok("webhook", "add", "acme/app")["secret"]
    rotated = keyed.ok("webhook", "rotate", "acme/app")
    assert rotated["secret"] != first
    assert rotated["webhook"]["previous_until"] is not None
    removed = keyed.ok("webhook", "remove", "acme/app")
    assert removed["target"] == "acme/app"
    assert keyed.ok("webhook", "list")["webhooks"] == []
    missing = keyed("webhook", "remove", "acme/app", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "not_found"
    bad = keyed("webhook", "add", "not a repo!", "--json")
    assert bad.exit_code == 2 and bad.error()["code"] == "invalid_argument"


def test_rotation_accepts_the_old_secret_for_the_grace_period_only(hook: Hook) -> None:
    old = hook.secret
    rotated = hook.api.service.webhook_rotate(
        local_actor(), WebhookTargetParams.model_validate({"target": "acme/app"})
    )
    comment = github.review_comment_event(github.review_comment(801, GOOD))
    assert hook.post("pull_request_review_comment", comment, secret=old).status_code == 200
    hook.clock.advance(hours=25)
    late = github.review_comment_event(github.review_comment(802, GOOD + " Again."))
    assert hook.post("pull_request_review_comment", late, secret=old).status_code == 401
    # The control: the new secret signs.
    assert hook.post("pull_request_review_comment", late, secret=rotated.secret).status_code == 200


def test_a_removed_webhook_refuses_its_deliveries(hook: Hook) -> None:
    hook.api.ok("webhook_remove", {"target": "acme/app"})
    comment = github.review_comment_event(github.review_comment(803, GOOD))
    assert hook.post("pull_request_review_comment", comment).status_code == 401


def test_managing_webhooks_needs_the_admin_permission(hook: Hook) -> None:
    for permission in ("read", "write", "review"):
        token = hook.api.mint(name=permission, permission=permission)
        for name in ("webhook_add", "webhook_rotate", "webhook_remove"):
            answer = hook.api.post(name, {"target": "acme/app"}, token=token)
            assert answer.status_code == 403, (permission, name)
        assert hook.api.post("webhook_list", {}, token=token).status_code == 403
    assert hook.api.ok("webhook_list", {})["webhooks"][0]["target"] == "acme/app"  # control
    # The stats are anyone's who reads the tenant.
    reader = hook.api.mint(name="reader", permission="read")
    assert hook.api.post("webhook_stats", {}, token=reader).status_code == 200


def test_a_body_over_githubs_maximum_is_refused_unread(hook: Hook) -> None:
    declared = github.headers("pull_request_review_comment", b"{}", hook.secret)
    declared["Content-Length"] = str(MAX_DELIVERY_BYTES + 1)
    answer = hook.api.client.post("/webhooks/github", content=b"{}", headers=declared)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "value_too_large"

    def chunks() -> Iterator[bytes]:  # no length declared: the stream is cut at the cap
        for _ in range(MAX_DELIVERY_BYTES // (1 << 20) + 1):
            yield b" " * (1 << 20)

    streamed = github.headers("pull_request_review_comment", b"", hook.secret)
    answer = hook.api.client.post("/webhooks/github", content=chunks(), headers=streamed)
    assert answer.status_code == 413
    assert hook.stats() == {}
    # The control: a body above the server's own request limit (1 MiB) but under GitHub's lands.
    big = GOOD + " " + "Context. " * 150_000
    payload = github.review_comment_event(github.review_comment(804, big[:60_000]))
    payload["pull_request"]["body"] = "x" * (2 << 20)
    assert hook.post("pull_request_review_comment", payload).status_code == 200


def test_deliveries_are_kept_for_the_retention_window_then_swept(hook: Hook) -> None:
    payload = github.review_comment_event(github.review_comment(805, GOOD))
    hook.post("pull_request_review_comment", payload, delivery="d-805")
    hook.clock.advance(days=29)
    sweep = Maintenance(hook.api.service).maintain(local_actor(), SweepPlan())
    assert {s.sweep: s.purged for s in sweep.sweeps}["webhook_deliveries"] == 0
    assert (
        hook.post("pull_request_review_comment", payload, delivery="d-805").json()["outcome"]
        == "replay"
    )
    hook.clock.advance(days=2)
    sweep = Maintenance(hook.api.service).maintain(local_actor(), SweepPlan())
    assert {s.sweep: s.purged for s in sweep.sweeps}["webhook_deliveries"] == 1
    # Past the window the id is forgotten: the same delivery is applied again (a sighting).
    again = hook.post("pull_request_review_comment", payload, delivery="d-805")
    assert again.json()["outcome"] == "seen"


ALICE = local_actor(principal="user:alice", session="a")
BOB = local_actor(principal="user:bob", session="b")


def test_an_orgs_webhook_lands_in_the_org_for_its_members_only(store: Store, clock: Clock) -> None:
    service = LessonService(store, clock=clock, webhooks=WebhookSettings(key=KEY))
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    params = WebhookTargetParams.model_validate({"target": "acme/app", "owner": "acme"})
    with pytest.raises(LorestoreError) as unbound:  # its scope is not the org's yet
        service.webhook_add(ALICE, params)
    assert unbound.value.code == "conflict"
    assert "lorestore org bind acme repo::acme/app" in str(unbound.value.hint)
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    secret = service.webhook_add(ALICE, params).secret
    # bob, no member, neither sees nor manages it.
    assert service.webhook_list(BOB, NoParams()).webhooks == []
    with pytest.raises(LorestoreError) as refused:
        service.webhook_rotate(BOB, params)
    assert refused.value.code == "forbidden"
    body = github.body_of(github.review_comment_event(github.review_comment(806, GOOD)))
    status, result = service.github_delivery(
        Delivery("pull_request_review_comment", "d-806", github.signature(secret, body), body)
    )
    assert (status, result.outcome) == (200, "created")
    address = {"scope": "repo::acme/app", "key": "github-review-comment-806"}
    lesson = service.memory_read(ALICE, ReadParams.model_validate(address)).lesson
    assert lesson.owner.key == "org:acme"
    with pytest.raises(LorestoreError) as hidden:
        service.memory_read(BOB, ReadParams.model_validate(address))
    assert hidden.value.code == "forbidden"
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="bob")).code
    service.org_accept(BOB, OrgAcceptParams(code=code))
    assert service.memory_read(BOB, ReadParams.model_validate(address)).lesson.id == lesson.id
