"""The Transaction primitives the two backends used to spell out apart, called directly on
both (the ``store`` fixture runs each test on SQLite and on PostgreSQL as the app role): the
bulk export and import primitives, tombstones, policies and kept foreign records, the audit
log appended in bulk, ids that name nothing, the rate-limit window, the binding check and what
a write reads at once (``address_reads``).
The service's suites cover the same primitives through the operations."""

from __future__ import annotations

import uuid
from typing import Any

from lorestore.core.audit import GENESIS, chain_hash, first_break
from lorestore.core.records import Lesson, LessonVersion
from lorestore.storage.protocol import (
    ForeignRecord,
    ImportedLesson,
    PolicyRecord,
    PolicyRow,
    ProjectRepo,
    RecallRecord,
    Store,
    TokenRecord,
    Tombstone,
)

OWNER = "user:alice"
SCOPE = "repo::acme/app"
AT = "2026-01-01T12:00:00.000000Z"
LATER = "2026-01-02T12:00:00.000000Z"


def _lesson(key: str, value: str, **fields: Any) -> Lesson:
    return Lesson(
        id=str(uuid.uuid4()),
        scope=SCOPE,
        key=key,
        value=value,
        owner={"user": "alice"},
        version=1,
        recorded_at=AT,
        created_at=AT,
        updated_at=AT,
        **fields,
    )


def _imported(lesson: Lesson, digest: str) -> ImportedLesson:
    return ImportedLesson(lesson, OWNER, lesson.id, digest, None)


def test_imported_lessons_land_once_and_read_back_as_written(store: Store) -> None:
    plain = _lesson("plain", "A plain lesson.")
    full = _lesson(
        "full",
        "A lesson with every part.",
        tags=["ci", "db"],
        kind="signal",
        valid_from=AT,
        valid_to=LATER,
        expires_at=LATER,
        depends_on=[{"path": "Makefile", "blob": "a" * 40}],
        ext={"x_tool": {"n": 1}},
        source={"agent": "bench", "commit": "c" * 40},
    )
    with store.transaction(write=True, actor=OWNER) as tx:
        pks = tx.import_lessons([_imported(plain, "d-plain"), _imported(full, "d-full")])
        assert all(isinstance(pk, int) for pk in pks)
        # The same id again, and a new id at a taken address: neither lands.
        other = _lesson("plain", "Another value at the same address.")
        again = tx.import_lessons([_imported(plain, "d-plain"), _imported(other, "d-other")])
        assert again == [None, None]
        assert tx.import_lessons([]) == []
        tx.insert_served_versions([pk for pk in pks if pk is not None], OWNER)
        proposal = LessonVersion(
            lesson_id=full.id,
            version=2,
            state="proposed",
            value="A proposal.",
            value_digest="d-proposal",
            recorded_at=LATER,
            actor=OWNER,
        )
        assert pks[1] is not None
        tx.insert_versions([(pks[1], proposal)])
    with store.transaction(write=False, actor=OWNER) as tx:
        found = {s.lesson.id: s for s in tx.lessons_by_ids(OWNER, [plain.id, full.id])}
        assert found[plain.id].lesson == plain and found[full.id].lesson == full
        assert (found[plain.id].pk, found[full.id].value_digest) == (pks[0], "d-full")
        assert tx.lessons_by_ids(OWNER, [str(uuid.uuid4())]) == []
        assert tx.lessons_by_ids("user:bob", [plain.id]) == []  # another owner's ids
        versions = tx.versions_of([pk for pk in pks if pk is not None])
        assert [v.value for v in versions[pks[0]]] == [plain.value]  # type: ignore[index]
        served, proposed = versions[pks[1]]
        assert (served.state, served.value, served.actor) == ("accepted", full.value, OWNER)
        assert (served.tags, served.valid_to, served.source) == (full.tags, LATER, full.source)
        assert proposed == proposal
        first, second = sorted([plain.id, full.id])
        page = tx.export_lessons([OWNER], None, 1)
        assert [s.lesson.id for s in page] == [first]
        assert [s.lesson.id for s in tx.export_lessons([OWNER], first, 5)] == [second]
        assert tx.export_lessons([OWNER], second, 5) == []
        assert tx.export_lessons(["user:bob"], None, 5) == []


