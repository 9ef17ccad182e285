"""The Store protocol: what the service needs from a backend, and nothing about how.

The service opens one transaction per operation and calls these primitives inside it; all
business rules (versions, recurrence, tombstones, trust) live in the service, so both
backends behave the same by construction and one contract suite tests them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from lorestore.core.audit import AuditHead
from lorestore.core.recall import LessonHead
from lorestore.storage.webhooks import WebhookTransaction

if TYPE_CHECKING:
    from lorestore.core.records import AuditEvent, Lesson, LessonVersion


@dataclass(frozen=True, slots=True)
class Tombstone:
    id: str
    owner: str
    scope: str
    value_digest: str
    reason: str
    actor: str
    created_at: str
    lesson_id: str | None = None
    lifted_at: str | None = None
    lifted_by: str | None = None
    lift_reason: str | None = None
    ext: dict[str, Any] = field(default_factory=dict)


class StoredLesson(NamedTuple):
    """A lesson row with the bookkeeping the service needs beside the public record (a named
    tuple: list pages and search build dozens per call, and a tuple is the cheapest record)."""

    lesson: Lesson
    pk: int
    value_digest: str
    pending_version: int | None = None


@dataclass(frozen=True, slots=True)
class AddressReads:
    """What a write at an address decides on (Transaction.address_reads)."""

    tombstones: list[Tombstone]  # live, of the value's digests, at any scope
    stored: StoredLesson | None  # the lesson at the address
    rejected: list[tuple[str, str]]  # (key, value) rejected on the scope's ladder
    lookalikes: list[str]  # keys of the scope that may look like the key


class RecallRow(NamedTuple):
    """A recall candidate: the head recall decides on, and the full record from the same row,
    decoded only when the lesson is offered (a recall weighs a few hundred candidates and
    offers a few dozen)."""

    head: LessonHead
    owner: str
    value_digest: str
    score: float
    record: Callable[[], Lesson]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A lesson a search found, with its score, the snippet that shows why, and the value's
    digest as the store keeps it (recall's duplicate rule compares these)."""

    lesson: Lesson
    score: float
    snippet: str
    value_digest: str


@dataclass(frozen=True, slots=True)
class ScopeCount:
    owner: str
    scope: str
    active: int
    archived: int
    expired: int
    rejected: int
    # The active lessons by trust (they add up to ``active``).
    trust: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditFilter:
    owners: tuple[str, ...]
    scope: str | None = None
    key: str | None = None
    since: str | None = None
    until: str | None = None
    after_id: int | None = None
    limit: int = 50


@dataclass(frozen=True, slots=True)
class LessonFilter:
    """What ``browse_lessons`` lists: one scope, or every scope beginning with ``prefix``, of
    some owners; lessons in one state (active, archived, expired), optionally of one trust
    (rejected ones never), carrying every tag; sorted by ``sort`` (updated: newest first; seen:
    most seen first), after the keyset ``after`` (the sort value and the pk)."""

    owners: tuple[str, ...]
    now: str
    scope: str | None = None
    prefix: str | None = None
    tags: tuple[str, ...] = ()
    trust: str | None = None
    state: str = "active"
    sort: str = "updated"
    after: tuple[str | int, int] | None = None
    limit: int = 50


