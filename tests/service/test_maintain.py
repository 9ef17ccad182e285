"""Maintenance: the three sweeps (expired lessons, archived ones past retention, recall-log
retention), each with its audit event and counts, each switchable off; ``lorestore maintain``
through the real CLI; the server's schedule; and the settings that drive the server. Every
purge has a survivor beside it."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli, Clock
from tests.serving import Server

from lorestore.auth.actor import Actor, local_actor
from lorestore.config import load_settings
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    AuditParams,
    ChangeParams,
    ExplainParams,
    NoParams,
    RecallParams,
    TokenCreateParams,
    WriteParams,
)
from lorestore.service import LessonService, utcnow
from lorestore.service.maintenance import Maintenance, SweepPlan
from lorestore.storage.sqlite import SQLiteStore

S = "repo::acme/app"
PERSON = local_actor(session="maintenance")


def write(service: LessonService, key: str, **kw: Any) -> None:
    params = WriteParams.model_validate({"scope": S, "key": key, "value": f"lesson {key}", **kw})
    service.memory_write(PERSON, params)


def recall(service: LessonService) -> str:
    params = RecallParams.model_validate({"repo": "acme/app", "task": "fix the tests"})
    return service.memory_recall(PERSON, params).recall_id


def sweep_events(service: LessonService) -> dict[str, dict[str, Any]]:
    events = service.memory_audit(PERSON, AuditParams.model_validate({"limit": 500})).events
    return {e.action: e.detail for e in events if e.action.startswith("sweep_")}


def logged(service: LessonService, recall_id: str) -> bool:
    """Whether the recall log still holds a recall (asked through memory_explain)."""
    try:
        service.memory_explain(PERSON, ExplainParams(recall_id=recall_id))
    except LorestoreError as error:
        assert error.code == "not_found"
        return False
    return True


def test_each_sweep_purges_what_is_due_and_audits_its_counts(
    service: LessonService, clock: Clock
) -> None:
    write(service, "expiring", ttl_days=1)
    write(service, "old-archive")
    service.memory_archive(PERSON, ChangeParams(scope=S, key="old-archive"))  # type: ignore[call-arg]
    old_recall = recall(service)
    clock.advance(days=40)
    write(service, "kept")
    write(service, "new-archive")
    service.memory_archive(PERSON, ChangeParams(scope=S, key="new-archive"))  # type: ignore[call-arg]
    new_recall = recall(service)

    report = Maintenance(service).maintain(PERSON, SweepPlan())
    counts = {s.sweep: (s.enabled, s.purged, s.retention_days) for s in report.sweeps}
    assert counts == {
        "expired": (True, 1, None),
        "archived": (True, 1, 30),
        "recall_log": (True, 1, 30),
        "webhook_deliveries": (True, 0, 30),  # tests/ingest/test_capture.py sweeps some
    }
    assert not logged(service, old_recall) and logged(service, new_recall)
    listed = service.memory_scopes(PERSON, NoParams()).scopes[0]
    assert (listed.active, listed.archived) == (1, 1)  # "kept" and "new-archive" survive
    events = sweep_events(service)
    assert events["sweep_expired"]["purged"] == 1
    assert events["sweep_archived"] == {"purged": 1, "retention_days": 30, "session": "maintenance"}
    assert events["sweep_recall_log"]["purged"] == 1
    # The per-lesson purge events are kept beside the sweep events.
    actions = [e.action for e in service.memory_audit(PERSON, AuditParams(scope=S)).events]  # type: ignore[call-arg]
    assert "purge_expired" in actions and "purge" in actions


def test_switched_off_sweeps_do_nothing_and_leave_no_event(
    service: LessonService, clock: Clock
) -> None:
    write(service, "expiring", ttl_days=1)
    write(service, "archived")
    service.memory_archive(PERSON, ChangeParams(scope=S, key="archived"))  # type: ignore[call-arg]
    kept = recall(service)
    clock.advance(days=40)
    off = SweepPlan(
        purge_expired=False,
        archive_retention_days=None,
        recall_retention_days=None,
        delivery_retention_days=None,
    )
    report = Maintenance(service).maintain(PERSON, off)
    assert [(s.enabled, s.purged) for s in report.sweeps] == [(False, 0)] * 4
    assert sweep_events(service) == {}
    assert logged(service, kept)
    # Positive control: one sweep switched back on does its work.
    on = SweepPlan(
        purge_expired=True,
        archive_retention_days=None,
        recall_retention_days=None,
        delivery_retention_days=None,
    )
    assert Maintenance(service).maintain(PERSON, on).sweeps[0].purged == 1
    assert set(sweep_events(service)) == {"sweep_expired"}


def test_maintenance_needs_an_unconfined_admin(service: LessonService) -> None:
    def token_actor(**kw: Any) -> Actor:
        params = TokenCreateParams.model_validate({"name": "t", **kw})
        return service.authenticate(service.token_create(local_actor(), params).token)

    for actor in (token_actor(permission="write"), token_actor(permission="admin", scopes=[S])):
        with pytest.raises(LorestoreError) as refused:
            Maintenance(service).maintain(actor, SweepPlan())
        assert refused.value.code == "forbidden"
    assert sweep_events(service) == {}
    admin = token_actor(permission="admin")
    assert Maintenance(service).maintain(admin, SweepPlan()).sweeps[0].enabled
    assert set(sweep_events(service)) == {
        "sweep_expired",
        "sweep_archived",
        "sweep_recall_log",
        "sweep_webhook_deliveries",
    }


def test_lorestore_maintain_from_the_cli(
    cli: Cli, sqlite_store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    past = LessonService(sqlite_store, clock=Clock(utcnow() - timedelta(days=3)))
    write(past, "expired", ttl_days=1)
    write(past, "fresh")
    cli.ok("write", S, "archived", "to be purged")
    cli.ok("archive", S, "archived")
    monkeypatch.setenv("LORESTORE_ARCHIVE_RETENTION_DAYS", "0")
    monkeypatch.setenv("LORESTORE_RECALL_RETENTION_DAYS", "off")
    report = cli.ok("maintain")
    assert [(s["sweep"], s["enabled"], s["purged"]) for s in report["sweeps"]] == [
        ("expired", True, 1),
        ("archived", True, 1),
        ("recall_log", False, 0),
        ("webhook_deliveries", True, 0),
    ]
    assert [x["key"] for x in cli.ok("list", S)["lessons"]] == ["fresh"]
    audit = {e["action"]: e for e in cli.ok("audit", "--limit", "20")["events"]}
    assert audit["sweep_archived"]["detail"]["purged"] == 1
    assert audit["sweep_archived"]["actor"] == "user:local"
    assert "sweep_recall_log" not in audit
    human = cli("maintain")
    assert human.exit_code == 0 and "recall_log: off" in human.stdout
    monkeypatch.setenv("LORESTORE_PURGE_EXPIRED", "maybe")
    bad = cli("maintain", "--json")
    assert bad.exit_code == 1 and bad.error()["code"] == "config_error"


@pytest.mark.slow
def test_the_server_sweeps_on_its_schedule(home: Path, cli: Cli) -> None:
    cli.ok("write", S, "archived", "to be purged by the server")
    cli.ok("archive", S, "archived")
    cli.ok("write", S, "kept", "stays")
    token = cli.ok("token", "create", "--name", "t", "--permission", "admin")["token"]
    server = Server(
        home,
        "--no-admin-token",
        LORESTORE_MAINTENANCE_HOURS="24",
        LORESTORE_ARCHIVE_RETENTION_DAYS="0",
    )
    try:
        events = _wait_for_sweeps(server, token)
    finally:
        server.stop()
    assert events["sweep_archived"]["detail"]["purged"] == 1
    assert events["sweep_expired"]["detail"]["session"] == "maintenance"
    assert [x["key"] for x in cli.ok("list", S)["lessons"]] == ["kept"]
    logged = [r for r in server.log_records() if r["event"] == "maintenance"]
    assert logged and logged[0]["sweeps"][1]["purged"] == 1


def _wait_for_sweeps(server: Server, token: str) -> dict[str, Any]:
    """The first run starts with the server; wait for its events (bounded, not timed)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        response = server.call("POST", "/api/v1/memory_audit", token, json={"limit": 50})
        events = {e["action"]: e for e in response.json()["events"]}
        if {"sweep_expired", "sweep_archived", "sweep_recall_log"} <= set(events):
            return events
        time.sleep(0.1)
    raise AssertionError("the scheduled maintenance did not run")


