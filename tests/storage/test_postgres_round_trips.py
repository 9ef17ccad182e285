"""PostgreSQL's costs that grow with the data or with the statements, as the app role under
forced row-level security: a search reads the actor's owners once, not once per matching
lesson, and a write waits on the server a bounded number of times (its statements are
pipelined) while it still lands under the same policies, audit chain and cap. Each bound
has its positive control beside it (the search still finds the actor's lessons and not
another tenant's; the write is still refused where RLS or the cap refuses it)."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.conftest import approve_pending
from tests.pg import Template

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    AuditParams,
    ListParams,
    NoParams,
    OrgBindParams,
    OrgCreateParams,
    ReadParams,
    SearchParams,
    TokenCreateParams,
    TokenRevokeParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.dialect import Q
from lorestore.storage.sql.lessons import NO_BOUND

ALICE = local_actor(principal="user:alice", session="a")
BOB = local_actor(principal="user:bob", session="b")
MATCHES = 60


@pytest.fixture
def pg(pg_template: Template, pg_database: str) -> Iterator[PostgresStore]:
    # One connection, so the traced connection is the one every call uses.
    store = PostgresStore(pg_template.app_url(pg_database), min_size=1, max_size=1)
    yield store
    store.close()


def _admin(pg_template: Template, pg_database: str) -> psycopg.Connection[Any]:
    return psycopg.connect(pg_template.admin_url(pg_database), autocommit=True)


def _owner_calls(conn: psycopg.Connection[Any], actor: str, query: str) -> tuple[int, int]:
    """Run the store's own search query as the app role with ``actor`` bound; the hits and how
    many times ``lorestore_owners()`` ran in that transaction."""
    with conn.transaction():
        conn.execute("SET LOCAL track_functions = 'all'")
        conn.execute("SET LOCAL ROLE lorestore_app")
        conn.execute("SELECT set_config('lorestore.actor', %s, true)", [actor])
        hits = conn.execute(
            Q["search"],
            {
                "match": query,
                "find": query,
                "owners": [actor],
                "scopes": ["repo::acme/app"],
                "now": "2026-01-01T00:00:00Z",
                "tags": "[]",
                "limit": 10,
                "since": 0,
                "before": NO_BOUND,
            },
        ).fetchall()
        row = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions "
            "WHERE funcname = 'lorestore_owners'"
        ).fetchone()
    assert row is not None
    return len(hits), int(row[0])


def test_a_search_reads_the_actors_owners_once_not_per_match(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    service = LessonService(pg)
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="k", value="cache rule"))
    service.memory_write(BOB, WriteParams(scope="repo::acme/app", key="k", value="cache of bob"))
    with _admin(pg_template, pg_database) as conn:
        # Enough of alice's lessons that the planner reads the full-text index, one in fifty
        # of them about the cache (loaded directly: the service would take minutes).
        conn.execute(
            "INSERT INTO lessons (id, owner, scope, key, value, value_digest, version, "
            "recorded_at, created_at, updated_at) "
            "SELECT gen_random_uuid(), 'user:alice', 'repo::acme/app', 'bulk-' || i, "
            "CASE WHEN i %% 50 = 0 THEN 'cache rule ' || i ELSE 'other words ' || md5(i::text) "
            "END, md5(i::text), 1, now(), now(), now() FROM generate_series(1, %s) AS i",
            [MATCHES * 50],
        )
        conn.execute("ANALYZE lessons")
        hits, calls = _owner_calls(conn, "user:alice", "cache")
        assert hits == 10  # positive control: alice's matches are found and ranked
        # Once for the search function, once for the policy on each relation read back (the
        # rows, through lesson_rows, and their search vectors for each word's rank): not
        # once for each of the 61 matches.
        assert calls <= 3, calls
        bob_hits, _ = _owner_calls(conn, "user:bob", "cache")
        assert bob_hits == 1  # bob's one lesson, none of alice's
    found = service.memory_search(ALICE, SearchParams(query="cache", scopes=["repo::acme/app"]))
    assert len(found.hits) == 10
    assert all(h.lesson.owner.key == "user:alice" for h in found.hits)


def _round_trips(store: PostgresStore, call: Any) -> int:
    """How many times the client waited on the server during ``call``, read from the libpq
    trace of the store's one connection: each run of messages sent that an answer follows."""
    conn = store._pool.getconn()  # the pool's only connection: traced, then handed back
    fd, name = tempfile.mkstemp(prefix="lorestore-trace-")
    try:
        conn.pgconn.trace(fd)
        store._pool.putconn(conn)
        call()
        conn.pgconn.untrace()
    finally:
        os.close(fd)
    lines = [line.split("\t") for line in Path(name).read_text(errors="replace").splitlines()]
    directions = [parts[1] for parts in lines if len(parts) > 2 and parts[1] in ("F", "B")]
    Path(name).unlink()
    return sum(1 for pair in pairwise(directions) if pair == ("F", "B"))


