"""memory_recalls: the recall log, newest first, and one lesson's recalls, on both backends,
through the service; a confined token sees no recall naming a scope beyond it."""

from __future__ import annotations

import dataclasses

from tests.conftest import Clock

from lorestore.auth.actor import local_actor
from lorestore.models import ReadParams, RecallParams, RecallsParams, WriteParams
from lorestore.service import LessonService

ME = local_actor()


def test_recent_recalls_and_one_lessons(service: LessonService, clock: Clock) -> None:
    for scope, key, value in [
        ("repo::acme/app", "pg", "The test database listens on 5433"),
        ("repo::acme/app", "ci", "CI caches the image"),
        ("global", "style", "Prefer small functions"),
    ]:
        service.memory_write(ME, WriteParams(scope=scope, key=key, value=value))
    first = service.memory_recall(ME, RecallParams(repo="acme/app", task="database"))
    clock.advance(minutes=5)
    second = service.memory_recall(ME, RecallParams(task="style"))
    recent = service.memory_recalls(ME, RecallsParams())
    assert [r.recall_id for r in recent.recalls] == [second.recall_id, first.recall_id]
    assert not recent.more
    pg = service.memory_read(ME, ReadParams(scope="repo::acme/app", key="pg")).lesson
    mine = service.memory_recalls(ME, RecallsParams(lesson_id=pg.id))
    assert [r.recall_id for r in mine.recalls] == [first.recall_id]  # not the global one
    assert pg.id in {e.lesson_id for e in mine.recalls[0].offered}
    one = service.memory_recalls(ME, RecallsParams(limit=1))
    assert [r.recall_id for r in one.recalls] == [second.recall_id] and one.more
    clock.advance(days=2)
    assert service.memory_recalls(ME, RecallsParams()).recalls == []  # a day by default
    old = service.memory_recalls(ME, RecallsParams(since="2020-01-01T00:00:00Z"))
    assert len(old.recalls) == 2
    confined = dataclasses.replace(ME, scopes=("global",))
    seen = service.memory_recalls(confined, RecallsParams(since="2020-01-01T00:00:00Z"))
    assert [r.recall_id for r in seen.recalls] == [second.recall_id]