@pytest.mark.parametrize(
    ("env", "field", "value"),
    [
        ({}, "archive_retention_days", 30),
        ({"LORESTORE_ARCHIVE_RETENTION_DAYS": "off"}, "archive_retention_days", None),
        ({"LORESTORE_ARCHIVE_RETENTION_DAYS": "0"}, "archive_retention_days", 0),
        ({"LORESTORE_RECALL_RETENTION_DAYS": "7"}, "recall_retention_days", 7),
        ({"LORESTORE_PURGE_EXPIRED": "off"}, "purge_expired", False),
        ({"LORESTORE_MAINTENANCE_HOURS": "off"}, "maintenance_hours", None),
        ({"LORESTORE_MAINTENANCE_HOURS": "6"}, "maintenance_hours", 6.0),
        ({"LORESTORE_CORS_ORIGINS": "https://a.example, https://b.example"}, "cors_origins",
         ("https://a.example", "https://b.example")),
    ],
)  # fmt: skip
def test_settings_are_parsed(env: dict[str, str], field: str, value: Any) -> None:
    assert getattr(load_settings(env), field) == value


@pytest.mark.parametrize(
    "env",
    [
        {"LORESTORE_ARCHIVE_RETENTION_DAYS": "-1"},
        {"LORESTORE_ARCHIVE_RETENTION_DAYS": "²"},
        {"LORESTORE_RECALL_RETENTION_DAYS": "forever"},
        {"LORESTORE_MAINTENANCE_HOURS": "0"},
        {"LORESTORE_MAX_REQUEST_BYTES": "off"},
        {"LORESTORE_URL": "ftp://example"},
        {"LORESTORE_URL": "http://127.0.0.1:8765"},  # without LORESTORE_TOKEN
    ],
)
def test_bad_settings_are_config_errors(env: dict[str, str]) -> None:
    with pytest.raises(LorestoreError) as refused:
        load_settings(env)
    assert refused.value.code == "config_error"


