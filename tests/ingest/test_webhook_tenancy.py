"""The webhook tables hold their tenants apart in the database itself: with the application's
own rights (on PostgreSQL the app role, an actor bound), another user sees none of a tenant's
webhooks, deliveries or counts, and no row's owner can change; the one definer function hands
out ciphertext only. The settings' parsing is here too."""

from __future__ import annotations

import sqlite3
import threading

import psycopg
import pytest
from tests import github
from tests.conftest import Cli, app_connection
from tests.ingest.conftest import KEY
from tests.migrating import pg_url

from lorestore.auth.actor import local_actor
from lorestore.config import WebhookSettings, load_settings
from lorestore.core.errors import LorestoreError
from lorestore.ingest.models import WebhookStatsParams, WebhookTargetParams
from lorestore.models import ListParams, NoParams
from lorestore.service import LessonService
from lorestore.service.capture import Delivery
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store

ALICE = local_actor(principal="user:alice", session="a")
TEXT = "Use the frozen_clock fixture; a mocked clock hides the retry bug in these tests."


def _alices_webhook(store: Store) -> str:
    service = LessonService(store, webhooks=WebhookSettings(key=KEY))
    target = WebhookTargetParams.model_validate({"target": "acme/app"})
    secret = service.webhook_add(ALICE, target).secret
    body = github.body_of(github.review_comment_event(github.review_comment(950, TEXT)))
    status, _ = service.github_delivery(
        Delivery("pull_request_review_comment", "d-950", github.signature(secret, body), body)
    )
    assert status == 200
    return secret


def test_another_user_sees_no_webhook_rows_and_the_definer_gives_ciphertext(store: Store) -> None:
    secret = _alices_webhook(store)
    tables = ("webhooks", "webhook_deliveries", "webhook_counts")
    with app_connection(store, "user:alice") as conn:  # the control: the owner sees its rows
        assert [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables] == [
            1,
            1,
            1,
        ]
    if not isinstance(store, PostgresStore):
        return  # one person's file: no other user to hide from
    with app_connection(store, "user:bob") as conn:
        assert [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables] == [
            0,
            0,
            0,
        ]
        rows = conn.execute("SELECT owner, target, secret FROM lorestore_webhook_secrets()")
        [(owner, target, sealed)] = rows.fetchall()
        assert (owner, target) == ("user:alice", "acme/app")
        assert sealed.startswith("gAAAAA") and secret not in sealed


@pytest.mark.parametrize("table", ["webhooks", "webhook_deliveries", "webhook_counts"])
def test_no_webhook_row_changes_owner(store: Store, table: str) -> None:
    _alices_webhook(store)
    refused = (sqlite3.IntegrityError, psycopg.errors.InsufficientPrivilege)
    with app_connection(store, "user:alice") as conn:
        with pytest.raises(refused):
            conn.execute(f"UPDATE {table} SET owner = 'user:local'")
        if table == "webhook_counts":  # the control: a column the service changes does
            assert conn.execute("UPDATE webhook_counts SET count = count").rowcount == 1


def test_the_webhook_settings_are_read_and_checked() -> None:
    settings = load_settings(
        {
            "LORESTORE_WEBHOOK_TTL_DAYS": "issue_comment=30, pull_request_review=60",
            "LORESTORE_WEBHOOK_GRACE_HOURS": "2",
            "LORESTORE_WEBHOOK_RETENTION_DAYS": "off",
        },
        use_login=False,
    ).webhooks
    assert settings.ttl_for("issue_comment") == 30
    assert settings.ttl_for("pull_request_review") == 60
    assert settings.ttl_for("pull_request_review_comment") == 90
    assert (settings.grace_hours, settings.retention_days, settings.key) == (2, None, None)
    every = load_settings({"LORESTORE_WEBHOOK_TTL_DAYS": "7"}, use_login=False).webhooks
    assert {every.ttl_for(e) for e, _ in every.ttl_days} == {7}
    for bad in ("0", "400", "push=3", "issue_comment=x", "seven"):
        with pytest.raises(LorestoreError) as refused:
            load_settings({"LORESTORE_WEBHOOK_TTL_DAYS": bad}, use_login=False)
        assert refused.value.code == "config_error"


