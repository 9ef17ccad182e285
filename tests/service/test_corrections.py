"""Corrections that stick, in the service on a real SQLite file: trust, review, tombstones,
proposed revisions, disputes, the review queue and bi-temporal boundaries."""

from __future__ import annotations

import pytest
from tests.conftest import dump_text

from lorestore.auth.actor import Actor, local_actor, local_agent
from lorestore.core.audit import first_break
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    Address,
    AuditParams,
    ChangeParams,
    DisputeParams,
    ListParams,
    ReadParams,
    RejectParams,
    ReviewQueueParams,
    SearchParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService

S = "repo::acme/app"
PERSON = local_actor()
AGENT = local_agent(session="agent-1")
WRONG = "Disable the flaky payment test when CI is red"


def write(
    service: LessonService, value: str, *, key: str = "k", scope: str = S, actor=AGENT, **extra
):  # type: ignore[no-untyped-def]
    return service.memory_write(actor, WriteParams(scope=scope, key=key, value=value, **extra))


def read(service: LessonService, key: str = "k", scope: str = S, **extra):  # type: ignore[no-untyped-def]
    return service.memory_read(PERSON, ReadParams(scope=scope, key=key, **extra)).lesson


def code_of(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(LorestoreError) as err:
        fn()
    return err.value.code


def reject(service, key="k", scope=S, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("reason", "hides a real race")
    return service.memory_reject(PERSON, RejectParams(scope=scope, key=key, **kw)).lesson


def verify(service, key="k", scope=S, **kw):  # type: ignore[no-untyped-def]
    return service.memory_verify(PERSON, VerifyParams(scope=scope, key=key, **kw)).lesson


def test_one_session_three_times_does_not_corroborate(service: LessonService) -> None:
    for _ in range(3):
        lesson = write(service, "same", actor=local_agent(session="only")).lesson
    assert (lesson.seen_count, lesson.trust) == (1, "candidate")
    for session in ("two", "three"):
        lesson = write(service, "same", actor=local_agent(session=session)).lesson
    assert (lesson.seen_count, lesson.trust) == (3, "corroborated")


def test_nothing_automatic_verifies(service: LessonService) -> None:
    for i in range(10):
        write(service, "same", actor=local_agent(session=f"s{i}"))
    assert read(service).trust == "corroborated"


def test_agents_cannot_review_people_can(service: LessonService) -> None:
    write(service, "a lesson")
    for call in (
        lambda: service.memory_verify(AGENT, VerifyParams(scope=S, key="k")),
        lambda: service.memory_reject(AGENT, RejectParams(scope=S, key="k", reason="no")),
    ):
        assert code_of(call) == "forbidden"
    assert read(service).trust == "candidate"
    assert verify(service, note="checked the CI config").trust == "verified"
    assert read(service).review.by == "user:local"  # type: ignore[union-attr]


def test_rejected_value_is_gone_from_reads_history_shows_reviewers(service: LessonService) -> None:
    write(service, WRONG)
    write(service, "Quarantine the flaky payment test and open an issue", key="right")
    reject(service)
    assert code_of(lambda: read(service)) == "not_found"
    assert read(service, "right").key == "right"  # positive control
    listed = service.memory_list(PERSON, ListParams(scope=S)).lessons
    assert [x.key for x in listed] == ["right"]
    hits = service.memory_search(PERSON, SearchParams(query=WRONG, scopes=[S], limit=100)).hits
    assert [h.lesson.key for h in hits] == ["right"]
    history = service.memory_history(PERSON, Address(scope=S, key="k"))
    assert history.trust == "rejected" and history.versions[0].value == WRONG
    assert code_of(lambda: service.memory_history(AGENT, Address(scope=S, key="k"))) == "not_found"


@pytest.mark.parametrize(
    ("scope", "key", "value"),
    [
        (S, "k", WRONG),
        (S, "another-key", WRONG),
        ("branch::acme/app::feature/x", "k", WRONG),
        (S, "k", WRONG.upper()),
        (S, "k", "  Disable   the flaky\tpayment test\nwhen CI is red "),
        (S, "k", WRONG.replace("D", "\uff24").replace("C", "\uff23")),  # full-width look-alikes
    ],
)
def test_rejected_value_cannot_come_back(service: LessonService, store, scope, key, value) -> None:  # type: ignore[no-untyped-def]
    write(service, WRONG)
    reject(service)
    before = dump_text(store)
    with pytest.raises(LorestoreError) as err:
        write(service, value, scope=scope, key=key)
    assert err.value.code == "rejected_value"
    assert err.value.details["reason"] == "hides a real race"
    assert err.value.details["rejected_by"] == "user:local"
    assert dump_text(store) == before
    # Positive control: a corrected value at the same address is a new version.
    fixed = write(service, "Fix the race in the payment test", scope=scope, key=key)
    assert fixed.result in ("updated", "created")


def test_rejection_does_not_reach_broader_or_unrelated_scopes(service: LessonService) -> None:
    write(service, WRONG, scope="branch::acme/app::main")
    reject(service, scope="branch::acme/app::main")
    assert write(service, WRONG, scope=S).result == "created"
    assert write(service, WRONG, scope="repo::acme/other").result == "created"


def test_rejecting_also_rejects_copies_at_narrower_scopes(service: LessonService) -> None:
    write(service, WRONG)
    write(service, WRONG.lower(), scope="branch::acme/app::main", key="copy")
    write(service, WRONG, scope="repo::acme/other", key="unrelated")
    reject(service)
    assert code_of(lambda: read(service, "copy", "branch::acme/app::main")) == "not_found"
    assert read(service, "unrelated", "repo::acme/other").trust == "candidate"


def test_verify_never_resurrects_and_undo_needs_a_reason(service: LessonService) -> None:
    write(service, WRONG)
    reject(service)
    assert code_of(lambda: verify(service)) == "conflict"
    assert code_of(lambda: write(service, WRONG)) == "rejected_value"
    assert code_of(lambda: reject(service, undo=True, reason=" ")) == "invalid_argument"
    lifted = reject(service, undo=True, reason="it was right after all")
    assert lifted.trust == "candidate"
    assert read(service).value == WRONG
    assert write(service, WRONG, actor=local_agent(session="s2")).result == "seen"
    assert verify(service).trust == "verified"


def test_reject_needs_a_reason(service: LessonService) -> None:
    write(service, WRONG)
    assert code_of(lambda: reject(service, reason="")) == "invalid_argument"
    assert read(service).trust == "candidate"


def test_proposed_revision_waits_for_review(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    write(service, "Run tests against Postgres 14")
    verify(service)
    clock.advance(hours=1)
    proposed = write(service, "Run tests against Postgres 16")
    assert proposed.result == "proposed"
    assert proposed.lesson.value == "Run tests against Postgres 14"
    served = read(service)
    assert (served.value, served.trust, served.pending_revision) == (
        "Run tests against Postgres 14",
        "verified",
        True,
    )
    assert write(service, "Run tests against Postgres 16").result == "proposed"  # idempotent
    queue = service.memory_review_queue(PERSON, ReviewQueueParams()).items
    assert [(i.reason, i.proposed.value if i.proposed else None) for i in queue] == [
        ("revision", "Run tests against Postgres 16")
    ]
    before_accept = clock.now.isoformat()
    clock.advance(hours=1)
    accepted = verify(service, revision=True, note="CI moved to 16")
    assert (accepted.value, accepted.version, accepted.trust, accepted.pending_revision) == (
        "Run tests against Postgres 16",
        2,
        "verified",
        False,
    )
    assert read(service).value == "Run tests against Postgres 16"
    # What the store said just before acceptance was still the old value.
    assert read(service, as_of=before_accept).value == "Run tests against Postgres 14"


def test_rejected_revision_is_tombstoned(service: LessonService) -> None:
    write(service, "Use the staging database for load tests")
    verify(service)
    write(service, "Use the production database for load tests")
    assert code_of(lambda: reject(service)) == "conflict"  # decide on the proposal first
    kept = reject(service, revision=True, reason="never load-test production")
    assert (kept.value, kept.trust, kept.pending_revision) == (
        "Use the staging database for load tests",
        "verified",
        False,
    )
    assert code_of(lambda: write(service, "use the PRODUCTION database for load tests")) == (
        "rejected_value"
    )
    versions = service.memory_history(PERSON, Address(scope=S, key="k")).versions
    assert [(v.version, v.state) for v in versions] == [(1, "accepted"), (2, "rejected")]
    # A later revision gets a fresh number.
    assert write(service, "Use the staging database, scaled down").result == "proposed"
    assert verify(service, revision=True).version == 3


def test_a_newer_proposal_supersedes_the_older(service: LessonService) -> None:
    write(service, "v1")
    verify(service)
    write(service, "v2 proposal")
    write(service, "v3 proposal")
    states = [
        (v.version, v.state)
        for v in service.memory_history(PERSON, Address(scope=S, key="k")).versions
    ]
    assert states == [(1, "accepted"), (2, "superseded"), (3, "proposed")]
    assert verify(service, revision=True).value == "v3 proposal"


def test_dispute_then_adjudicate(service: LessonService) -> None:
    write(service, "Seed data lives in fixtures/seed.sql")
    assert (
        code_of(lambda: service.memory_dispute(AGENT, DisputeParams(scope=S, key="k", reason="")))
        == "invalid_argument"
    )
    disputed = service.memory_dispute(
        AGENT, DisputeParams(scope=S, key="k", reason="the file moved")
    )
    assert disputed.lesson.trust == "disputed"
    assert read(service).trust == "disputed"
    queue = service.memory_review_queue(PERSON, ReviewQueueParams()).items
    assert [i.reason for i in queue] == ["disputed"]
    assert verify(service).trust == "verified"
    assert service.memory_review_queue(PERSON, ReviewQueueParams()).items == []


def test_review_queue_order_and_contents(service: LessonService) -> None:
    write(service, "plain candidate", key="plain")
    for s in ("a", "b"):
        write(service, "recurring", key="recurring", actor=local_agent(session=s))
    for s in ("a", "b", "c"):
        write(service, "corroborated", key="corroborated", actor=local_agent(session=s))
    write(
        service,
        "from a drive-by reviewer",
        key="outside",
        source={"author": "octocat", "author_association": "NONE"},
    )
    write(
        service,
        "from a maintainer",
        key="member",
        source={"author": "alice", "author_association": "MEMBER"},
    )
    write(service, "disputed one", key="disputed")
    service.memory_dispute(AGENT, DisputeParams(scope=S, key="disputed", reason="wrong"))
    queue = service.memory_review_queue(PERSON, ReviewQueueParams(scope=S)).items
    assert [(i.reason, i.lesson.key) for i in queue] == [
        ("disputed", "disputed"),
        ("corroborated", "corroborated"),
        ("recurring", "recurring"),
        ("outside_author", "outside"),
    ]


def test_review_queue_counts_a_lesson_once_under_its_most_urgent_reason(
    service: LessonService,
) -> None:
    """The queue reads each reason on its own (migration 0029's indexes) and merges them: a
    lesson fitting two reasons shows once, under the more urgent, and the limit cuts the
    merged order, not each reason's."""
    outside = {"author": "octocat", "author_association": "NONE"}
    write(service, "outside and disputed", key="od", source=outside)
    service.memory_dispute(AGENT, DisputeParams(scope=S, key="od", reason="wrong"))
    for s in ("a", "b"):
        write(service, "outside and seen twice", key="or", source=outside,
              actor=local_agent(session=s))  # fmt: skip
    write(service, "outside only", key="oo", source=outside)
    full = service.memory_review_queue(PERSON, ReviewQueueParams(scope=S)).items
    assert [(i.reason, i.lesson.key) for i in full] == [
        ("disputed", "od"),
        ("recurring", "or"),
        ("outside_author", "oo"),
    ]
    cut = service.memory_review_queue(PERSON, ReviewQueueParams(scope=S, limit=2)).items
    assert [(i.reason, i.lesson.key) for i in cut] == [("disputed", "od"), ("recurring", "or")]
    elsewhere = service.memory_review_queue(PERSON, ReviewQueueParams(scope="repo::acme/other"))
    assert elsewhere.items == []


def test_bitemporal_boundaries(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    first = write(service, "pg 14", valid_from="2025-01-01", valid_to="2026-01-01").lesson
    clock.advance(days=1)
    second = write(service, "pg 15", valid_from="2026-01-01").lesson
    # valid_from is inclusive, valid_to exclusive.
    assert read(service, valid_at="2025-12-31T23:59:59.999999Z").value == "pg 14"
    assert read(service, valid_at="2026-01-01T00:00:00Z").value == "pg 15"
    assert code_of(lambda: read(service, valid_at="2024-12-31T23:59:59Z")) == "not_found"
    # as_of is inclusive of the recording instant.
    assert read(service, as_of=first.recorded_at).value == "pg 14"
    assert read(service, as_of=second.recorded_at).value == "pg 15"
    # Both together: what the store said on day one about what held in mid-2026.
    assert code_of(lambda: read(service, as_of=first.recorded_at, valid_at="2026-06-01")) == (
        "not_found"
    )
    history = service.memory_history(PERSON, Address(scope=S, key="k")).versions
    assert [(v.valid_from, v.valid_to) for v in history] == [
        ("2025-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z"),
        ("2026-01-01T00:00:00.000000Z", None),
    ]


def test_every_correction_is_audited_with_reason_and_the_chain_holds(service, store) -> None:  # type: ignore[no-untyped-def]
    write(service, WRONG)
    service.memory_dispute(AGENT, DisputeParams(scope=S, key="k", reason="suspicious"))
    reject(service)
    reject(service, undo=True, reason="reconsidered")
    verify(service, note="ok")
    write(service, "revised")
    verify(service, revision=True)
    events = list(reversed(service.memory_audit(PERSON, AuditParams(scope=S)).events))
    assert [(e.action, e.reason) for e in events] == [
        ("write.created", None),
        ("dispute", "suspicious"),
        ("reject", "hides a real race"),
        ("reject.undo", "reconsidered"),
        ("verify", "ok"),
        ("write.proposed", None),
        ("verify.revision", None),
    ]
    assert events[1].actor == "user:local" and events[1].detail["session"] == "agent-1"
    assert (events[-1].before_version, events[-1].after_version) == (1, 2)
    with store.transaction(write=False, actor="user:local") as tx:
        assert first_break(tx.audit_chain("user:local")) is None


def test_a_rejected_value_does_not_come_back_with_an_archived_copy(service: LessonService) -> None:
    write(service, WRONG, key="copy")
    service.memory_archive(PERSON, ChangeParams(scope=S, key="copy"))
    write(service, WRONG, key="orig", scope="global")
    reject(service, key="orig", scope="global")  # reaches the archived copy too
    service.memory_restore(PERSON, ChangeParams(scope=S, key="copy"))
    assert code_of(lambda: read(service, key="copy")) == "not_found"  # restored, never served
    listed = service.memory_list(PERSON, ListParams(scope=S)).lessons
    assert [lesson.key for lesson in listed] == []
    # The positive control: an archived copy of a value nobody rejected comes back served.
    write(service, "Run make lint before pushing", key="fine")
    service.memory_archive(PERSON, ChangeParams(scope=S, key="fine"))
    service.memory_restore(PERSON, ChangeParams(scope=S, key="fine"))
    assert read(service, key="fine").value == "Run make lint before pushing"


def test_restore_checks_the_tombstones_a_confined_reviewer_left(service: LessonService) -> None:
    # A reviewer confined to global rejects there: the tombstone covers narrower scopes, but
    # the copy in repo::acme/app is beyond the token, so it is not rejected. Restoring that
    # copy must still be refused.
    confined = Actor(
        "user:local", "user:local", frozenset({"read", "write", "review"}), scopes=("global",)
    )
    write(service, WRONG, key="copy")
    service.memory_archive(PERSON, ChangeParams(scope=S, key="copy"))
    write(service, WRONG, key="orig", scope="global")
    service.memory_reject(
        confined, RejectParams(scope="global", key="orig", reason="hides a real race")
    )
    restore = lambda: service.memory_restore(PERSON, ChangeParams(scope=S, key="copy"))  # noqa: E731
    assert code_of(restore) == "rejected_value"
    history = service.memory_history(PERSON, Address(scope=S, key="copy"))
    assert (history.status, history.trust) == ("archived", "candidate")  # nothing changed
    write(service, "Run make lint before pushing", key="fine")  # the positive control
    service.memory_archive(PERSON, ChangeParams(scope=S, key="fine"))
    service.memory_restore(PERSON, ChangeParams(scope=S, key="fine"))
    assert read(service, key="fine").status == "active"


def test_accepting_a_revision_refuses_a_value_rejected_since(service: LessonService) -> None:
    write(service, "Deploy on Tuesdays", actor=PERSON)
    verify(service)
    assert write(service, WRONG).result == "proposed"
    write(service, WRONG, key="x")
    reject(service, key="x")
    assert code_of(lambda: verify(service, revision=True)) == "rejected_value"
    assert read(service).value == "Deploy on Tuesdays"  # still the verified value
    reject(service, revision=True)  # the reviewer can still refuse the proposal
    assert read(service).pending_revision is False
    # The positive control: a proposal whose value nobody rejected is accepted.
    write(service, "Deploy on Wednesdays")
    assert verify(service, revision=True).value == "Deploy on Wednesdays"


def test_an_agent_cannot_name_other_sessions_to_corroborate_itself(
    service: LessonService,
) -> None:
    agent = local_agent(session="process-1")
    for session in ("a", "b", "c"):
        lesson = write(service, "same", actor=agent, session=session).lesson
    assert (lesson.seen_count, lesson.trust) == (1, "candidate")
    # The positive controls: a person may name sessions (the CLI's --session), and three
    # agent processes corroborate.
    for session in ("a", "b", "c"):
        lesson = write(service, "other", key="p", actor=PERSON, session=session).lesson
    assert (lesson.seen_count, lesson.trust) == (3, "corroborated")
    for session in ("p2", "p3"):
        lesson = write(service, "same", actor=local_agent(session=session)).lesson
    assert (lesson.seen_count, lesson.trust) == (3, "corroborated")


def test_a_ttl_sent_with_a_proposal_applies_to_the_served_lesson(
    service: LessonService, clock
) -> None:  # type: ignore[no-untyped-def]
    write(service, "Deploy on Tuesdays", actor=PERSON, ttl_days=1)
    verify(service)
    clock.advance(hours=12)
    # A person's proposal (an agent may not move a verified lesson's expiry: see below).
    proposed = write(service, "Deploy on Wednesdays", ttl_days=30, actor=PERSON)
    assert proposed.result == "proposed"
    clock.advance(days=2)  # past the first expiry, inside the renewed one
    assert read(service).value == "Deploy on Tuesdays"
    assert verify(service, revision=True).value == "Deploy on Wednesdays"
    assert read(service).expires_at == proposed.lesson.expires_at
    cleared = write(service, "Deploy on Thursdays", clear_ttl=True, actor=PERSON)
    assert cleared.result == "proposed" and cleared.lesson.expires_at is None


def test_a_new_value_for_a_disputed_lesson_is_a_proposal_too(service: LessonService) -> None:
    """Disputing a verified lesson is no way around review: an agent's new value for it is a
    proposal that supersedes the earlier one, and the lesson stays withheld until a person
    decides."""
    write(service, "Deploy on Tuesdays", actor=PERSON)
    verify(service)
    write(service, "Deploy on Wednesdays")  # proposed
    service.memory_dispute(AGENT, DisputeParams(scope=S, key="k", reason="not since June"))
    result = write(service, "Deploy on Thursdays")
    assert (result.result, result.lesson.pending_revision) == ("proposed", True)
    assert (result.lesson.value, result.lesson.trust) == ("Deploy on Tuesdays", "disputed")
    states = [v.state for v in service.memory_history(PERSON, Address(scope=S, key="k")).versions]
    assert states == ["accepted", "superseded", "proposed"]
    accepted = verify(service, revision=True)  # a person decides
    assert (accepted.value, accepted.trust) == ("Deploy on Thursdays", "verified")
    # The control: a disputed candidate (never verified) is held back the same way.
    write(service, "Cache for an hour", key="c")
    service.memory_dispute(AGENT, DisputeParams(scope=S, key="c", reason="too long"))
    assert write(service, "Cache for a minute", key="c").result == "proposed"


def test_scopes_counts_each_lesson_in_one_bucket(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    """A rejected lesson whose TTL then passes is counted rejected, not rejected and expired:
    the buckets add up to the lessons a scope holds."""
    from lorestore.models import NoParams

    write(service, WRONG, key="wrong", ttl_days=1)
    reject(service, key="wrong")
    write(service, "Run the linter before pushing", key="stale", ttl_days=1)  # the control
    write(service, "Keep migrations reversible", key="kept")
    clock.advance(days=2)
    (counts,) = service.memory_scopes(PERSON, NoParams()).scopes
    buckets = (counts.active, counts.archived, counts.expired, counts.rejected)
    assert buckets == (1, 0, 1, 1)


def test_undo_on_a_copy_cannot_bring_back_a_value_rejected_further_up(
    service: LessonService,
) -> None:
    branch = "branch::acme/app::f"
    write(service, "Use pytest -x", key="k1")
    write(service, "use PYTEST -x", key="k2", scope=branch)  # the same value, a copy below
    reject(service, key="k1")
    assert read_code(service, "k2", branch) == "not_found"  # the copy was rejected with it
    refused = code_of(lambda: reject(service, key="k2", scope=branch, undo=True, reason="oops"))
    assert refused == "conflict"
    assert read_code(service, "k2", branch) == "not_found"  # still rejected: nothing changed
    reject(service, key="k1", undo=True, reason="it was right")  # the control: where it was made
    assert read(service, "k1").trust == "candidate"
    assert reject(service, key="k2", scope=branch, undo=True, reason="and here").trust == (
        "candidate"
    )


def test_rejecting_a_revision_rejects_the_copies_of_its_value(service: LessonService) -> None:
    branch = "branch::acme/app::f"
    write(service, "Served and verified", key="a", actor=PERSON)
    verify(service, key="a")
    write(service, "proposed Y", key="b", scope=branch)  # a copy of what will be proposed
    write(service, "Proposed  y", key="a")  # proposed
    reject(service, key="a", revision=True, reason="Y is wrong")
    assert read_code(service, "b", branch) == "not_found"  # rejected with the revision
    assert read(service, "a").value == "Served and verified"  # the control: the served one
    assert code_of(lambda: write(service, "PROPOSED y", key="c")) == "rejected_value"


def read_code(service: LessonService, key: str, scope: str) -> str | None:
    try:
        read(service, key, scope)
    except LorestoreError as error:
        return error.code
    return None


def test_an_agent_cannot_relabel_or_expire_a_verified_lesson(service: LessonService) -> None:
    write(service, "Keep migrations reversible", tags=["important"], actor=PERSON)
    verify(service)
    for extra in ({"tags": ["junk"]}, {"ttl_days": 1}):
        assert code_of(lambda e=extra: write(service, "Keep migrations reversible", **e)) == (
            "forbidden"
        )
    assert code_of(lambda: write(service, "Something else", ttl_days=1)) == "forbidden"
    lesson = read(service)
    assert (lesson.tags, lesson.expires_at, lesson.trust) == (["important"], None, "verified")
    seen = write(service, "Keep migrations reversible", session="other")  # the control
    assert seen.result == "seen" and seen.lesson.seen_count == 2
    relabelled = write(service, "Keep migrations reversible", tags=["db"], actor=PERSON)
    assert relabelled.lesson.tags == ["db"]  # a person may


def test_valid_at_never_answers_a_value_rejected_since(service: LessonService) -> None:
    write(service, "Python 3.8 is required", key="py")
    reject(service, key="py", reason="never true")
    write(service, "Python 3.11 is required", key="py", valid_from="2025-01-01T00:00:00Z")
    then = "2020-01-01T00:00:00Z"
    assert code_of(lambda: read(service, "py", valid_at=then)) == "not_found"
    now = read(service, "py", valid_at="2026-06-01T00:00:00Z")  # the control: what holds now
    assert now.value == "Python 3.11 is required"


def test_an_expiry_sent_again_with_a_pending_proposal_is_audited(service: LessonService) -> None:
    write(service, "Verified value", actor=PERSON)
    verify(service)
    write(service, "A new proposal", actor=PERSON)
    again = write(service, "A new proposal", actor=PERSON, ttl_days=5)
    assert again.result == "proposed" and again.lesson.expires_at is not None
    events = service.memory_audit(PERSON, AuditParams(scope=S, key="k")).events
    assert events[0].action == "write.expiry"
    assert events[0].detail["expires_at"] == {"before": None, "after": again.lesson.expires_at}
    same = write(service, "A new proposal", actor=PERSON)  # the control: nothing changed
    assert same.result == "proposed"
    assert len(service.memory_audit(PERSON, AuditParams(scope=S, key="k")).events) == len(events)


def test_digests_stored_before_invisible_characters_left_them_still_hold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A store written before default-ignorable characters left the value digest holds, for a
    value with one, the digest with it kept: in the lesson, its versions and its tombstones.
    The same value is still its own lesson, and still rejected."""
    import sqlite3

    from lorestore.core.normalise import digest_with_ignorables, value_digest
    from lorestore.storage.protocol import Tombstone
    from lorestore.storage.sqlite import SQLiteStore

    path = tmp_path / "lorestore.db"
    service = LessonService(SQLiteStore(path))
    hidden = "Start Postgres before the inte\u200bgration tests"
    plain = hidden.replace("\u200b", "")
    write(service, hidden, key="pg")
    legacy = digest_with_ignorables(hidden)
    assert legacy is not None and legacy != value_digest(hidden) == value_digest(plain)
    raw = sqlite3.connect(path)  # make the store one written before the rule
    (trigger,) = raw.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'lesson_versions_immutable'"
    ).fetchone()
    with raw:
        raw.execute("DROP TRIGGER lesson_versions_immutable")
        raw.execute("UPDATE lessons SET value_digest = ?", (legacy,))
        raw.execute("UPDATE lesson_versions SET value_digest = ?", (legacy,))
        raw.execute(trigger)
    raw.close()

    # The same text from another session is a sighting of the lesson, not a new version.
    seen = write(service, hidden, key="pg", actor=local_agent(session="agent-2"))
    assert seen.result == "seen" and seen.lesson.version == 1
    # Rejecting it refuses the value in either spelling, at its key and under any other.
    reject(service, key="pg")
    for key, value in (("pg", hidden), ("pg", plain), ("copy", plain), ("other", hidden)):
        assert code_of(lambda k=key, v=value: write(service, v, key=k)) == "rejected_value"
    # A tombstone recorded before the rule (under the digest with the character kept)
    # still refuses that value.
    with service.store.transaction(write=True, actor="user:local") as tx:
        tx.insert_tombstone(
            Tombstone(
                id="00000000-0000-4000-8000-0000000000aa",
                owner="user:local",
                scope=S,
                value_digest=digest_with_ignorables("Skip the \u2060migrations check") or "",
                reason="it hid a broken migration",
                actor="user:reviewer",
                created_at="2026-01-01T00:00:00.000000Z",
            )
        )
    refused = code_of(lambda: write(service, "Skip the \u2060migrations check", key="m"))
    assert refused == "rejected_value"
    # Positive control: another value is written.
    assert write(service, "Run the migrations check first", key="m").result == "created"
    service.store.close()


def test_a_sighting_that_renews_or_clears_the_expiry_records_it(service: LessonService) -> None:
    first = write(service, "Rotate the staging keys monthly", key="keys", ttl_days=5)
    renewed = write(service, "Rotate the staging keys monthly", key="keys", ttl_days=30)
    cleared = write(service, "Rotate the staging keys monthly", key="keys", clear_ttl=True)
    plain = write(service, "Rotate the staging keys monthly", key="keys")  # the control
    assert [w.result for w in (renewed, cleared, plain)] == ["seen"] * 3
    events = service.memory_audit(PERSON, AuditParams(scope=S, key="keys")).events
    details = [e.detail.get("expires_at") for e in reversed(events) if e.action == "write.seen"]
    assert details == [
        {"before": first.lesson.expires_at, "after": renewed.lesson.expires_at},
        {"before": renewed.lesson.expires_at, "after": None},
        None,
    ]