def _tombstone(digest: str, **fields: Any) -> Tombstone:
    return Tombstone(
        id=str(uuid.uuid4()),
        owner=OWNER,
        scope=SCOPE,
        value_digest=digest,
        reason="wrong",
        actor=OWNER,
        created_at=AT,
        **fields,
    )


def test_tombstones_import_export_find_and_lift(store: Store) -> None:
    live = _tombstone("d-live", ext={"x_note": "kept"})
    lifted = _tombstone("d-lifted", lifted_at=LATER, lifted_by=OWNER, lift_reason="fine")
    with store.transaction(write=True, actor=OWNER) as tx:
        assert tx.import_tombstone(live) and tx.import_tombstone(lifted)
        assert not tx.import_tombstone(live)  # its id is taken
    with store.transaction(write=False, actor=OWNER) as tx:
        assert tx.tombstone_by_id(OWNER, lifted.id) == lifted
        assert tx.tombstone_by_id(OWNER, str(uuid.uuid4())) is None
        assert tx.live_tombstones(OWNER, ["d-live", "d-lifted", "d-none"]) == [live]
        first, second = sorted([live.id, lifted.id])
        assert [t.id for t in tx.export_tombstones([OWNER], None, 1)] == [first]
        assert [t.id for t in tx.export_tombstones([OWNER], first, 5)] == [second]
        assert tx.live_tombstones(OWNER, ["d-live"]) == [live] and live.scope == SCOPE
        assert tx.live_tombstones(OWNER, ["d-lifted"]) == []  # lifted: not live
    with store.transaction(write=True, actor=OWNER) as tx:
        lift = {"lifted_by": OWNER, "at": LATER, "reason": "fine after all"}
        assert tx.lift_tombstones(OWNER, SCOPE, "d-live", lesson_id=str(uuid.uuid4()), **lift) == 0
        assert tx.lift_tombstones(OWNER, SCOPE, "d-live", **lift) == 1
        assert tx.live_tombstones(OWNER, ["d-live"]) == []


def test_what_a_write_decides_on_is_read_at_once(store: Store) -> None:
    """address_reads: a value's live tombstones, the lesson at the address, the values
    rejected on the ladder and the scope's keys that may look like the key, in one call; each
    part beside a call that must find nothing of it (the control)."""
    rejected = _lesson("Release-Guard", "Friday deploys are fine.")
    cyrillic = _lesson("d\u0435ploy", "Deploy notes live in the wiki.")
    tomb = _tombstone("d-rejected", lesson_id=rejected.id)
    with store.transaction(write=True, actor=OWNER) as tx:
        pks = tx.import_lessons([_imported(rejected, "d-rejected"), _imported(cyrillic, "d-c")])
        tx.insert_served_versions([pk for pk in pks if pk is not None], OWNER)
        assert tx.import_tombstone(tomb)
    with store.transaction(write=True, actor=OWNER) as tx:
        reads = tx.address_reads(
            OWNER,
            SCOPE,
            "release-guard",
            digests=["d-rejected", "d-none"],
            ladder=["global", SCOPE],
            skeleton="release-guard",
        )
        other = tx.address_reads(
            OWNER, SCOPE, "Release-Guard", digests=["d-none"], ladder=["global"], skeleton="x"
        )
    assert reads.tombstones == [tomb] and reads.stored is None
    assert reads.rejected == [("Release-Guard", "Friday deploys are fine.")]
    assert sorted(reads.lookalikes) == sorted(["Release-Guard", "d\u0435ploy"])
    assert other.tombstones == [] and other.rejected == []
    assert other.stored is not None and other.stored.lesson.id == rejected.id
    assert other.lookalikes == ["d\u0435ploy"]  # every key outside ASCII, whatever the skeleton