class Transaction(WebhookTransaction, Protocol):
    """Primitives available inside one store transaction."""

    def ask_lesson_at(self, owner: str, scope: str, key: str) -> None:
        """Send the read of ``lesson_at(owner, scope, key)`` now, for that call to take its
        answer: in a pipelined transaction (PostgreSQL) it comes with the next read's wait.
        Elsewhere, nothing: that call reads it."""

    def lesson_at(self, owner: str, scope: str, key: str) -> StoredLesson | None:
        """The lesson at an address, archived or not; None when absent."""

    def ask_new_lesson_key(self) -> None:
        """Reserve now the key the next ``insert_lesson`` of this transaction gives its lesson,
        so that the insert need not wait for the key (PostgreSQL: a value of the key sequence,
        answered with the next read's wait; one not used is a gap in the keys). Elsewhere
        nothing: the insert reports the key it got."""

    def lessons_with_keys(self, owner: str, scope: str, keys: Sequence[str]) -> list[StoredLesson]:
        """The lessons at ``scope`` of ``owner`` holding any of ``keys``, archived or not."""

    def insert_lesson(self, lesson: Lesson, value_digest: str) -> int:
        """Insert a new address; returns its internal key (the one ``ask_new_lesson_key``
        reserved, when it did: then nothing waits for it)."""

    def save_lesson(
        self, pk: int, lesson: Lesson, value_digest: str, pending_version: int | None = None
    ) -> None:
        """Overwrite the served row of an address (its versions are kept separately)."""

    def delete_lesson(self, pk: int) -> None:
        """Erase a lesson and every version and session row of it."""

    def compact_search_index(self) -> None:
        """Rewrite the full-text index so that erased text leaves no residue in it."""

    def insert_version(self, pk: int, version: LessonVersion) -> None: ...

    def versions(self, pk: int, lesson_id: str) -> list[LessonVersion]: ...

    def version(self, pk: int, lesson_id: str, number: int) -> LessonVersion | None: ...

    def max_version(self, pk: int) -> int:
        """The highest version number ever used by the lesson, proposals included."""

    def set_version_state(
        self, pk: int, number: int, state: str, *, accepted_at: str | None = None
    ) -> None:
        """Move a version's review state (its content never changes)."""

    def version_at(
        self, pk: int, lesson_id: str, *, as_of: str | None, valid_at: str | None
    ) -> LessonVersion | None:
        """The newest accepted version recorded at or before ``as_of`` whose validity
        interval holds ``valid_at`` (either bound optional)."""

    def trust_events(
        self, owner: str, scope: str, key: str, lesson_id: str, at: str
    ) -> list[tuple[str, str | None]]:
        """The lesson's audit events up to ``at``, newest first, as (action, trust recorded
        in the event's detail): what ``as_of`` reads decide trust from. At most 100."""

    def add_session(self, pk: int, value_digest: str, session: str, at: str) -> None:
        """Record that ``session`` wrote this value (nothing changes if it had): for a new
        lesson or version, whose first session it is, nothing to wait for."""

    def count_session(self, pk: int, value_digest: str, session: str, at: str) -> bool:
        """``add_session``, and whether the session is new (a repeat sighting counts it)."""

    def clear_sessions(self, pk: int) -> None:
        """Forget which sessions wrote the lesson's earlier values: a new version counts the
        sessions that write it from the start, even when its value was current before."""

    def lock_corrections(self, owner: str, *, exclusive: bool) -> None:
        """Order, until commit, the owner's writes that check tombstones (shared) against its
        rejections (exclusive), so that no write of a value lands unrejected beside the
        tombstone a concurrent rejection adds. Taken before any address lock. A no-op where
        write transactions already run one at a time (SQLite)."""

    def insert_tombstone(self, tombstone: Tombstone) -> None: ...

    def lift_tombstones(
        self,
        owner: str,
        scope: str,
        value_digest: str,
        *,
        lifted_by: str,
        at: str,
        reason: str,
        lesson_id: str | None = None,
    ) -> int:
        """Lift the live tombstones of a value at a scope; returns how many."""

    def lessons_with_digest(self, owner: str, value_digest: str) -> list[StoredLesson]:
        """Active lessons of an owner whose served value has this digest, in any scope."""

    def review_queue(
        self, owners: Sequence[str], scope: str | None, *, now: str, limit: int
    ) -> list[tuple[str, StoredLesson]]:
        """Lessons awaiting a person's decision, with the reason, most urgent first."""

    def list_lessons(
        self,
        owner: str,
        scope: str,
        *,
        tags: Sequence[str],
        now: str,
        after: tuple[str, int] | None,
        limit: int,
    ) -> tuple[list[StoredLesson], bool]:
        """Active, unexpired lessons of a scope, newest first, after a keyset cursor: at most
        ``limit`` of them, and whether more follow."""

    def browse_lessons(self, query: LessonFilter) -> tuple[list[StoredLesson], bool]:
        """Lessons as ``query`` filters and sorts them: at most ``limit``, and whether more
        follow (memory_list with a scope prefix, a trust, a state or the seen sort)."""

    def search(
        self,
        addresses: Sequence[tuple[str, str]],
        terms: Sequence[str],
        *,
        tags: Sequence[str],
        now: str,
        limit: int,
    ) -> list[SearchHit]:
        """Served lessons in the given (owner, scope) pairs matching any of the words, most
        relevant first."""

    def scope_counts(self, owners: Sequence[str], now: str) -> list[ScopeCount]:
        """Per (owner, scope) holding a lesson: its lessons by state and the active ones by
        trust, read from the counters the store keeps as lessons change (and the lessons
        expired by ``now`` but not yet purged), never from every lesson."""

    def archived_before(self, owner: str, cutoff: str, limit: int) -> list[StoredLesson]: ...

    def expired_before(self, owner: str, now: str, limit: int) -> list[StoredLesson]: ...

    def due_owners(self, now: str, archived_cutoff: str, recall_cutoff: str) -> list[str]:
        """Owners (of every tenant) with lessons expired by ``now`` or archived before
        ``archived_cutoff``, or recall entries before ``recall_cutoff``: ids only."""

    def purge_recall_log(self, owner: str, cutoff: str) -> int:
        """Erase an owner's recall-log entries recorded before ``cutoff``; returns how many."""

    def ask_audit_head(self, owner: str) -> None:
        """Lock ``owner``'s audit chain and send the read of its head now; the next
        ``last_audit_hash(owner)`` takes the answer. Where each statement is answered as it
        runs (SQLite, whose writer holds the whole database), nothing: that call reads it."""

    def last_audit_hash(self, owner: str) -> str | None: ...

    def append_audit(self, event: dict[str, Any]) -> None:
        """Append one audit event (with its ``hash`` and ``prev_hash``)."""

    def audit_events(self, query: AuditFilter) -> list[AuditEvent]: ...

    def audit_chain(self, owner: str) -> Iterator[dict[str, Any]]:
        """Every audit event of an owner in order, as stored, for chain verification."""

    def audit_head(self, owner: str) -> AuditHead | None:
        """The owner's chain head as the store keeps it (advanced by every append, by the
        database itself); None when the owner has none."""

    def insert_token(self, token: TokenRecord, token_hash: str) -> None: ...

    def token_by_hash(self, token_hash: str) -> TokenRecord | None: ...

    def list_tokens(self, principal: str) -> list[TokenRecord]: ...

    def revoke_token(self, principal: str, token_id: str, at: str) -> bool:
        """Revoke one of the principal's live tokens; False when there is none by that id."""

    def touch_token(self, token_id: str, at: str) -> None:
        """Record a use of the token."""

    def ask_bindings(self, principal: str) -> None:
        """Send the read of ``bindings_for(principal)`` now, for that call to take its answer:
        in a pipelined transaction (PostgreSQL) it comes with the next read's wait. Elsewhere,
        nothing: that call reads it."""

    def bindings_for(self, principal: str) -> list[Binding]:
        """Every scope binding, with ``principal``'s role in the bound org."""

    def memberships(self, principal: str) -> list[Membership]:
        """The orgs ``principal`` belongs to."""

    def org_members(self, org: str) -> list[Membership]: ...

    def create_org(self, org: str, name: str, owner: str, at: str) -> bool:
        """Create an org with ``owner`` as its first owner; False when the id is taken."""

    def set_member(self, org: str, member: str, role: str, at: str) -> None: ...

    def remove_member(self, org: str, member: str) -> bool: ...

    def insert_invite(self, invite: Invite, code_hash: str) -> str:
        """Record an invite; its expiry as stored (PostgreSQL dates it by its own clock)."""

    def org_invites(self, org: str) -> list[Invite]:
        """The invites of ``org``, oldest first."""

    def revoke_invite(self, org: str, invite_id: str, by: str, at: str) -> bool:
        """Take back a pending invite of ``org``; False when there is none with that id."""

    def accept_invite(self, code_hash: str, principal: str, at: str) -> str | None:
        """Join the org of a live invite addressed to ``principal``; the org, or None."""

    def insert_binding(self, org: str, pattern: str, by: str, at: str, *, approved: bool) -> bool:
        """False when the pattern is already bound (or asked for). Unapproved, it routes
        nothing until an operator approves it."""

    def pending_bindings(self) -> list[Binding]:
        """The bindings waiting for an operator's approval."""

    def org_has_outsiders(self, org: str) -> bool:
        """Whether a user outside ``org`` holds anything in this store (a lesson, a token, a
        membership)."""

    def binding_claims_held(self, org: str, pattern: str) -> bool:
        """Whether another owner than ``org`` and the pending binding's creator keeps lessons
        at the scopes it claims (an operator's question: on PostgreSQL, a superuser's)."""

    def approve_binding(self, org: str, pattern: str, by: str, at: str) -> bool: ...

    def reject_binding(self, org: str, pattern: str) -> bool: ...

    def delete_binding(self, org: str, pattern: str) -> bool: ...

    def scopes_held_by_others(self, org: str, actor: str, pattern: str) -> bool:
        """Whether any owner but ``org`` and ``actor`` keeps a lesson (in any state) at a
        scope a binding of ``pattern`` claims (a repository pattern: its branches too): what
        the binding would take from them. The store derives what to match from the pattern;
        on PostgreSQL it answers only while nobody outside the org holds anything."""

    def set_max_active(self, owner: str, limit: int | None) -> None:
        """The cap on an owner's active lessons (None: the store's default)."""

    def set_max_bytes(self, owner: str, limit: int | None) -> None:
        """The cap on the bytes an owner stores (None: the store's default)."""

    def set_default_caps(self, max_active: int | None, max_bytes: int | None) -> None:
        """The caps of every owner without its own (None: no cap)."""

    def owner_caps(self, owner: str | None) -> OwnerCaps:
        """An owner's counters and caps with the store's defaults (``None``: the defaults)."""

    def store_setting(self, name: str) -> str | None:
        """A setting of the store as a whole (not of a tenant): ``id_secret``."""

    def count_request(self, token_id: str, principal: str, window: str, requests: int = 1) -> int:
        """Count ``requests`` more in the token's window starting at ``window`` (a new window
        restarts the count); the count so far. The service reserves its requests in leases
        (``service/budget.py``)."""

    def recall_candidates(
        self, addresses: Sequence[tuple[str, str]], terms: Sequence[str] | None, *, limit: int
    ) -> list[RecallRow]:
        """Active, not rejected lessons of the ladder's (owner, scope) rungs, expired ones
        included (to be held): the task's best text matches over all rungs at once (``limit``
        times the number of rungs, in one full-text pass that ranks only the ladder's
        matches), and per rung the ``limit`` newest and newest verified or corroborated; each
        with its relevance to the task (0 when it matched no word)."""

    def semantic_candidates(
        self,
        addresses: Sequence[tuple[str, str]],
        task: str | None,
        *,
        known: Collection[str],
        limit: int,
    ) -> tuple[list[RecallRow], dict[str, float]]:
        """Hybrid retrieval's pass (the extra ``lorestore[semantic]``): the ``limit`` lessons
        of the rungs whose vectors are nearest the task's and that are not among ``known``,
        read under ``recall_candidates``' conditions (score 0); and the cosine similarity to
        the task of every lesson weighed (``known`` ones with a vector included), by id.
        Empty without the extra, with it switched off, or without a task."""

    def retrieval_model(self) -> str | None:
        """The embedding model (``name@version``) whose vectors recall and every write use, or
        None when retrieval is lexical only."""

    def retrieval_problem(self) -> str | None:
        """Why retrieval is lexical although the extra is installed and on: its model failed
        to load in this process (None otherwise)."""

    def count_lessons_to_embed(self) -> int:
        """How many lessons have no vector of the model in use, or another model's (0 without
        the extra)."""

    def embed_page(self, after: int, limit: int) -> tuple[int, int]:
        """Embed up to ``limit`` of the lessons after pk ``after`` that lack the model's
        vector; how many, and the last pk read (``after`` when none was left)."""

    def rungs_with_more(
        self, addresses: Sequence[tuple[str, str]], weighed: Sequence[int]
    ) -> list[bool]:
        """For each (owner, scope), whether it holds more active, not rejected lessons (expired
        ones counted, as recall's candidates are) than its ``weighed``: one statement for the
        ladder, each count stopping past the largest ``weighed``."""

    def insert_recall(self, record: RecallRecord) -> None: ...

    def activity(
        self, owners: Sequence[str], since: str
    ) -> tuple[list[tuple[str, str, int]], list[tuple[str, int, int]]]:
        """Since ``since``, the start of a day (UTC), by day (``YYYY-MM-DD``): the audit
        events of these owners per action ``(day, action, count)``, counted per day as they
        are appended, and their recalls ``(day, recalls, held)``."""

    def recent_recalls(
        self, owners: Sequence[str], since: str, lesson_id: str | None, limit: int
    ) -> list[RecallRecord]:
        """Logged recalls of these owners at or after ``since``, newest first, at most
        ``limit``; with ``lesson_id``, only those that offered or held that lesson."""

    def get_recall(self, owners: Sequence[str], recall_id: str) -> RecallRecord | None: ...

    def scope_policies(self, owner: str, scopes: Sequence[str]) -> list[PolicyRow]:
        """The owner's policies for these scopes (``*`` is the owner default)."""

    def set_policy(self, owner: str, policy: PolicyRow, *, by: str, at: str) -> None: ...

    def add_project_repos(
        self, owner: str, project: str, repos: Sequence[str], *, by: str, at: str
    ) -> list[str]:
        """Declare ``repos`` part of the owner's ``project``; the ones not already in it."""

    def remove_project_repos(
        self, owner: str, project: str, repos: Sequence[str] | None
    ) -> list[str]:
        """Take ``repos`` (every one when None) out of the owner's ``project``; the ones that
        were in it."""

    def import_project_repo(self, record: ProjectRepo) -> bool:
        """Insert an imported declaration; False when the owner's project holds it already."""

    def project_repos(self, owners: Sequence[str]) -> list[ProjectRepo]:
        """The project declarations of these owners, by owner, project and repository."""

    def projects_of_repo(self, owners: Sequence[str], repo: str) -> list[ProjectRepo]:
        """The declarations of these owners naming ``repo``, by project name and owner."""

    # Bulk export and import (lorestore export / import): keyset pages ordered by stable
    # ids, and inserts that keep what the store already holds (ON CONFLICT DO NOTHING).

    def export_lessons(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[StoredLesson]:
        """Every lesson of these owners, in any state, ordered by id, after ``after_id``."""

    def versions_of(self, pks: Sequence[int]) -> dict[int, list[LessonVersion]]:
        """Every version of each of these lessons, oldest first, by the lesson's pk."""

    def import_lessons(self, lessons: Sequence[ImportedLesson]) -> list[int | None]:
        """Insert lessons under their own ids and owners, in order: each one's pk, or None
        when its id or address is taken (by the store or by an earlier one of these). The
        ids must be distinct."""

    def insert_versions(self, versions: Sequence[tuple[int, LessonVersion]]) -> None:
        """``insert_version`` for many (lesson pk, version) at once."""

    def insert_served_versions(self, pks: Sequence[int], actor: str) -> None:
        """Give each of these lessons one version, recorded by ``actor``: the one it serves
        (its value, tags, valid time, record time and source), accepted."""

    def append_audits(self, events: Sequence[dict[str, Any]]) -> None:
        """``append_audit`` for many events at once, chained already, in order."""

    def address_reads(
        self,
        owner: str,
        scope: str,
        key: str,
        *,
        digests: Sequence[str],
        ladder: Sequence[str],
        skeleton: str,
        alongside: Callable[[], None] | None = None,
    ) -> AddressReads:
        """What a write at an address decides on, read at once (one wait on PostgreSQL,
        where it took four): the owner's live tombstones of the value's ``digests`` (any
        scope, as ``live_tombstones``); the lesson at the address (as ``lesson_at``, the
        address locked for this transaction); the values the live tombstones at the
        ``ladder``'s scopes hold (a rejected lesson's or a rejected revision's, read from its
        versions), each with its lesson's key; and the keys of the scope that may look like a
        key of this ``skeleton`` (``key_skeleton``: the one equal to it in ASCII case, and
        every non-ASCII key). The caller compares. ``alongside`` sends more in the same wait,
        after the address's lock."""

    def live_tombstones(self, owner: str, digests: Sequence[str]) -> list[Tombstone]:
        """The owner's live tombstones of any of these digests, at any scope, oldest
        first; the caller matches the scopes (``core/tombstones.refusing_tombstone``)."""

    def lessons_by_ids(self, owner: str, ids: Sequence[str]) -> list[StoredLesson]:
        """The owner's lessons with these ids, any order."""

    def export_tombstones(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[Tombstone]:
        """Tombstones of these owners, lifted ones included, ordered by id."""

    def tombstone_by_id(self, owner: str, tombstone_id: str) -> Tombstone | None: ...

    def import_tombstone(self, tombstone: Tombstone) -> bool:
        """Insert a tombstone as it stands (live or lifted); False when its id is taken."""

    def export_policies(self, owners: Sequence[str]) -> list[PolicyRecord]:
        """Scope policies of these owners, ordered by owner and scope."""

    def import_policy(self, policy: PolicyRecord) -> bool:
        """Insert a scope policy; False when the owner already has one for the scope."""

    def import_foreign(self, record: ForeignRecord) -> bool:
        """Keep an imported record of an unknown type; False when already kept."""

    def export_foreign(
        self, owners: Sequence[str], after: tuple[str, str] | None, limit: int
    ) -> list[ForeignRecord]:
        """Kept records of unknown types, ordered by (owner, digest), after ``after``."""


class Store(Protocol):
    """A backend: opens transactions; ``write=True`` takes the write lock up front."""

    #: How many calls a server runs on this store at once (its worker threads): as many as
    #: serve it best, a server's other requests waiting for a turn (transports/threads.py).
    concurrent_calls: int

    def transaction(
        self,
        *,
        write: bool,
        actor: str | None = None,
        meanwhile: Callable[[], None] | None = None,
        single: bool = False,
    ) -> AbstractContextManager[Transaction]:
        """One transaction on behalf of ``actor`` (a principal id). On PostgreSQL every
        row-level policy reads it; without one, no tenant row is visible or writable.

        ``meanwhile`` is called once, if the transaction's work ends without an error, while
        it commits where the backend can overlap the two (SQLite commits in another thread)
        and after the commit otherwise; it must not use the store. A failed commit is
        raised after it returns.

        ``single``: the caller runs one read statement and binds no actor (the token's
        lookup, on every request of a server). A statement is a transaction of its own, so
        PostgreSQL sends it alone, without BEGIN, the binding or COMMIT: one wait on the
        server instead of two. Refused with ``write`` or an ``actor``."""

    def flush_erased(self) -> None:
        """After a hard delete commits: make sure no copy of the erased content lingers in
        the backend's logs (best effort; a concurrent reader may postpone it)."""

    def bulk_load(self) -> AbstractContextManager[None]:
        """Around many large write transactions in a row (an import): the backend may spend
        more memory or log meanwhile, within fixed bounds, to go faster. What a transaction
        means does not change."""

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ImportedLesson:
    """A lesson an import adds: the record as read, where it lands (``owner``, and ``id``,
    which the record's own id unless derived, as a LoreKit lesson's is), its value digest and
    its pending version. The store writes ``owner`` and ``id``, not the record's."""

    lesson: Lesson
    owner: str
    id: str
    digest: str
    pending_version: int | None


@dataclass(frozen=True, slots=True)
class OwnerCaps:
    """What owner_stats and cap_defaults hold for one owner: its counters, its own caps (None:
    it follows the default) and the store's defaults (None: no cap)."""

    active_lessons: int
    stored_bytes: int
    max_active: int | None
    max_bytes: int | None
    default_active: int | None
    default_bytes: int | None

    @property
    def active_cap(self) -> int | None:
        return self.default_active if self.max_active is None else self.max_active

    @property
    def bytes_cap(self) -> int | None:
        return self.default_bytes if self.max_bytes is None else self.max_bytes


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A stored token: everything but the secret, which is kept only as ``token_hash``."""

    id: str
    principal: str
    name: str
    prefix: str
    permission: str
    scopes: tuple[str, ...] | None
    orgs: tuple[str, ...] | None
    created_at: str
    created_by: str
    expires_at: str | None = None
    revoked_at: str | None = None
    last_used_at: str | None = None


@dataclass(frozen=True, slots=True)
class Binding:
    """A scope pattern routed to an org, with the acting principal's role there (None: not a
    member)."""

    org: str
    pattern: str
    role: str | None


@dataclass(frozen=True, slots=True)
class Membership:
    org: str
    member: str
    role: str
    created_at: str


@dataclass(frozen=True, slots=True)
class Invite:
    id: str
    org: str
    invitee: str
    role: str
    created_by: str
    created_at: str
    expires_at: str
    accepted_at: str | None = None
    revoked_at: str | None = None
    revoked_by: str | None = None  # None with revoked_at: voided, its creator's role ended


@dataclass(frozen=True, slots=True)
class PolicyRow:
    scope: str
    revision_policy: str
    require_review: bool


@dataclass(frozen=True, slots=True)
class ProjectRepo:
    """One repository of one owner's project, as declared (``lorestore project add``)."""

    owner: str
    project: str
    repo: str
    added_at: str
    added_by: str
    ext: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecallRecord:
    recall_id: str
    owner: str
    at: str
    actor: str
    context: dict[str, Any]
    offered: list[dict[str, Any]]
    held: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    """A scope policy with its bookkeeping, as exported and imported."""

    owner: str
    policy: PolicyRow
    updated_at: str
    updated_by: str
    ext: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ForeignRecord:
    """An imported record whose ``type`` this lorestore does not know, kept as given."""

    owner: str
    digest: str
    type: str
    scope: str | None
    record: dict[str, Any]
    imported_at: str
    imported_by: str
