"""Recall's candidates from rows, on either store: the full-text matches over the ladder and
each rung's newest and newest trusted lessons, as heads decided on now and records decoded
only when offered; and the recall log's rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from operator import itemgetter
from typing import Any

from lorestore.core.jsontext import dumps
from lorestore.core.rarity import rarity_scores
from lorestore.core.recall import FileBlob, LessonHead
from lorestore.storage.protocol import RecallRecord, RecallRow
from lorestore.storage.rows import RowLike, json_field, json_value, lesson_from_row, ts_text

# The columns a recall candidate's head is read from, in the order recall_rows unpacks them.
_RECALL_HEAD = (
    "id",
    "scope",
    "key",
    "value",
    "trust",
    "version",
    "seen_count",
    "recorded_at",
    "updated_at",
    "expires_at",
    "source_agent",
    "source_author",
    "source_commit",
    "depends_on",
    "owner",
    "value_digest",
    "score",
    "valid_from",
    "valid_to",
    "source",
)


def gather_recall(matched: Sequence[RowLike], pages: Sequence[RowLike]) -> list[RecallRow]:
    """Recall's candidates on either store: the full-text matches over all rungs
    (``matched``: the task's words' ``recall_by_text`` rows, best first), then each rung's
    newest and newest trusted lessons (``pages``: ``recall_pages``'s rows), each lesson once."""
    found: dict[str, RecallRow] = {}
    if matched:
        hits = recall_rows(matched)
        scores = text_scores(matched)
        if scores is not None:
            hits = [hit._replace(score=score) for hit, score in zip(hits, scores, strict=True)]
        for hit in hits:
            found[hit.head.id] = hit
    for hit in recall_rows(pages):
        found.setdefault(hit.head.id, hit)
    return list(found.values())


def text_scores(rows: Sequence[RowLike]) -> list[float] | None:
    """The full-text hits' scores where the query returns each word's rank alone (PostgreSQL's
    ``term_ranks``: ``ts_rank_cd`` knows no word rarity): those ranks weighed by each word's
    rarity among these hits (core/rarity.py). None where the store's own score stands
    (SQLite's BM25 counts rarity itself)."""
    if not rows or "term_ranks" not in rows[0].keys():  # noqa: SIM118 (a sqlite3.Row's `in` looks at values)
        return None
    return rarity_scores([row["term_ranks"] for row in rows], [row["key"] for row in rows])


def recall_rows(rows: Sequence[RowLike]) -> list[RecallRow]:
    """Recall candidates from lessons rows with a ``score`` and ``source_agent``,
    ``source_author``, ``source_commit`` (extracted by the query: decoding each row's source
    in Python cost more): the head now, the record (the same row through lesson_from_row)
    when asked for. A sqlite3.Row finds a column by name with a linear scan, so its columns
    are read by position, found once per result."""
    if not rows:
        return []
    first = rows[0]
    keys: Sequence[str | int] = _RECALL_HEAD
    if not isinstance(first, Mapping):
        names = list(first.keys())
        keys = [names.index(name) for name in _RECALL_HEAD]
    read = itemgetter(*keys)
    found = []
    for row in rows:
        (id_, scope, key, value, trust, version, seen, recorded, updated, expires, agent,
         author, commit, depends_on, owner, digest, score, valid_from,
         valid_to, source) = read(row)  # fmt: skip
        head = LessonHead(
            str(id_),
            scope,
            key,
            value,
            trust,
            version,
            seen,
            ts_text(recorded) or "",
            ts_text(updated) or "",
            ts_text(expires),
            agent,
            author,
            commit,
            tuple(FileBlob(d["path"], d["blob"]) for d in json_field(depends_on, [])),
            ts_text(valid_from),
            ts_text(valid_to),
            _association(source),
        )
        found.append(RecallRow(head, owner, digest, float(score), partial(lesson_from_row, row)))
    return found


def _association(source: Any) -> str | None:
    """``source.author_association``, decoded only from a source that holds one (a GitHub
    capture's): every other candidate pays a substring test, not a JSON decode. PostgreSQL
    returns the jsonb decoded already."""
    if isinstance(source, Mapping):
        found = source.get("author_association")
    elif isinstance(source, str) and '"author_association"' in source:
        found = json_field(source, {}).get("author_association")
    else:
        return None
    return found if isinstance(found, str) else None


def recall_params(record: RecallRecord) -> dict[str, Any]:
    return {
        "recall_id": record.recall_id,
        "owner": record.owner,
        "at": record.at,
        "actor": record.actor,
        "context": dumps(record.context),
        "offered": dumps(record.offered),
        "held": dumps(record.held),
    }


def recall_from_row(row: RowLike) -> RecallRecord:
    return RecallRecord(
        recall_id=str(row["recall_id"]),
        owner=row["owner"],
        at=ts_text(row["at"]) or "",
        actor=row["actor"],
        context=json_value(row["context"]),
        offered=json_value(row["offered"]),
        held=json_value(row["held"]),
    )