def test_policies_and_foreign_records_import_and_export(store: Store) -> None:
    policy = PolicyRecord(OWNER, PolicyRow(SCOPE, "files", True), AT, OWNER, {"x_p": 1})
    records = [
        ForeignRecord(OWNER, digest, "x_thing", SCOPE, {"type": "x_thing", "n": n}, AT, OWNER)
        for n, digest in enumerate(["b" * 64, "a" * 64])
    ]
    with store.transaction(write=True, actor=OWNER) as tx:
        assert tx.import_policy(policy) and not tx.import_policy(policy)
        tx.set_policy(OWNER, PolicyRow("*", "commit", False), by=OWNER, at=LATER)
        assert all(tx.import_foreign(r) for r in records)
        assert not tx.import_foreign(records[0])
    with store.transaction(write=False, actor=OWNER) as tx:
        assert tx.export_policies([OWNER]) == [
            PolicyRecord(OWNER, PolicyRow("*", "commit", False), LATER, OWNER),
            policy,
        ]
        assert sorted(tx.scope_policies(OWNER, ["*", SCOPE, "global"]), key=str) == sorted(
            [PolicyRow("*", "commit", False), PolicyRow(SCOPE, "files", True)], key=str
        )
        ordered = sorted(records, key=lambda r: r.digest)
        assert tx.export_foreign([OWNER], None, 1) == ordered[:1]
        assert tx.export_foreign([OWNER], (OWNER, ordered[0].digest), 5) == ordered[1:]
        assert tx.export_foreign(["user:bob"], None, 5) == []


def _event(action: str, prev: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "owner": OWNER,
        "at": AT,
        "actor": OWNER,
        "action": action,
        "scope": SCOPE,
        "key": "k",
        "lesson_id": str(uuid.uuid4()),
        "before_version": None,
        "after_version": 1,
        "before_digest": None,
        "after_digest": "d",
        "reason": None,
        "detail": {"trust": "candidate"},
        "prev_hash": prev,
    }
    event["hash"] = chain_hash(prev, event)
    return event


def test_audit_events_appended_one_by_one_and_in_bulk_form_one_chain(store: Store) -> None:
    with store.transaction(write=True, actor=OWNER) as tx:
        assert tx.last_audit_hash(OWNER) is None
        first = _event("memory.write", GENESIS)
        tx.append_audit(first)
        batch = [_event("memory.import", first["hash"])]
        batch.append(_event("memory.import", batch[0]["hash"]))
        tx.append_audits(batch)
        tx.append_audits([])
        assert tx.last_audit_hash(OWNER) == batch[-1]["hash"]
        tx.append_audit(_event("memory.archive", batch[-1]["hash"]))
    with store.transaction(write=False, actor=OWNER) as tx:
        chain = list(tx.audit_chain(OWNER))
        assert [e["action"] for e in chain] == [
            "memory.write",
            "memory.import",
            "memory.import",
            "memory.archive",
        ]
        assert first_break(chain) is None
        assert chain[1]["detail"] == {"trust": "candidate"}


def _token(principal: str) -> TokenRecord:
    return TokenRecord(
        id=str(uuid.uuid4()),
        principal=principal,
        name="ci",
        prefix="ls_abcd",
        permission="write",
        scopes=("repo::acme/*",),
        orgs=None,
        created_at=AT,
        created_by=principal,
    )


def test_ids_that_name_nothing_find_nothing(store: Store) -> None:
    token = _token(OWNER)
    recall = RecallRecord(str(uuid.uuid4()), OWNER, AT, OWNER, {"task": "t"}, [], [])
    with store.transaction(write=True, actor=OWNER) as tx:
        tx.insert_token(token, "h" * 64)
        tx.insert_recall(recall)
        assert not tx.revoke_token(OWNER, "not-a-token-id", LATER)
        assert not tx.revoke_token(OWNER, str(uuid.uuid4()), LATER)
        assert tx.revoke_token(OWNER, token.id, LATER)  # the positive control
        assert not tx.revoke_token(OWNER, token.id, LATER)  # revoked already
    with store.transaction(write=False, actor=OWNER) as tx:
        assert tx.get_recall([OWNER], "not-a-recall-id") is None
        assert tx.get_recall([OWNER], str(uuid.uuid4())) is None
        assert tx.get_recall([OWNER], recall.recall_id) == recall
        (listed,) = tx.list_tokens(OWNER)
        assert (listed.id, listed.revoked_at, listed.scopes) == (token.id, LATER, token.scopes)