def test_sweeps_reach_every_tenant(store, clock) -> None:  # type: ignore[no-untyped-def]
    from lorestore.auth.actor import local_actor as person
    from lorestore.models import (
        AuditParams,
        NoParams,
        OrgBindParams,
        OrgCreateParams,
        ReadParams,
        WriteParams,
    )
    from lorestore.service import LessonService
    from lorestore.service.maintenance import Maintenance, SweepPlan

    service = LessonService(store, clock=clock)
    alice, local = person(principal="user:alice"), person()
    service.org_create(alice, OrgCreateParams(slug="acme"))
    service.org_bind(alice, OrgBindParams(org="acme", pattern="repo::acme/*"))
    for actor, scope in (
        (alice, "repo::alice/notes"),
        (alice, "repo::acme/app"),
        (local, "global"),
    ):
        service.memory_write(actor, WriteParams(scope=scope, key="old", value="due", ttl_days=1))
        service.memory_write(actor, WriteParams(scope=scope, key="new", value="kept"))
    clock.advance(days=2)
    report = Maintenance(service).maintain(local, SweepPlan())
    assert report.others == ["org:acme", "user:alice"]
    assert report.sweeps[0].purged == 1  # the maintaining owner's own
    for actor, scope in (
        (alice, "repo::alice/notes"),
        (alice, "repo::acme/app"),
        (local, "global"),
    ):
        assert service.memory_read(actor, ReadParams(scope=scope, key="new")).lesson.value == (
            "kept"
        )  # positive control: what is not due stays
        events = service.memory_audit(actor, AuditParams(scope=scope)).events
        (purge,) = [e for e in events if e.action == "purge_expired"]
        # An owner's erasures name who ran the maintenance (user:local), not the owner alone.
        assert purge.actor == ("org:acme" if scope == "repo::acme/app" else actor.owner)
        assert purge.detail.get("by") == (None if actor is local else "user:local")
    assert service.audit_verify(alice, NoParams()).ok
    again = Maintenance(service).maintain(local, SweepPlan())
    assert again.others == [] and again.sweeps[0].purged == 0


def test_a_setting_that_cannot_be_off_does_not_offer_off() -> None:
    """The request-size limit cannot be turned off, and its error does not suggest it."""
    for raw in ("off", "10"):
        with pytest.raises(LorestoreError) as refused:
            load_settings({"LORESTORE_MAX_REQUEST_BYTES": raw})
        assert "1024 to 1073741824" in refused.value.message
        assert "or off" not in refused.value.message
    with pytest.raises(LorestoreError) as retention:  # the control: this one may be off
        load_settings({"LORESTORE_RECALL_RETENTION_DAYS": "forever"})
    assert "or off" in retention.value.message
