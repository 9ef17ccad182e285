"""The confusables skeleton and the look-alike rules (core only): the shipped table is what
the pinned data gives, look-alikes share a digest or a key skeleton, and genuinely different
values and keys do not (hypothesis)."""

from __future__ import annotations

import json
import unicodedata
from importlib import resources

from hypothesis import given
from hypothesis import strategies as st

from lorestore.core import confusables, tombstones
from lorestore.core.normalise import key_skeleton, near_digest, normalise_value, value_digest
from lorestore.core.trust import transition

WORD = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789"), min_size=1, max_size=8)
WORDS = st.lists(WORD, min_size=1, max_size=6).map(" ".join)


def test_the_shipped_table_is_what_the_pinned_data_gives() -> None:
    shipped = resources.files("lorestore.core").joinpath(confusables.TABLE).read_text("utf-8")
    assert json.loads(shipped) == confusables.build_table()


def test_the_skeleton_keeps_ascii_and_folds_lookalikes() -> None:
    assert confusables.skeleton("pg-local 10 rn l0 I") == "pg-local 10 rn l0 I"
    assert confusables.skeleton("pg-l\u043e\u0441al") == "pg-local"  # Cyrillic o and c
    assert confusables.skeleton("\u0391\u0392\u0421") == "abc"  # Greek A and B, Cyrillic C
    table = confusables._table()
    assert all(not chr(code).isascii() for code in table)
    # A skeleton is its own skeleton.
    assert all(confusables.skeleton(proto) == proto for proto in table.values())


def test_no_two_letters_of_one_alphabet_share_a_skeleton_but_greek_sigma_and_omicron() -> None:
    """The skeleton folds scripts into each other, not one script's letters into one
    (UTS #39's own exception: Greek sigma looks like omicron)."""
    for first, last in ((0x61, 0x7A), (0xE0, 0xFF), (0x430, 0x44F), (0x3B1, 0x3C9)):
        seen: dict[str, list[str]] = {}
        for point in range(first, last + 1):
            char = chr(point)
            if unicodedata.category(char) == "Ll":
                seen.setdefault(confusables.skeleton(char), []).append(char)
        shared = [chars for chars in seen.values() if len(chars) > 1]
        assert shared in ([], [["\u03bf", "\u03c3"]]), shared


@given(WORDS, WORDS)
def test_different_ascii_words_stay_different_values(a: str, b: str) -> None:
    assert (value_digest(a) == value_digest(b)) == (a == b)
    assert (near_digest(a) == near_digest(b)) == (a == b)


@given(WORDS)
def test_lookalike_spellings_of_a_value_are_that_value(text: str) -> None:
    cyrillic = text.translate(str.maketrans("aeopcx", "\u0430\u0435\u043e\u0440\u0441\u0445"))
    braille = text.replace(" ", "\u2800")
    emphasis = f"**{text}**"
    spaced = f"_{text} {text}_"
    for spelling in (cyrillic, braille, emphasis, text + ".", f"`{text}`"):
        assert value_digest(spelling) == value_digest(text), spelling
    assert value_digest(spaced) == value_digest(f"{text} {text}")


@given(WORDS, st.sampled_from([",", ";", ":", " -", "!", "=", "/"]))
def test_a_value_with_other_punctuation_is_near_not_the_same(text: str, mark: str) -> None:
    words = text.split()
    if len(words) < 2:
        return
    marked = f"{words[0]}{mark} {' '.join(words[1:])}"
    assert near_digest(marked) == near_digest(text)
    assert tombstones.near_rejection(marked, [("k", text)]) == "k"
    assert tombstones.near_rejection(marked, [("k", text + " more")]) is None


def test_code_keeps_its_marks() -> None:
    for meant, other in (("--force", "-force"), ("a == b", "a = b"), ("__init__", "_init_")):
        assert value_digest(f"Use {meant} here") != value_digest(f"Use {other} here")
    assert normalise_value("rm *.pyc and *.pyo") == "rm *.pyc and *.pyo"
    assert normalise_value("Call __init__ first") == "call __init__ first"
    assert normalise_value("a*b*c") == "a*b*c"


def test_confusable_keys() -> None:
    keys = ["pg-local", "pg-remote", "PG-Local"]
    assert tombstones.confusable_keys("pg-l\u043e\u0441al", keys) == ["PG-Local", "pg-local"]
    assert tombstones.confusable_keys("pg-locale", keys) == []
    assert key_skeleton("\uff50\uff47-local") == key_skeleton("pg-local")  # full width


def test_hold_is_a_transition_to_disputed() -> None:
    assert transition("candidate", "hold") == "disputed"
    assert transition("corroborated", "hold") == "disputed"


def test_a_tombstone_of_the_previous_normalisation_refuses_the_lookalikes() -> None:
    """A tombstone recorded before the skeleton holds the previous normalisation's digest of
    the rejected value; a look-alike's digest today is that digest (the rejected value had
    nothing today's steps fold), so the old tombstone refuses it."""
    import hashlib

    from lorestore.core import normalise

    rejected = "Use tabs for indentation"
    previous = normalise._marks_folded(normalise._folded(normalise._visible(rejected)))
    old_tombstone = hashlib.sha256(previous.encode()).hexdigest()
    for spelling in ("Us\u0435 tabs for indentation", "**Use tabs** for indentation"):
        assert old_tombstone in normalise.value_digests(spelling)
    # And a value with markup, rejected before, still refuses itself.
    marked = "**Use tabs** for indentation"
    before = normalise._marks_folded(normalise._folded(normalise._visible(marked)))
    assert hashlib.sha256(before.encode()).hexdigest() in normalise.value_digests(marked)
