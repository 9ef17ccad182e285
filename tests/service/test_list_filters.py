"""memory_list's filters (a scope prefix, trust, state, the seen sort) on both backends, each
refusal beside a control that is listed."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.conftest import Clock

from lorestore.auth.actor import local_actor, local_agent
from lorestore.core.errors import LorestoreError
from lorestore.models import (
    ChangeParams,
    DisputeParams,
    ListParams,
    RejectParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService

ME = local_actor()


def write(
    service: LessonService, scope: str, key: str, value: str, session: str = "s1", **kw: Any
) -> None:
    params = WriteParams.model_validate({"scope": scope, "key": key, "value": value, **kw})
    service.memory_write(local_actor(session=session), params)


def keys(service: LessonService, actor: Any = ME, **kw: Any) -> list[str]:
    return [f"{x.scope}/{x.key}" for x in service.memory_list(actor, ListParams(**kw)).lessons]


def test_a_prefix_lists_every_scope_under_it_newest_first(
    service: LessonService, clock: Clock
) -> None:
    for scope, key in [
        ("repo::acme/app", "a"),
        ("repo::acme/api", "b"),
        ("branch::acme/app::main", "c"),
        ("repo::other/app", "d"),
        ("global", "e"),
    ]:
        clock.advance(seconds=1)
        write(service, scope, key, f"lesson {key}")
    assert keys(service, scope="repo::acme/*") == ["repo::acme/api/b", "repo::acme/app/a"]
    assert keys(service, scope="repo::*") == [
        "repo::other/app/d",
        "repo::acme/api/b",
        "repo::acme/app/a",
    ]
    assert keys(service, scope="repo::acme/app") == ["repo::acme/app/a"]  # control: exact
    for bad in ("*", "repo::*acme*", "repo:acme/*"):
        with pytest.raises(LorestoreError) as refused:
            service.memory_list(ME, ListParams(scope=bad))
        assert refused.value.code == "invalid_scope"


def test_trust_and_state_filters_and_rejected_lessons_never(
    service: LessonService, clock: Clock
) -> None:
    s = "repo::acme/app"
    for key in ("cand", "ver", "disp", "rej", "arch", "exp"):
        clock.advance(seconds=1)
        write(service, s, key, f"lesson {key}", **({"ttl_days": 1} if key == "exp" else {}))
    service.memory_verify(ME, VerifyParams(scope=s, key="ver"))
    service.memory_dispute(ME, DisputeParams(scope=s, key="disp", reason="doubt"))
    service.memory_reject(ME, RejectParams(scope=s, key="rej", reason="wrong"))
    service.memory_archive(ME, ChangeParams(scope=s, key="arch"))
    assert keys(service, scope=s, trust="verified") == [f"{s}/ver"]
    assert keys(service, scope="repo::*", trust="disputed") == [f"{s}/disp"]
    assert keys(service, scope=s, state="archived") == [f"{s}/arch"]
    assert keys(service, scope=s, state="expired") == []
    clock.advance(days=2)
    assert keys(service, scope=s, state="expired") == [f"{s}/exp"]
    active = keys(service, scope="repo::acme/*")
    assert sorted(active) == [f"{s}/cand", f"{s}/disp", f"{s}/ver"]  # no rejected, archived
    agent = local_agent(session="agent-1")
    with pytest.raises(LorestoreError) as refused:
        service.memory_list(agent, ListParams(scope=s, state="archived"))
    assert refused.value.code == "forbidden"
    assert sorted(keys(service, agent, scope=s, trust="verified")) == [f"{s}/ver"]  # control


def test_the_seen_sort_pages_by_keyset_without_loss(service: LessonService, clock: Clock) -> None:
    s = "repo::acme/app"
    for n in range(7):
        clock.advance(seconds=1)
        for session in range(n % 4):
            write(service, s, f"k{n}", f"lesson {n}", session=f"s{session}")
        if n % 4 == 0:
            write(service, s, f"k{n}", f"lesson {n}")
    seen: list[tuple[int, str]] = []
    cursor = None
    pages = 0
    while True:
        page = service.memory_list(
            ME, ListParams(scope="repo::acme/*", sort="seen", limit=2, cursor=cursor)
        )
        seen += [(x.seen_count, x.key) for x in page.lessons]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 4 and len(seen) == 7 and len({k for _, k in seen}) == 7
    assert [c for c, _ in seen] == sorted((c for c, _ in seen), reverse=True)
    other = service.memory_list(ME, ListParams(scope="repo::acme/*", sort="seen", limit=2))
    with pytest.raises(LorestoreError) as refused:  # a cursor of another listing
        service.memory_list(ME, ListParams(scope="repo::*", cursor=other.next_cursor))
    assert refused.value.code == "invalid_cursor"


def test_a_confined_token_lists_only_prefixes_within_its_scopes(service: LessonService) -> None:
    write(service, "repo::acme/app", "a", "lesson a")
    write(service, "repo::other/app", "b", "lesson b")
    confined = dataclasses.replace(ME, scopes=("repo::acme/*",))
    assert keys(service, confined, scope="repo::acme/*") == ["repo::acme/app/a"]
    with pytest.raises(LorestoreError) as refused:
        service.memory_list(confined, ListParams(scope="repo::*"))
    assert refused.value.code == "forbidden"
