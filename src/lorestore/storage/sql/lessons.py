"""The shared primitives on lessons: the served row, versions, sessions, tombstones, the reads
of many lessons (list, search, review queue, sweeps) and recall's candidates."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lorestore.core.jsontext import dumps
from lorestore.core.validation import CANONICAL_UUID
from lorestore.storage.protocol import (
    LessonFilter,
    RecallRecord,
    RecallRow,
    ScopeCount,
    SearchHit,
    StoredLesson,
    Tombstone,
)
from lorestore.storage.recall_rows import gather_recall, recall_from_row, recall_params, text_scores
from lorestore.storage.rows import (
    lesson_params,
    tombstone_params,
    version_from_row,
    version_params,
)
from lorestore.storage.sql.base import SQLBase, stored
from lorestore.storage.sql.word_shares import Span, WordShares

if TYPE_CHECKING:
    from lorestore.core.records import Lesson, LessonVersion

# How often a search's words occur is told by the newest COMMON_SAMPLE lessons (the whole
# store, when it is smaller; LessonPrimitives._word_classes, docs/search.md):
# - a word held by at least half of them, and by more than COMMON_FLOOR, is common: not ranked;
# - a word held by at least one in FREQUENT_SHARE of them is frequent: ranked among the newest
#   lessons only, as many as hold about RANKED of its matches;
# - the others are ranked over every match, as a small store ranks every word.
COMMON_FLOOR = 1000
COMMON_SAMPLE = 2 * COMMON_FLOOR
FREQUENT_SHARE = 32
RANKED = 2000
# Recall ranks less than a search (it takes 25 lessons a rung, weighed with their vectors,
# trust and scope too) and runs at every prompt: its words are told by the newest
# RECALL_SAMPLE lessons (a quarter of the cost), none of them common (a full sample cannot
# hold more than COMMON_FLOOR), and one held by one in RECALL_SHARE of them is frequent, its
# window the newest lessons holding about RECALL_RANKED of its matches.
RECALL_SAMPLE = 500
RECALL_SHARE = 128
RECALL_RANKED = 500
# Row keys bound no window: every key is below this one.
NO_BOUND = 2**63 - 1

# The trust states of served lessons, counted per scope by scope_counts.
ACTIVE_TRUST = ("candidate", "corroborated", "verified", "disputed")


def _session_params(pk: int, value_digest: str, session: str, at: str) -> dict[str, Any]:
    return {"pk": pk, "value_digest": value_digest, "session": session, "at": at}


@dataclass(slots=True)
class WordClasses:
    """A search's words by how it ranks them (LessonPrimitives._word_classes)."""

    common: list[str] = field(default_factory=list)
    frequent: list[str] = field(default_factory=list)
    rare: list[str] = field(default_factory=list)
    since: int = 0  # the frequent words are ranked in lessons from this row key on