def test_a_rate_window_counts_and_restarts(store: Store) -> None:
    token = _token(OWNER)
    with store.transaction(write=True, actor=OWNER) as tx:
        tx.insert_token(token, "i" * 64)
        counts = [tx.count_request(token.id, OWNER, AT) for _ in range(3)]
        assert counts == [1, 2, 3]
        assert tx.count_request(token.id, OWNER, AT, 30) == 33  # a lease of 30 at once
        assert tx.count_request(token.id, OWNER, LATER) == 1  # a new window
        assert tx.count_request(token.id, OWNER, AT, 5) == 5  # the next: restarts with a lease


def test_a_binding_sees_the_scopes_other_owners_hold(store: Store) -> None:
    """Within one team (nobody outside the org holds anything): a member's personal lesson
    is another owner's; the pattern is matched by the store, never given as LIKE text."""
    with store.transaction(write=True, actor=OWNER) as tx:
        assert tx.import_lessons([_imported(_lesson("k", "Alice's lesson."), "d-a")])[0]
    with store.transaction(write=True, actor="user:bob") as tx:
        assert tx.create_org("org:acme", "Acme", "user:bob", AT)
        assert tx.org_has_outsiders("org:acme")  # alice keeps a lesson and is not in it
        tx.set_member("org:acme", OWNER, "member", AT)
        assert not tx.org_has_outsiders("org:acme")
        assert tx.scopes_held_by_others("org:acme", "user:bob", "repo::acme/*")
        assert not tx.scopes_held_by_others("org:acme", "user:bob", "repo::other/*")
        assert not tx.scopes_held_by_others("org:acme", "user:bob", "repo::acme/a_p%")


def test_project_declarations_add_list_find_and_remove(store: Store) -> None:
    with store.transaction(write=True, actor=OWNER) as tx:
        added = tx.add_project_repos(OWNER, "billing", ["acme/app", "acme/api"], by=OWNER, at=AT)
        assert added == ["acme/app", "acme/api"]
        assert tx.add_project_repos(OWNER, "billing", ["acme/app"], by=OWNER, at=AT) == []
        kept = ProjectRepo(OWNER, "payments", "acme/app", LATER, OWNER, {"x_p": [1, "é"]})
        assert tx.import_project_repo(kept) and not tx.import_project_repo(kept)
    with store.transaction(write=False, actor=OWNER) as tx:
        assert [(r.project, r.repo) for r in tx.project_repos([OWNER])] == [
            ("billing", "acme/api"),
            ("billing", "acme/app"),
            ("payments", "acme/app"),
        ]
        assert tx.projects_of_repo([OWNER], "acme/app") == [
            ProjectRepo(OWNER, "billing", "acme/app", AT, OWNER),
            kept,
        ]
        assert tx.projects_of_repo([OWNER], "acme/web") == []
        assert tx.projects_of_repo(["user:nobody"], "acme/app") == []
    with store.transaction(write=True, actor=OWNER) as tx:
        assert tx.remove_project_repos(OWNER, "billing", ["acme/api", "acme/nope"]) == ["acme/api"]
        assert tx.remove_project_repos(OWNER, "payments", None) == ["acme/app"]
    with store.transaction(write=False, actor=OWNER) as tx:
        assert [(r.project, r.repo) for r in tx.project_repos([OWNER])] == [("billing", "acme/app")]


def test_lessons_with_keys_reads_one_scope_for_many_keys(store: Store) -> None:
    lessons = [_lesson(key, f"The {key} lesson.") for key in ("a", "b", "c")]
    with store.transaction(write=True, actor=OWNER) as tx:
        for lesson in lessons:
            tx.insert_lesson(lesson, "d" * 64)
    with store.transaction(write=False, actor=OWNER) as tx:
        found = tx.lessons_with_keys(OWNER, SCOPE, ["a", "c", "zz"])
        assert sorted(s.lesson.key for s in found) == ["a", "c"]
        assert tx.lessons_with_keys(OWNER, "global", ["a"]) == []
        assert tx.lessons_with_keys("user:nobody", SCOPE, ["a"]) == []
