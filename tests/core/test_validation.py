"""Limits on keys, values, tags and TTLs, and value normalisation."""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lorestore.core.confusables import skeleton
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import (
    _IGNORABLE,
    _folded,
    digest_with_ignorables,
    normalise_value,
    value_digest,
    value_digests,
)
from lorestore.core.timestamps import format_ts, normalise_ts, parse_ts
from lorestore.core.validation import (
    MAX_VALUE_BYTES,
    validate_address,
    validate_key,
    validate_tags,
    validate_ttl,
    validate_value,
)

# Fixed offsets in whole minutes, as ISO 8601 writes them (a zone's nonexistent DST-gap
# times compare oddly); a day of margin at both ends of datetime's range, which an offset
# would otherwise push out of it.
_MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.builds(
        timezone, st.integers(-23 * 60, 23 * 60).map(lambda m: timedelta(minutes=m))
    ),
)


@given(_MOMENTS, _MOMENTS)
def test_stored_times_order_as_text_and_read_back(a: datetime, b: datetime) -> None:
    # Times are stored and compared as text: the canonical form must sort as the times do,
    # and parse back to the same moment, whatever the year (1 to 9999) or offset.
    text_a, text_b = format_ts(a), format_ts(b)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", text_a)
    assert parse_ts(text_a) == a
    assert (text_a < text_b) == (a < b)


_ANY_MOMENT = st.datetimes(
    timezones=st.builds(
        timezone, st.integers(-23 * 60, 23 * 60).map(lambda m: timedelta(minutes=m))
    ),
)


@given(_ANY_MOMENT)
@example(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
@example(datetime(9999, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-1))))
@example(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=-1))))  # in range: the control
def test_a_time_outside_utc_years_1_to_9999_is_invalid_time(moment: datetime) -> None:
    # An offset can push a valid-looking time (0001-01-01T00:00+01:00) out of datetime's range
    # in UTC: that is the caller's bad input, never an OverflowError.
    text = moment.isoformat()
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:
        assert _code(normalise_ts, text) == "invalid_time"
        assert _code(format_ts, moment) == "invalid_time"
        return
    assert normalise_ts(text) == format_ts(moment) == format_ts(utc)  # the control


def _code(fn, *args) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(LorestoreError) as err:
        fn(*args)
    return err.value.code


def test_key_limits() -> None:
    assert validate_key("  k  ") == "k"
    assert validate_key("x" * 512) == "x" * 512
    assert _code(validate_key, "x" * 513) == "invalid_key"
    assert _code(validate_key, "") == "invalid_key"
    assert _code(validate_key, "a\nb") == "invalid_key"
    assert _code(validate_key, "a\x00b") == "invalid_key"


