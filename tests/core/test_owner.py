"""The owner value type: its three spellings, its rule for names, and its JSON form in records."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.core.records import Lesson

NAMES = st.from_regex(r"\A[a-z0-9][a-z0-9._-]{0,62}\Z")
KINDS = st.sampled_from(["user", "org"])


def test_spellings() -> None:
    alice = Owner.user("alice")
    assert (alice.kind, alice.name) == ("user", "alice")
    assert alice.key == str(alice) == "user:alice"
    assert alice.record() == {"user": "alice"}
    assert Owner.parse("user:alice") == Owner.of({"user": "alice"}) == alice
    acme = Owner.org("acme")
    assert Owner.org("org:acme") == Owner.parse("org:acme") == Owner.of({"org": "acme"}) == acme
    assert acme.key == "org:acme" and acme.record() == {"org": "acme"}
    assert acme.is_org and not alice.is_org
    assert Owner.user("user:alice") == alice
    assert Owner.parse("org:alice") != alice  # an org and a user of one name are two owners


def test_hashable_and_ordered() -> None:
    owners = [Owner.user("b"), Owner.org("z"), Owner.user("a"), Owner.org("a")]
    assert sorted(owners) == [Owner.org("a"), Owner.org("z"), Owner.user("a"), Owner.user("b")]
    assert len({*owners, Owner.parse("user:a")}) == 4
    with pytest.raises(AttributeError):
        owners[0].name = "c"  # type: ignore[misc]


@given(KINDS, NAMES)
def test_round_trips(kind: str, name: str) -> None:
    owner = Owner.parse(f"{kind}:{name}")
    assert (owner.kind, owner.name) == (kind, name)
    assert Owner.parse(owner.key) == owner
    assert Owner.of(owner.record()) == owner
    assert (Owner.user if kind == "user" else Owner.org)(name) == owner
    assert Owner(owner.kind, owner.name) == owner


@pytest.mark.parametrize(
    "key",
    [
        "",
        "alice",
        "user:",
        "org:",
        "team:acme",
        "user:Alice",
        "user:Bad Name",
        "user:-alice",
        "org:a/b",
        "user:" + "a" * 64,
        "user:alice:x",
    ],
)
def test_bad_keys_are_refused(key: str) -> None:
    with pytest.raises(LorestoreError) as refused:
        Owner.parse(key)
    assert refused.value.code == "invalid_argument"
    assert "user:NAME or org:SLUG" in (refused.value.hint or "")


@pytest.mark.parametrize(
    "record",
    [
        {},
        {"user": "a", "org": "b"},
        {"team": "a"},
        {"user": ""},
        {"org": "A"},
        {"user": ["a"]},
        {"user": 1},
        "user:a",
        None,
    ],
)
def test_bad_records_are_refused(record: object) -> None:
    with pytest.raises(LorestoreError) as refused:
        Owner.of(record)  # type: ignore[arg-type]
    assert refused.value.code == "invalid_argument"


def test_bad_constructions_are_refused() -> None:
    for make in (lambda: Owner("team", "a"), lambda: Owner("user", "A"), lambda: Owner.org("")):  # type: ignore[arg-type]
        with pytest.raises(LorestoreError) as refused:
            make()
        assert refused.value.code == "invalid_argument"


_LESSON = {
    "id": "00000000-0000-4000-8000-000000000001",
    "scope": "global",
    "key": "k",
    "value": "v",
    "owner": {"org": "acme"},
    "version": 1,
    "recorded_at": "2026-01-01T00:00:00.000000Z",
    "created_at": "2026-01-01T00:00:00.000000Z",
    "updated_at": "2026-01-01T00:00:00.000000Z",
}


def test_lesson_owner_keeps_its_json_form() -> None:
    lesson = Lesson.model_validate(_LESSON)
    assert lesson.owner == Owner.org("acme")
    assert lesson.model_dump()["owner"] == {"org": "acme"}
    assert json.loads(lesson.model_dump_json())["owner"] == {"org": "acme"}
    assert Lesson.__pydantic_validator__.validate_json(lesson.model_dump_json()) == lesson
    assert Lesson.model_validate({**_LESSON, "owner": Owner.org("acme")}) == lesson
    schema = {"additionalProperties": {"type": "string"}, "title": "Owner", "type": "object"}
    assert Lesson.model_json_schema()["properties"]["owner"] == schema
    assert Lesson.model_json_schema(mode="serialization")["properties"]["owner"] == schema


@pytest.mark.parametrize(
    "owner", [{"team": "acme"}, {"user": "Bad Name"}, {"user": ["a"]}, {}, "user:x", 3]
)
def test_lesson_refuses_a_bad_owner(owner: object) -> None:
    with pytest.raises(ValidationError):
        Lesson.model_validate({**_LESSON, "owner": owner})
    with pytest.raises(ValidationError):
        Lesson.__pydantic_validator__.validate_json(json.dumps({**_LESSON, "owner": owner}))
