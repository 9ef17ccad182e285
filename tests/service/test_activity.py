"""memory_activity on both backends: writes, reviews, recalls and held lessons per day, counted
in the store; a scope-confined token is refused, an unconfined one answered."""

from __future__ import annotations

import dataclasses

import pytest
from tests.conftest import Clock

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    ActivityParams,
    DisputeParams,
    RecallParams,
    RejectParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService

ME = local_actor(session="s1")
S = "repo::acme/app"


def test_activity_per_day(service: LessonService, clock: Clock) -> None:
    service.memory_write(ME, WriteParams(scope=S, key="a", value="lesson a"))
    service.memory_write(ME, WriteParams(scope=S, key="b", value="lesson b"))
    clock.advance(days=1)
    service.memory_write(ME, WriteParams(scope=S, key="a", value="lesson a again"))
    service.memory_write(ME, WriteParams(scope=S, key="c", value="lesson c"))
    service.memory_verify(ME, VerifyParams(scope=S, key="a"))
    service.memory_reject(ME, RejectParams(scope=S, key="c", reason="wrong"))
    service.memory_dispute(ME, DisputeParams(scope=S, key="b", reason="doubt"))
    service.memory_recall(ME, RecallParams(repo="acme/app", task="lesson"))  # holds b
    service.memory_recall(ME, RecallParams(repo="acme/app"))
    days = service.memory_activity(ME, ActivityParams(days=3)).days
    assert [d.day for d in days] == ["2025-12-31", "2026-01-01", "2026-01-02"]
    assert [(d.writes, d.reviews, d.recalls) for d in days] == [(0, 0, 0), (2, 0, 0), (2, 2, 2)]
    assert days[2].held == 2  # the disputed lesson, held by each recall
    with pytest.raises(LorestoreError) as refused:
        service.memory_activity(dataclasses.replace(ME, scopes=(S,)), ActivityParams())
    assert refused.value.code == "forbidden"
    with pytest.raises(LorestoreError) as bad:
        service.memory_activity(ME, ActivityParams(days=0))
    assert bad.value.code == "invalid_argument"