def test_a_write_waits_on_the_server_a_bounded_number_of_times(pg: PostgresStore) -> None:
    service = LessonService(pg)
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="warm", value="warm up"))

    def create() -> None:
        service.memory_write(
            ALICE, WriteParams(scope="repo::acme/app", key="new", value="pin the cache key")
        )

    # Statement by statement a created lesson took 14 (BEGIN, 12 statements, COMMIT). Pipelined,
    # it waits where it reads: the scope bindings with what the write decides on in the
    # writer's own tenant, read at once (its value's tombstones, the address, the rejected
    # values on its ladder and the scope's keys that may look like its key: four waits until
    # Transaction.address_reads, ten in all, then one more for the bindings until
    # Transaction.ask_bindings), and with them the audit head and a key for the new lesson
    # (the key was read back from the insert, with the head, in a wait of its own until
    # migration 0044 and Transaction.ask_new_lesson_key); and the COMMIT. Neither its first
    # session's row count nor the event's id is read back any more (each was one wait).
    assert _round_trips(pg, create) <= 2

    def change() -> None:  # a new version: one wait more, for its number (max_version)
        service.memory_write(
            ALICE, WriteParams(scope="repo::acme/app", key="new", value="pin the cache keys")
        )

    assert _round_trips(pg, change) <= 3
    # Positive control: the writes landed whole, read back through RLS, their audit chained.
    read = service.memory_read(ALICE, ReadParams(scope="repo::acme/app", key="new"))
    assert read.lesson.value == "pin the cache keys" and read.lesson.version == 2
    assert service.audit_verify(ALICE, NoParams()).ok


def test_a_write_to_an_org_bound_scope_reads_again_once(pg: PostgresStore) -> None:
    """What a write decides on is read in the writer's own tenant with the bindings; a scope
    bound to an org costs one wait more, for the org's (tests/storage/
    test_write_owner_guess.py holds that the org's rows decide)."""
    service = LessonService(pg)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    approve_pending(pg)
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="warm", value="warm up"))

    def create(scope: str) -> None:
        service.memory_write(ALICE, WriteParams(scope=scope, key="new", value="pin the cache"))

    assert _round_trips(pg, lambda: create("repo::acme/app")) <= 3
    assert _round_trips(pg, lambda: create("repo::alice/app")) <= 2  # the control: her own
    read = service.memory_read(ALICE, ReadParams(scope="repo::acme/app", key="new"))
    assert read.lesson.owner.key == "org:acme"


def _counts(pg_template: Template, pg_database: str) -> tuple[int, int, int]:
    with _admin(pg_template, pg_database) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM lessons), (SELECT count(*) FROM lesson_versions), "
            "(SELECT count(*) FROM audit_log)"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


@pytest.mark.fresh_database
def test_a_statement_failing_unread_in_the_pipeline_fails_the_whole_write(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    """The version insert's answer is never read before the COMMIT: its failure (here a
    trigger refusing as a policy would) still fails the write, with nothing of it stored, and
    the connection serves the next call."""
    service = LessonService(pg)
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="a", value="first"))
    before = _counts(pg_template, pg_database)
    with _admin(pg_template, pg_database) as conn:
        conn.execute(
            "CREATE FUNCTION refuse_version() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no versions today' USING ERRCODE = '42501'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse_version BEFORE INSERT ON lesson_versions "
            "FOR EACH ROW EXECUTE FUNCTION refuse_version()"
        )
    with pytest.raises(LorestoreError) as refused:
        service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="b", value="second"))
    assert refused.value.code == "forbidden"  # as a row-level security refusal is reported
    assert _counts(pg_template, pg_database) == before
    with _admin(pg_template, pg_database) as conn:
        conn.execute("DROP TRIGGER refuse_version ON lesson_versions")
    # Positive control: the same connection, the same write, now lands whole.
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="b", value="second"))
    assert _counts(pg_template, pg_database) == (before[0] + 1, before[1] + 1, before[2] + 1)


def test_the_cap_still_refuses_a_pipelined_write(
    pg: PostgresStore, pg_template: Template, pg_database: str
) -> None:
    service = LessonService(pg)
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="a", value="first"))
    with _admin(pg_template, pg_database) as conn:
        conn.execute("UPDATE owner_stats SET max_active = 1 WHERE owner = 'user:alice'")
    before = _counts(pg_template, pg_database)
    with pytest.raises(LorestoreError) as refused:
        service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="b", value="second"))
    assert refused.value.code == "cap_exceeded"
    assert _counts(pg_template, pg_database) == before
    with _admin(pg_template, pg_database) as conn:
        conn.execute("UPDATE owner_stats SET max_active = 2 WHERE owner = 'user:alice'")
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="b", value="second"))
    assert _counts(pg_template, pg_database)[0] == before[0] + 1