def test_a_key_that_is_not_a_fernet_key_is_a_config_error(store: Store) -> None:
    service = LessonService(store, webhooks=WebhookSettings(key="not-a-key"))
    with pytest.raises(LorestoreError) as refused:
        service.webhook_add(ALICE, WebhookTargetParams.model_validate({"target": "acme/app"}))
    assert refused.value.code == "config_error"
    assert "Fernet" in (refused.value.hint or "")
    assert service.webhook_list(ALICE, NoParams()).webhooks == []


def test_copies_of_one_delivery_arriving_at_once_are_applied_once(store: Store) -> None:
    """Eight threads deliver the same delivery id at the same moment: one lesson, one
    `created`, seven replays (on PostgreSQL the second claim waits for the first commit)."""
    service = LessonService(store, webhooks=WebhookSettings(key=KEY))
    secret = service.webhook_add(
        ALICE, WebhookTargetParams.model_validate({"target": "acme/app"})
    ).secret
    body = github.body_of(github.review_comment_event(github.review_comment(951, TEXT)))
    delivery = Delivery(
        "pull_request_review_comment", "d-951", github.signature(secret, body), body
    )
    start = threading.Barrier(8)
    outcomes: list[str] = []

    def deliver() -> None:
        start.wait()
        outcomes.append(service.github_delivery(delivery)[1].outcome)

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["created"] + ["replay"] * 7
    counts = service.webhook_stats(ALICE, WebhookStatsParams())
    assert {c.reason: c.count for c in counts.counts} == {"created": 1}
    listed = service.memory_list(ALICE, ListParams.model_validate({"scope": "repo::acme/app"}))
    assert [lesson.key for lesson in listed.lessons] == ["github-review-comment-951"]


def test_a_delivery_past_the_owners_cap_is_refused_counted_and_can_come_again(
    store: Store, cli: Cli, request: pytest.FixtureRequest
) -> None:
    """The capture writes through the store's caps: past the owner's lesson cap the delivery
    is 409 `cap_exceeded`, counted `failed:cap_exceeded`, and not claimed, so that GitHub's
    redelivery lands once the cap is raised."""
    if isinstance(store, PostgresStore):
        template = request.getfixturevalue("pg_template")
        db_url = pg_url(template.admin_url(request.getfixturevalue("pg_database")))
    else:
        db_url = f"sqlite:///{store.path}"  # type: ignore[attr-defined]
    service = LessonService(store, webhooks=WebhookSettings(key=KEY))
    secret = service.webhook_add(
        ALICE, WebhookTargetParams.model_validate({"target": "acme/app"})
    ).secret
    cli.ok("db", "cap", "user:alice", "1", "--database-url", db_url)

    def deliver(comment_id: int) -> Delivery:
        text = f"{TEXT} ({comment_id})"
        body = github.body_of(github.review_comment_event(github.review_comment(comment_id, text)))
        sig = github.signature(secret, body)
        return Delivery("pull_request_review_comment", f"d-{comment_id}", sig, body)

    assert service.github_delivery(deliver(960))[1].outcome == "created"
    with pytest.raises(LorestoreError) as refused:
        service.github_delivery(deliver(961))
    assert refused.value.code == "cap_exceeded"
    counts = service.webhook_stats(ALICE, WebhookStatsParams()).counts
    assert {c.reason: c.count for c in counts} == {"created": 1, "failed:cap_exceeded": 1}
    cli.ok("db", "cap", "user:alice", "5", "--database-url", db_url)
    assert service.github_delivery(deliver(961))[1].outcome == "created"  # the redelivery
