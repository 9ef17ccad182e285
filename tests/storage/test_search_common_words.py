"""A search word held by most lessons (more than ``COMMON_FLOOR`` of them, and at least half)
is not ranked, on both backends: BM25 gives it no weight, and ranking its matches meant
scoring most of the store. The search ranks its other words' matches as ever and lists the
lessons holding only common words after them, newest first. A frequent word (held by one in
``FREQUENT_SHARE``) is ranked among the newest lessons only. Through the service's
``memory_search``, as every surface calls it, with the ranked path beside it as control."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.portable import import_lines, lesson, line

from lorestore.auth.actor import local_actor
from lorestore.models import RecallParams, SearchParams
from lorestore.service import LessonService
from lorestore.storage.protocol import Store
from lorestore.storage.sql import lessons, word_shares
from lorestore.storage.sql.lessons import COMMON_FLOOR, COMMON_SAMPLE

ME = local_actor(session="common-1")
APP = "repo::acme/app"
COMMON = COMMON_FLOOR + 100  # lessons holding the common word
RARE = 30  # of them, also holding the rare word


def filled(store: Store) -> LessonService:
    """COMMON lessons holding "widget" (the last RARE also "quasar", the rarer the later the
    more often), and 20 holding neither: "widget" is held by more than the floor and more
    than half of the lessons."""
    records: list[dict[str, Any]] = []
    for n in range(COMMON):
        rare = n >= COMMON - RARE
        extra = " quasar" * (1 + n % 3) if rare else ""
        records.append(lesson(f"w{n:05d}", f"The widget number {n} needs care.{extra}", APP))
    records += [lesson(f"o{n:02d}", f"Other lesson {n} about nothing.", APP) for n in range(20)]
    service = LessonService(store)
    result = import_lines(service, [line(r) for r in records])
    assert result.lessons.added == len(records), result
    return service


def keys(service: LessonService, query: str, limit: int) -> list[str]:
    found = service.memory_search(ME, SearchParams(query=query, scopes=[APP], limit=limit))
    return [hit.lesson.key for hit in found.hits]


@pytest.mark.lexical
def test_a_common_words_matches_are_listed_newest_first_after_the_ranked_ones(
    store: Store,
) -> None:
    service = filled(store)
    rare = {f"w{n:05d}" for n in range(COMMON - RARE, COMMON)}
    # Control: a rare word alone is ranked as ever, every lesson holding it found.
    assert set(keys(service, "quasar", 100)) == rare
    # The common word alone: the newest lessons holding it (imported in key order).
    newest = keys(service, "widget", 40)
    assert sorted(newest) == [f"w{n:05d}" for n in range(COMMON - 40, COMMON)]
    # Both words: every lesson holding the rare one first, ranked by it; then the newest of
    # those holding only the common word.
    both = keys(service, "widget quasar", 50)
    assert set(both[:RARE]) == rare
    assert both[RARE:] == [f"w{n:05d}" for n in range(COMMON - RARE - 1, COMMON - 50 - 1, -1)]
    # Ranked by the rare word: a lesson holding it three times comes before one holding it
    # once, as in the rare word's own search.
    holders = range(COMMON - RARE, COMMON)
    three = f"w{max(n for n in holders if n % 3 == 2):05d}"
    once = f"w{max(n for n in holders if n % 3 == 0):05d}"
    assert both.index(three) < both.index(once)
    assert keys(service, "quasar", 100).index(three) < keys(service, "quasar", 100).index(once)


@pytest.mark.lexical
def test_a_word_under_the_floor_is_ranked_however_many_hold_it(store: Store) -> None:
    """Below the floor every match is ranked: in a small store a word all lessons hold still
    puts the lesson holding it most often first (the control: the same store's ranking)."""
    service = LessonService(store)
    lines = [line(lesson(f"k{n}", f"Deploy step {n}.", APP)) for n in range(5)]
    lines.append(line(lesson("many", "Deploy, deploy, deploy: the deploy step.", APP)))
    assert import_lines(service, lines).lessons.added == 6
    assert keys(service, "deploy", 1) == ["many"]


@pytest.mark.lexical
def test_how_common_a_word_is_is_told_by_the_newest_lessons(store: Store) -> None:
    """A word held by half the store, but only by its older lessons, is ranked: the newest
    COMMON_SAMPLE lessons decide, so the cost of deciding does not grow with the store. (The
    first test is the control: there the newest lessons hold the word, which is not ranked.)"""
    older = COMMON_SAMPLE - COMMON_FLOOR // 2  # hold "widget"; the newest sample holds a quarter
    records = [lesson(f"w{n:05d}", f"The widget number {n} needs care.", APP) for n in range(older)]
    records[0] = lesson("w00000", "The widget, the widget and the widget again.", APP)
    records += [lesson(f"o{n:05d}", f"Other lesson {n}.", APP) for n in range(older)]
    service = LessonService(store)
    assert import_lines(service, [line(r) for r in records]).lessons.added == len(records)
    assert keys(service, "widget", 1) == ["w00000"]  # ranked: held most often, oldest


def frequent(store: Store, monkeypatch: pytest.MonkeyPatch) -> LessonService:
    """250 lessons, a third holding "webhook" (frequent, not common), with the sample, floor
    and window made small (the numbers a store of 100k meets, at a test's size): ranked among
    the newest lessons holding about RANKED = 20 of its matches. The oldest lesson holds it
    most (in its key and three times in its text) and also holds "quasar"; a recent one holds
    it three times."""
    monkeypatch.setattr(lessons, "COMMON_SAMPLE", 200)
    monkeypatch.setattr(lessons, "COMMON_FLOOR", 100)
    monkeypatch.setattr(lessons, "RANKED", 20)
    records = [
        lesson(f"n{n:04d}", f"Lesson {n}: the webhook step." if n % 3 == 0 else f"Lesson {n}.")
        for n in range(250)
    ]
    records[0] = lesson("webhook-first", "The webhook, the webhook, the webhook: quasar.", APP)
    records[240] = lesson("n0240", "Lesson 240: the webhook, webhook and webhook again.", APP)
    service = LessonService(store)
    assert import_lines(service, [line(r) for r in records]).lessons.added == len(records)
    return service


@pytest.mark.lexical
def test_a_frequent_word_is_ranked_among_the_newest_lessons(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = frequent(store, monkeypatch)
    holders = ["webhook-first"] + [f"n{n:04d}" for n in range(3, 250, 3)]
    # The best match of the newest lessons first; the oldest, best of all, not on the page.
    first = keys(service, "webhook", 10)
    assert first[0] == "n0240" and "webhook-first" not in first
    # A page the window's matches do not fill takes the older ones: every lesson holding the
    # word is found, once.
    listed = keys(service, "webhook", 100)
    assert sorted(listed) == sorted(holders)
    # A rarer word of the same search is ranked over every lesson, the older ones too.
    assert keys(service, "webhook quasar", 1) == ["webhook-first"]
    assert keys(service, "quasar", 5) == ["webhook-first"]
    # Control: with a window as large as the store, the oldest lesson is the best match.
    monkeypatch.setattr(lessons, "RANKED", 10_000)
    assert keys(service, "webhook", 1) == ["webhook-first"]


def recalled(service: LessonService, task: str) -> list[str]:
    found = service.memory_recall(ME, RecallParams(repo="acme/app", task=task, budget=20000))
    return [o.lesson.key for o in found.offered]


@pytest.mark.lexical
def test_recall_ranks_a_frequent_word_among_the_newest_lessons(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall's full-text pass ranks a task's words as search does: a frequent word among the
    newest lessons only, a rarer word over every lesson (the rung's newest lessons are
    candidates anyway, however the task is worded)."""
    service = frequent(store, monkeypatch)
    monkeypatch.setattr(lessons, "RECALL_SAMPLE", 200)
    monkeypatch.setattr(lessons, "RECALL_RANKED", 20)
    # The best match of all is the oldest lesson: outside the window, not a candidate.
    first = recalled(service, "webhook")
    assert first[0] == "n0240" and "webhook-first" not in first
    # A rarer word of the task is ranked over every lesson: the oldest found and first.
    assert recalled(service, "webhook quasar")[0] == "webhook-first"
    # Control: with a window as large as the store, the oldest lesson is the best match.
    monkeypatch.setattr(lessons, "RECALL_RANKED", 10_000)
    assert recalled(service, "webhook")[0] == "webhook-first"


def shares_counted(store: Store, words: list[str], actor: str = ME.principal) -> list[int]:
    """The word counts a search and a recall of ``words`` made, as the number of words each
    ``word_shares`` query counted, in a transaction of the store as ``actor`` (as the service
    opens it)."""
    counted: list[int] = []
    with store.transaction(write=False, actor=actor) as tx:
        run = tx._one

        def counting(name: str, params: Any) -> Any:
            if name == "word_shares":
                asked = params["words"]
                counted.append(len(json.loads(asked) if isinstance(asked, str) else asked))
            return run(name, params)

        tx._one = counting  # type: ignore[method-assign]
        tx.search([(ME.principal, APP)], words, tags=[], now="2026-01-01T00:00:00Z", limit=5)
        tx.recall_candidates([(ME.principal, APP)], words, limit=5)
    return counted


def test_word_shares_are_counted_once_for_a_while(store: Store) -> None:
    now = [0.0]
    store.word_shares = word_shares.WordShares(clock=lambda: now[0])  # type: ignore[attr-defined]
    service = LessonService(store)
    assert import_lines(service, [line(lesson("a", "The widget needs care."))]).lessons.added
    # Two counts (a search's sample and recall's), each of both words.
    assert shares_counted(store, ["widget", "care"]) == [2, 2]
    assert shares_counted(store, ["widget", "care"]) == []  # kept
    assert shares_counted(store, ["widget", "gizmo"]) == [1, 1]  # only the word not counted yet
    # Once the counts are TTL seconds old, they are counted again.
    now[0] += word_shares.TTL + 1
    assert shares_counted(store, ["widget", "care"]) == [2, 2]
    assert shares_counted(store, ["care", "widget"]) == []