def test_value_is_counted_in_bytes() -> None:
    assert validate_value("a" * MAX_VALUE_BYTES)
    assert _code(validate_value, "a" * (MAX_VALUE_BYTES + 1)) == "value_too_large"
    # 'é' is two bytes in UTF-8: half as many fit.
    assert validate_value("é" * (MAX_VALUE_BYTES // 2))
    assert _code(validate_value, "é" * (MAX_VALUE_BYTES // 2 + 1)) == "value_too_large"
    assert _code(validate_value, "   ") == "invalid_value"
    assert _code(validate_value, "\ud800") == "invalid_value"


def test_tags() -> None:
    assert validate_tags(["DB", "db", " ci "]) == ("ci", "db")
    assert validate_tags(None) == ()
    assert len(validate_tags([f"t{i}" for i in range(32)])) == 32
    assert _code(validate_tags, [f"t{i}" for i in range(33)]) == "invalid_tags"
    assert _code(validate_tags, ["x" * 65]) == "invalid_tags"
    assert _code(validate_tags, [""]) == "invalid_tags"


def test_ttl() -> None:
    assert validate_ttl(1) == 1
    assert validate_ttl(365) == 365
    assert validate_ttl(None) is None
    for bad in (0, 366, -1, True):
        assert _code(validate_ttl, bad) == "invalid_ttl"


def test_normalisation_folds_case_space_and_unicode_form() -> None:
    assert normalise_value("  Use\tthe LOCAL\n\nPostgres ") == "use the local postgres"
    # NFKC: the ligature and the full-width letters are the same text.
    assert normalise_value("\ufb01le \uff21\uff22\uff23") == "file abc"
    # Composed and decomposed é are one value.
    assert value_digest("caf\u00e9") == value_digest("cafe\u0301")
    assert value_digest("Straße") == value_digest("STRASSE")
    assert value_digest("a b") != value_digest("ab")


@given(st.text(min_size=1, max_size=200))
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalise_value(text)
    assert normalise_value(once) == once
    assert value_digest(text) == value_digest(once)


def test_control_characters_are_unicode_category_cc_exactly() -> None:
    from lorestore.core.validation import has_control

    for point in range(sys.maxunicode + 1):
        char = chr(point)
        assert has_control(f"a{char}b") == (unicodedata.category(char) == "Cc"), hex(point)


def _is_mark(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"


def test_whitespace_collapses_on_exactly_the_characters_of_regex_s() -> None:
    # normalise_value collapses with str.split() (its step 2, which alone still makes the
    # digests of stores written before dashes, runs and trailing marks were folded); those of
    # older stores were made with re.sub(r"\s+", " ", ...).strip(): both must agree on every
    # character.
    spaces = re.compile(r"\s+")
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        text = f" a{char}{char}b{char}"
        if _IGNORABLE.fullmatch(char):  # removed first, whatever else it is
            text = text.replace(char, "")
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
        expected = spaces.sub(" ", folded).strip()
        assert _folded(text) == expected, hex(point)
        # Steps 3-7 leave it as it is (no mark, nothing confusable).
        if skeleton(expected) == expected and not any(_is_mark(c) for c in expected):
            assert normalise_value(text) == expected, hex(point)


def test_scope_and_key_together_fit_an_index_entry() -> None:
    validate_address("global", "\U00020000" * 512)  # 2,054 bytes
    validate_address("x" * 352, "\U00020000" * 512)  # exactly 2,400
    with pytest.raises(LorestoreError) as err:
        validate_address("x" * 353, "\U00020000" * 512)
    assert err.value.code == "invalid_key" and err.value.hint


def _digest_before_ignorables(value: str) -> str:
    """The digest as lorestore computed it before default-ignorable characters left it."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value).casefold())
    return hashlib.sha256(re.sub(r"\s+", " ", folded).strip().encode()).hexdigest()


@pytest.mark.parametrize(
    "invisible",
    ["\u00ad", "\u034f", "\u061c", "\u180e", "\u200b", "\u200c", "\u200d", "\u200e", "\u202e",
     "\u2060", "\u2066", "\u3164", "\ufe0f", "\ufeff", "\uffa0", "\U000e0041", "\U0001d173"],
)  # fmt: skip
def test_default_ignorable_characters_are_not_part_of_a_value(invisible: str) -> None:
    value = "Never bulk-insert into events"
    hidden = value.replace("bulk", f"bu{invisible}lk").replace("events", f"{invisible}events")
    assert value_digest(hidden) == value_digest(value)
    # The digest a store written before this rule holds for the hidden form is still its.
    assert value_digests(hidden) == (value_digest(value), _digest_before_ignorables(hidden))
    assert digest_with_ignorables(hidden) == _digest_before_ignorables(hidden)
    # Positive control: a visible difference is still a different value.
    assert value_digest(value.replace("bulk", "bu lk")) != value_digest(value)
    # A value of invisible characters alone is blank, as one of spaces is.
    with pytest.raises(LorestoreError) as blank:
        validate_value(f" {invisible}{invisible} ")
    assert blank.value.code == "invalid_value"
    assert validate_value(f"x{invisible}") == f"x{invisible}"  # kept as given


@given(st.text(min_size=1, max_size=200))
@example("Straße \uff44isable")
@example("Never bulk-insert into events.")
def test_digests_of_values_without_ignorables_are_unchanged(text: str) -> None:
    # Digests stored before the rule (lessons, versions, tombstones) stay valid for every
    # value that holds no default-ignorable character: the same digest when the later
    # rules (dashes, runs and trailing marks) leave the text as it is, else still among
    # value_digests.
    if _IGNORABLE.search(text):
        text = _IGNORABLE.sub("", text) or "x"
    before = _digest_before_ignorables(text)
    if normalise_value(text) == _folded(text):
        assert value_digest(text) == before
        assert value_digests(text) == (value_digest(text),)
    else:  # and the digest of the normalisation in between, when it differs
        assert value_digests(text)[0] == value_digest(text) and before in value_digests(text)
    assert digest_with_ignorables(text) is None