class LessonPrimitives(SQLBase):
    """Lessons, versions, sessions, tombstones, reads and recall, over the dialect."""

    # Set by the store on each transaction it opens: its kept word shares, and whose lessons
    # this transaction's counts cover (the actor under PostgreSQL's row-level security).
    _word_shares: WordShares | None = None  # none: a transaction of no store counts afresh
    _reader: str = ""

    # Lessons and their versions.

    def ask_lesson_at(self, owner: str, scope: str, key: str) -> None:
        self._ask("lesson_at", {"owner": owner, "scope": scope, "key": key})

    def ask_new_lesson_key(self) -> None:
        """Nothing here: the insert reports its key (PostgreSQL reserves one early)."""

    def _reserved_key(self) -> int | None:
        """The key reserved for the next new lesson (None: the insert's own)."""
        return None

    def lesson_at(self, owner: str, scope: str, key: str) -> StoredLesson | None:
        row = self._one("lesson_at", {"owner": owner, "scope": scope, "key": key})
        return self._stored_doc(row) if row else None

    def lessons_with_keys(self, owner: str, scope: str, keys: Sequence[str]) -> list[StoredLesson]:
        params = {"owner": owner, "scope": scope, "keys": self._array(keys)}
        return [self._stored_doc(r) for r in self._all("lessons_with_keys", params)]

    def insert_lesson(self, lesson: Lesson, value_digest: str) -> int:
        # Under the key reserved for it, if one was (then its insert needs no answer).
        params = lesson_params(lesson, value_digest, None) | {"pk": self._reserved_key()}
        pk = self._inserted("insert_lesson", params)
        self._embed([(pk, lesson)])
        return pk

    def save_lesson(
        self, pk: int, lesson: Lesson, value_digest: str, pending_version: int | None = None
    ) -> None:
        params = lesson_params(lesson, value_digest, pending_version)
        params["pk"] = pk
        self._exec("save_lesson", params)
        self._embed([(pk, lesson)])

    def delete_lesson(self, pk: int) -> None:
        self._exec("delete_lesson", {"pk": pk})

    def insert_version(self, pk: int, version: LessonVersion) -> None:
        self._insert_rows("insert_versions", [version_params(pk, version)])

    def versions(self, pk: int, lesson_id: str) -> list[LessonVersion]:
        return [version_from_row(r, lesson_id) for r in self._all("versions", {"pk": pk})]

    def version(self, pk: int, lesson_id: str, number: int) -> LessonVersion | None:
        row = self._one("version", {"pk": pk, "number": number})
        return version_from_row(row, lesson_id) if row else None

    def max_version(self, pk: int) -> int:
        row = self._one("max_version", {"pk": pk})
        return int(row["n"]) if row and row["n"] is not None else 0

    def set_version_state(
        self, pk: int, number: int, state: str, *, accepted_at: str | None = None
    ) -> None:
        params = {"pk": pk, "number": number, "state": state, "accepted_at": accepted_at}
        self._exec("set_version_state", params)

    def version_at(
        self, pk: int, lesson_id: str, *, as_of: str | None, valid_at: str | None
    ) -> LessonVersion | None:
        row = self._one("version_at", {"pk": pk, "as_of": as_of, "valid_at": valid_at})
        return version_from_row(row, lesson_id) if row else None

    def trust_events(
        self, owner: str, scope: str, key: str, lesson_id: str, at: str
    ) -> list[tuple[str, str | None]]:
        params = {"owner": owner, "scope": scope, "key": key, "lesson_id": lesson_id, "at": at}
        return [(r["action"], r["trust"]) for r in self._all("trust_events", params)]

    def add_session(self, pk: int, value_digest: str, session: str, at: str) -> None:
        self._exec("add_session", _session_params(pk, value_digest, session, at))

    def count_session(self, pk: int, value_digest: str, session: str, at: str) -> bool:
        return self._count("add_session", _session_params(pk, value_digest, session, at)) == 1

    def clear_sessions(self, pk: int) -> None:
        self._exec("clear_sessions", {"pk": pk})

    # Tombstones.

    def insert_tombstone(self, tombstone: Tombstone) -> None:
        self._exec("insert_tombstone", tombstone_params(tombstone))

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
        params = {
            "owner": owner,
            "scope": scope,
            "value_digest": value_digest,
            "lifted_by": lifted_by,
            "at": at,
            "reason": reason,
            "lesson_id": lesson_id,
        }
        return self._count("lift_tombstones", params)

    def lessons_with_digest(self, owner: str, value_digest: str) -> list[StoredLesson]:
        rows = self._all("lessons_with_digest", {"owner": owner, "value_digest": value_digest})
        return [stored(r) for r in rows]

    # Reads of many lessons.

    def review_queue(
        self, owners: Sequence[str], scope: str | None, *, now: str, limit: int
    ) -> list[tuple[str, StoredLesson]]:
        params = {"owners": self._array(owners), "scope": scope, "now": now, "limit": limit}
        return [(r["queue_reason"], stored(r)) for r in self._all("review_queue", params)]

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
        # Tags bind as JSON text on both backends (json_each on SQLite, jsonb @> on
        # PostgreSQL); a driver looks up only the names its statement uses.
        params = {
            "owner": owner,
            "scope": scope,
            "now": now,
            "limit": limit + 1,
            "after_at": after[0] if after else None,
            "after_pk": after[1] if after else None,
            "tags": dumps(list(tags)),
            "ntags": len(tags),
        }
        rows = self._all("list_lessons", params)
        decode = self._stored_doc
        return [decode(r) for r in rows[:limit]], len(rows) > limit

    def browse_lessons(self, query: LessonFilter) -> tuple[list[StoredLesson], bool]:
        after_value, after_pk = query.after if query.after else (None, None)
        params = {
            "owners": self._array(query.owners),
            "scope": query.scope,
            "prefix": query.prefix,
            "trust": query.trust,
            "state": query.state,
            "now": query.now,
            "limit": query.limit + 1,
            "after_at": after_value if query.sort == "updated" else None,
            "after_seen": after_value if query.sort == "seen" else None,
            "after_pk": after_pk,
            "tags": dumps(list(query.tags)),
            "ntags": len(query.tags),
        }
        if query.sort == "seen":
            rows = self._all("browse_by_seen", params)
        elif query.trust is not None:
            rows = self._browse_by_trust(params)
        else:
            rows = self._all("browse_by_updated", params)
        decode = self._stored_doc
        return [decode(r) for r in rows[: query.limit]], len(rows) > query.limit

    def _browse_by_trust(self, params: dict[str, Any]) -> list[Any]:
        """The newest lessons of one trust: PostgreSQL's planner finds them in
        lessons_by_trust from browse_by_updated itself; SQLite is told (its dialect)."""
        return self._all("browse_by_updated", params)

    def search(
        self,
        addresses: Sequence[tuple[str, str]],
        terms: Sequence[str],
        *,
        tags: Sequence[str],
        now: str,
        limit: int,
    ) -> list[SearchHit]:
        params = self._search_addresses(addresses)
        params.update(now=now, tags=dumps(list(tags)), ntags=len(tags))
        params["match"] = self._match(list(terms))
        words = self._word_classes(terms)
        ranked = words.frequent + words.rare
        rows: list[Any] = []
        if ranked:
            window = {"find": self._match(ranked), "since": words.since, "before": NO_BOUND}
            rows = self._all("search", params | window | {"limit": limit})
            if words.since and words.rare:
                # The lessons before the window are ranked by the rarer words alone (a frequent
                # word adds little to a score: BM25 weighs a word by its rarity); both pages
                # merge by score, and the cut to the limit comes at the end.
                older = {"find": self._match(words.rare), "since": 0, "before": words.since}
                rows += self._all("search", params | older | {"limit": limit})
                rows.sort(key=lambda r: -float(r["score"]))
        unranked = words.common + (words.frequent if words.since else [])
        if unranked and len(rows) < limit:
            # Lessons holding only common words, or only frequent ones before the window:
            # newest first as the index gives them, in their scores' order after the others.
            # Every match in the window is here already (fewer than the limit were found).
            seen = {r["pk"] for r in rows}
            newest = self._all(
                "search_newest",
                params | {"find": self._match(unranked), "limit": limit + len(rows)},
            )
            more = [r for r in newest if r["pk"] not in seen][: limit - len(rows)]
            rows += sorted(more, key=lambda r: -float(r["score"]))
        decode = self._doc_lesson
        rescored = text_scores(rows)
        scores = [float(r["score"]) for r in rows] if rescored is None else rescored
        hits = [
            SearchHit(decode(r), s, r["snippet"], r["value_digest"])
            for r, s in zip(rows, scores, strict=True)
        ]
        if rescored is not None:  # else the store's order and scores stand
            hits.sort(key=lambda hit: -hit.score)  # stable: ties keep the store's order
        return hits[:limit]

    def _word_classes(
        self,
        terms: Sequence[str],
        *,
        sample: int | None = None,
        share: int | None = None,
        ranked: int | None = None,
    ) -> WordClasses:
        """How a search ranks each of its words, told by how many of the newest ``sample``
        (COMMON_SAMPLE unless given) lessons hold it (the whole store, when it holds fewer), at
        a cost that does not grow with the store (docs/search.md):

        - common (at least half of them, more than COMMON_FLOOR): BM25 gives such a word no
          weight (FTS5 clamps its idf to 1e-6), yet ranking its matches means scoring most of
          the store; not ranked, its lessons listed after the ranked ones, newest first;
        - frequent (at least one in ``share``, FREQUENT_SHARE unless given): ranked among the
          newest lessons only, from ``since``, the row key where as many begin as hold about
          ``ranked`` (RANKED unless given) of the frequent words' matches (0, every lesson,
          when the store holds fewer, or no more than the sample);
        - rare: ranked over every match."""
        sample = COMMON_SAMPLE if sample is None else sample
        share = FREQUENT_SHARE if share is None else share
        ranked = RANKED if ranked is None else ranked
        kept, reader = self._word_shares, self._reader
        span, known = kept.get(reader, sample, terms) if kept else (None, {})
        missing = [t for t in dict.fromkeys(terms) if t not in known]
        if span is None or missing:  # only the words not counted lately are counted
            words = self._array([self._match([t]) for t in missing])
            row = self._one("word_shares", {"words": words, "sample": sample})
            held = row["held"]
            if isinstance(held, str):  # SQLite's JSON arrives as text
                held = json.loads(held)
            span = Span(int(row["total"]), row["oldest"] or 0, row["newest"] or 0)
            counted = dict(zip(missing, held, strict=True))
            if kept:
                kept.keep(reader, sample, span, counted)
            known |= counted
        total = span.total
        classes = WordClasses()
        holders = 0  # the frequent words' matches among the sampled lessons
        for term in terms:
            n = known[term]
            if n > COMMON_FLOOR and 2 * n >= total:
                classes.common.append(term)
            elif n and share * n >= total:
                classes.frequent.append(term)
                holders += n
            else:
                classes.rare.append(term)
        if classes.frequent and total == sample:  # a smaller store is ranked whole
            window = -(-ranked * total // holders)  # lessons holding about `ranked` matches
            # Where the window starts, told by the sample: its lessons' share of the row keys
            # they span (the reader's share of what was written lately) carried back.
            keys = -(-window * (span.newest - span.oldest + 1) // total)
            classes.since = max(0, span.newest + 1 - keys)
        return classes

    def scope_counts(self, owners: Sequence[str], now: str) -> list[ScopeCount]:
        rows = self._all("scope_counts", {"owners": self._array(owners), "now": now})
        return [
            ScopeCount(
                r["owner"],
                r["scope"],
                r["active"],
                r["archived"],
                r["expired"],
                r["rejected"],
                {t: r[t] for t in ACTIVE_TRUST},
            )
            for r in rows
        ]

    def archived_before(self, owner: str, cutoff: str, limit: int) -> list[StoredLesson]:
        rows = self._all("archived_before", {"owner": owner, "cutoff": cutoff, "limit": limit})
        return [stored(r) for r in rows]

    def expired_before(self, owner: str, now: str, limit: int) -> list[StoredLesson]:
        rows = self._all("expired_before", {"owner": owner, "now": now, "limit": limit})
        return [stored(r) for r in rows]

    def due_owners(self, now: str, archived_cutoff: str, recall_cutoff: str) -> list[str]:
        params = {"now": now, "archived_cutoff": archived_cutoff, "recall_cutoff": recall_cutoff}
        return sorted(str(r["owner"]) for r in self._all("due_owners", params))

    def purge_recall_log(self, owner: str, cutoff: str) -> int:
        return self._count("purge_recall_log", {"owner": owner, "cutoff": cutoff})

    # Recall.

    def recall_candidates(
        self, addresses: Sequence[tuple[str, str]], terms: Sequence[str] | None, *, limit: int
    ) -> list[RecallRow]:
        if not addresses:
            return []
        matched: list[Any] = []
        if terms:
            matched = self._recall_matches(addresses, terms, limit * len(addresses))
        pages = self._all("recall_pages", self._recall_addresses(addresses) | {"limit": limit})
        return gather_recall(matched, pages)

    def _recall_matches(
        self, addresses: Sequence[tuple[str, str]], terms: Sequence[str], limit: int
    ) -> list[Any]:
        """The lessons of the ladder the task's words match, best first, ranked as a search
        ranks them (_word_classes): a common word not at all, a frequent one among the newest
        lessons only, the rarer ones over every lesson. What only common or older frequent
        words would find, each rung's newest and trusted lessons stand for (recall_pages)."""
        words = self._word_classes(
            terms, sample=RECALL_SAMPLE, share=RECALL_SHARE, ranked=RECALL_RANKED
        )
        ranked = words.frequent + words.rare
        if not ranked:
            return []
        params = self._recall_addresses(addresses)
        params.update(match=self._match(list(terms)), limit=limit)
        window = {"find": self._match(ranked), "since": words.since, "before": NO_BOUND}
        rows = self._all("recall_by_text", params | window)
        if words.since and words.rare:  # before the window, the rarer words alone (as search)
            older = {"find": self._match(words.rare), "since": 0, "before": words.since}
            rows += self._all("recall_by_text", params | older)
            rows.sort(key=lambda r: -float(r["score"]))
            del rows[limit:]
        return rows

    def rungs_with_more(
        self, addresses: Sequence[tuple[str, str]], weighed: Sequence[int]
    ) -> list[bool]:
        if not addresses:
            return []
        params = self._recall_addresses(addresses) | {"cap": max(weighed) + 1}
        counted = [int(r["n"]) for r in self._all("count_recall_rungs", params)]
        return [n > than for n, than in zip(counted, weighed, strict=True)]

    def insert_recall(self, record: RecallRecord) -> None:
        self._exec("insert_recall", recall_params(record))

    def activity(
        self, owners: Sequence[str], since: str
    ) -> tuple[list[tuple[str, str, int]], list[tuple[str, int, int]]]:
        params = {"owners": self._array(owners), "since": since}
        audit = [(r["day"], r["action"], int(r["n"])) for r in self._all("audit_activity", params)]
        recalls = [
            (r["day"], int(r["recalls"]), int(r["held"] or 0))
            for r in self._all("recall_activity", params)
        ]
        return audit, recalls

    def recent_recalls(
        self, owners: Sequence[str], since: str, lesson_id: str | None, limit: int
    ) -> list[RecallRecord]:
        params = {"owners": self._array(owners), "since": since, "limit": limit}
        if lesson_id is None:
            return [recall_from_row(r) for r in self._all("recent_recalls", params)]
        # Text that is no lesson id names no recall (and SQLite's index, which holds each id as
        # one token, is asked only for one); PostgreSQL finds the lesson by jsonb containment.
        if not CANONICAL_UUID.match(lesson_id):
            return []
        params.update(lesson_id=lesson_id, lesson=dumps([{"lesson_id": lesson_id}]))
        return [recall_from_row(r) for r in self._all("recalls_of_lesson", params)]

    def get_recall(self, owners: Sequence[str], recall_id: str) -> RecallRecord | None:
        if not self._valid_id(recall_id):
            return None
        row = self._one("get_recall", {"recall_id": recall_id, "owners": self._array(owners)})
        return recall_from_row(row) if row else None