def test_a_read_waits_on_the_server_a_bounded_number_of_times(pg: PostgresStore) -> None:
    service = LessonService(pg)
    service.memory_write(ALICE, WriteParams(scope="repo::acme/app", key="k", value="a lesson"))
    found: list[str] = []

    def read() -> None:
        lesson = service.memory_read(ALICE, ReadParams(scope="repo::acme/app", key="k")).lesson
        found.append(lesson.value)

    # Statement by statement: BEGIN, the actor, the bindings, the lesson, COMMIT. The lesson
    # in the reader's own tenant is read with the bindings (service/reads.py), then COMMIT.
    assert _round_trips(pg, read) <= 2
    assert found == ["a lesson"]  # positive control: the read is answered


def test_a_read_of_an_org_bound_scope_reads_again_once(pg: PostgresStore) -> None:
    """A scope bound to an org costs a read one wait more, for the org's lesson
    (tests/storage/test_write_owner_guess.py holds that the org's is the one answered)."""
    service = LessonService(pg)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    approve_pending(pg)
    for scope in ("repo::acme/app", "repo::alice/app"):
        service.memory_write(ALICE, WriteParams(scope=scope, key="k", value=f"held in {scope}"))
    found: list[str] = []

    def read(scope: str) -> None:
        lesson = service.memory_read(ALICE, ReadParams(scope=scope, key="k")).lesson
        found.append(f"{lesson.owner.key}: {lesson.value}")

    assert _round_trips(pg, lambda: read("repo::acme/app")) <= 3
    assert _round_trips(pg, lambda: read("repo::alice/app")) <= 2  # the control: her own
    assert found == ["org:acme: held in repo::acme/app", "user:alice: held in repo::alice/app"]


def test_a_tokens_lookup_waits_on_the_server_once(pg: PostgresStore) -> None:
    service = LessonService(pg)
    service.rate_limit = None  # the lookup alone, not the first request's lease of the minute
    params = TokenCreateParams.model_validate({"name": "agent", "permission": "write"})
    created = service.token_create(ALICE, params)
    service.authenticate(created.token)  # its first use is written down (last_used_at)
    found: list[str] = []

    def lookup() -> None:
        found.append(service.authenticate(created.token).principal)

    # In a transaction it was two waits (the row, then the COMMIT); alone, one.
    assert _round_trips(pg, lookup) == 1
    assert found == ["user:alice"]  # positive control: the token still stands for its owner
    service.token_revoke(ALICE, TokenRevokeParams(id=created.info.id))
    with pytest.raises(LorestoreError) as refused:  # a revoked one is refused at once
        service.authenticate(created.token)
    assert refused.value.code == "unauthenticated"


def test_concurrent_writers_of_one_owner_keep_one_chain_and_never_deadlock(
    pg_template: Template, pg_database: str
) -> None:
    """The audit chain is locked in a write's first wait (after its address, as every writer
    locks them) and a new lesson's key reserved there: eight writers at once, creating,
    changing and re-sighting lessons of one owner, some in an org-bound scope (whose write
    also locks the writer's own chain first), all land, each with its event, on one linear
    chain per owner."""
    store = PostgresStore(pg_template.app_url(pg_database), min_size=1, max_size=8)
    service = LessonService(store, rate_limit=None)
    service.org_create(ALICE, OrgCreateParams(slug="acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    approve_pending(store)
    errors: list[BaseException] = []
    writes = 0
    lock = threading.Lock()

    def writer(n: int) -> None:
        nonlocal writes
        try:
            for i in range(12):
                scope = "repo::acme/app" if i % 3 == 0 else "repo::alice/app"
                key = f"shared-{i % 4}" if i % 2 else f"own-{n}-{i}"  # shared keys collide
                value = f"writer {n} write {i}" if i % 4 else "the same value"
                service.memory_write(ALICE, WriteParams(scope=scope, key=key, value=value))
                with lock:
                    writes += 1
        except BaseException as exc:  # reported below, with the rest
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == [] and writes == 96
        verified = service.audit_verify(ALICE, NoParams())
        assert verified.ok, verified
        events = service.memory_audit(ALICE, AuditParams(limit=500)).events
        assert len(events) >= 96 + 2  # each write's event, the org's creation and its binding
        # Positive control: both owners' lessons are there, read through RLS.
        own = service.memory_list(ALICE, ListParams(scope="repo::alice/app", limit=200))
        org = service.memory_list(ALICE, ListParams(scope="repo::acme/app", limit=200))
        assert own.lessons and org.lessons
        assert {lesson.owner.key for lesson in org.lessons} == {"org:acme"}
    finally:
        store.close()
