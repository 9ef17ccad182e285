"""The interchange format's parsers, pure: unknown fields leave a record and come back at the
level they came from; the line splitter gives the same lines however the bytes are chunked and
never holds an over-long line; JSON that is not storable is refused; a LoreKit file with fields
of its own, or without some of LoreKit's, is written back as it was."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorestore.portable import jsonl
from lorestore.portable.lorekit import file_text, parse_file
from lorestore.portable.records import RecordError, parse_lesson
from lorestore.portable.shapes import LESSON, canonical, merge, split

name = st.text(min_size=1, max_size=8).map(lambda s: "x_" + s)
value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=4,
)
extra = st.dictionaries(name, value, max_size=3)


@given(top=extra, source=extra, review=extra, dep=extra, v1=extra, v1_source=extra)
def test_unknown_fields_come_back_where_they_were(
    top: dict[str, Any],
    source: dict[str, Any],
    review: dict[str, Any],
    dep: dict[str, Any],
    v1: dict[str, Any],
    v1_source: dict[str, Any],
) -> None:
    record = {
        "type": "lesson",
        "id": "x",
        "source": {"agent": "a", **source},
        "review": {"by": "me", "at": "t", **review},
        "depends_on": [{"path": "a.py", "blob": "b", **dep}],
        "versions": [{"version": 1, "value": "v", "source": {"agent": "a", **v1_source}, **v1}],
        **top,
    }
    known, ext = split(record, LESSON)
    assert not any(k.startswith("x_") for k in known)
    assert all(not k.startswith("x_") for k in known["source"])
    assert merge(known, ext, LESSON) == canonical(record)


def test_a_field_named_ext_is_just_another_unknown_field() -> None:
    record = {"type": "lesson", "ext": {"a": 1}, "lorekit": {"file": "x.md"}}
    known, ext = split(record, LESSON)
    assert known == {"type": "lesson"} and ext == {"ext": {"a": 1}, "lorekit": {"file": "x.md"}}
    assert merge(known, ext, LESSON) == record


@given(
    lines=st.lists(st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(0, 200), max_size=6),
    final_newline=st.booleans(),
)
def test_lines_are_the_same_however_the_stream_is_chunked(
    lines: list[bytes], cuts: list[int], final_newline: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    chunks = [data[a:b] for a, b in itertools.pairwise(bounds)]
    got = list(jsonl.split_lines(chunks))
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    assert got == list(enumerate(expected, start=1))


def test_an_over_long_line_is_reported_and_the_next_one_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 10)
    chunks = [b'{"a":1}\n' + b"x" * 8, b"x" * 8, b'x\n{"b":2}\n']
    records = list(jsonl.read_records(chunks))
    assert [(r.line, r.record, r.error is not None) for r in records] == [
        (1, {"a": 1}, False),
        (2, None, True),
        (3, {"b": 2}, False),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": 1e400}',  # too large for a float: read as Infinity without the check
        b'{"a": [-1e999]}',
        b'{"a": "\\u0000"}',
        b'{"a": "\\ud800"}',
        b"\xff\xfe",
    ],
)
def test_what_a_store_cannot_hold_is_refused(raw: bytes) -> None:
    incoming = jsonl.decode(1, raw)
    assert incoming is not None and incoming.error is not None and incoming.record is None
    assert jsonl.decode(2, b'{"a": "\\u00e9"}').record == {"a": "é"}  # type: ignore[union-attr]
    assert jsonl.decode(3, b'{"a": 1e300}').record == {"a": 1e300}  # type: ignore[union-attr]


def test_a_lesson_line_is_checked_like_a_write() -> None:
    good = {
        "type": "lesson",
        "id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        "scope": "Repo::Acme/App",
        "key": " k ",
        "value": "v",
        "version": 2,
        "recorded_at": "2026-01-01",
        "created_at": "2026-01-01T00:00:00+02:00",
        "updated_at": "2026-01-01T00:00:00.000000Z",
        "tags": ["B", "a"],
    }
    parsed = parse_lesson(good)
    assert parsed.lesson.scope == "repo::acme/app" and parsed.lesson.key == "k"
    assert parsed.lesson.created_at == "2025-12-31T22:00:00.000000Z"
    assert parsed.lesson.tags == ["a", "b"] and parsed.versions is None
    for broken in (
        {"id": "00000000-0000-0000-0000-000000000000"},
        {"version": 0},
        {"seen_count": -1},
        {"valid_from": "2026-02-01", "valid_to": "2026-01-01"},
        {
            "versions": [
                {
                    "version": 1,
                    "state": "accepted",
                    "value": "other",
                    "recorded_at": "2026-01-01",
                    "actor": "u",
                }
            ]
        },
        {"depends_on": [{"path": "../etc/passwd", "blob": "a" * 40}]},
        {
            "pending_revision": True,
            "versions": [
                {
                    "version": 2,
                    "state": "accepted",
                    "value": "v",
                    "recorded_at": "2026-01-01",
                    "actor": "u",
                }
            ],
        },
        {"updated_at": "2026-13-01T00:00:00.000000Z"},
    ):
        with pytest.raises((RecordError, ValueError)):
            parse_lesson({**good, **broken})


def test_a_lorekit_file_with_fields_of_its_own_is_written_back_as_it_was() -> None:
    text = (
        "---\n"
        'scope: "Repo::Acme/App"\n'
        'key: "deploy"\n'
        'tags: ["Ops","ci"]\n'
        'created: "2026-01-01T00:00:00.000Z"\n'
        "seen_count: 4\n"
        'priority: "high"\n'
        "---\n"
        "Body with --- inside\n---\nand more.\n"
    )
    record = parse_file(text, "repo/acme/app/deploy-v2.md")
    assert record["lorekit"]["fields"] == [["priority", "high"]]
    assert record["lorekit"]["file"] == "repo/acme/app/deploy-v2.md"
    assert record["value"] == "Body with --- inside\n---\nand more."
    assert (
        file_text(
            {
                **record,
                "scope": "repo::acme/app",
                "tags": ["ci", "ops"],
                "created_at": "2026-01-01T00:00:00.000000Z",
                "updated_at": "2026-01-01T00:00:00.000000Z",
            }
        )
        == text
    )
