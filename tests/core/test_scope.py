"""Scope grammar: the four forms, normalisation, corrected-form hints, the ladder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorestore.core.errors import LorestoreError
from lorestore.core.scope import ladder, normalise_scope, parse_scope

name = st.from_regex(r"[a-z0-9]([a-z0-9._-]{0,20}[a-z0-9_])?", fullmatch=True).filter(
    lambda s: ".." not in s
)
branch = st.from_regex(
    r"[A-Za-z0-9_][A-Za-z0-9_-]{0,10}(/[A-Za-z0-9_][A-Za-z0-9_-]{0,10}){0,2}", fullmatch=True
)
scope_text = st.one_of(
    st.just("global"),
    name.map(lambda n: f"project::{n}"),
    st.tuples(name, name).map(lambda t: f"repo::{t[0]}/{t[1]}"),
    st.tuples(name, name, branch).map(lambda t: f"branch::{t[0]}/{t[1]}::{t[2]}"),
)


@given(scope_text)
def test_canonical_scopes_round_trip(text: str) -> None:
    assert normalise_scope(text) == text.lower()
    assert normalise_scope(normalise_scope(text)) == normalise_scope(text)


@given(scope_text, st.sampled_from([str.upper, str.title, lambda s: f"  {s} "]))
def test_case_and_surrounding_space_normalise_away(text: str, mangle) -> None:  # type: ignore[no-untyped-def]
    assert normalise_scope(mangle(text)) == normalise_scope(text)


@given(scope_text.filter(lambda s: s != "global"))
def test_single_colon_is_refused_with_a_valid_corrected_form(text: str) -> None:
    mangled = text.replace("::", ":")
    with pytest.raises(LorestoreError) as err:
        parse_scope(mangled)
    assert err.value.code == "invalid_scope"
    corrected = err.value.details.get("corrected")
    if corrected is not None:
        assert normalise_scope(corrected) == corrected
        assert corrected == text.lower()


def test_design_example_hint() -> None:
    with pytest.raises(LorestoreError) as err:
        parse_scope("repo:acme/app")
    assert err.value.hint == 'use "::" as the separator: "repo::acme/app"'


@pytest.mark.parametrize(
    ("raw", "corrected"),
    [
        ("acme/app", "repo::acme/app"),
        ("https://github.com/Acme/App.git", "repo::acme/app"),
        ("repository::acme/app", "repo::acme/app"),
        ("project:billing", "project::billing"),
        ("branch:acme/app:main", "branch::acme/app::main"),
        ("repo::acme/app::main", "branch::acme/app::main"),
        ("global::x", "global"),
        ("all::x", "global"),
        ("*::anything", "global"),
    ],
)
def test_hints_carry_the_fix(raw: str, corrected: str) -> None:
    with pytest.raises(LorestoreError) as err:
        parse_scope(raw)
    assert err.value.details["corrected"] == corrected
    assert corrected in (err.value.hint or "")


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "everything",
        "repo::acme",
        "repo::acme/app/extra",
        "branch::acme/app",
        "branch::acme/app::bad..name",
        "branch::acme/app::has space",
        "project::",
        "x" * 400,
        "repo::-acme/app",
        "repo::.acme/app",
        "repo::acme/..",
        "repo::acme/.",
    ],
)
def test_malformed_scopes_fail_closed(raw: str) -> None:
    with pytest.raises(LorestoreError) as err:
        parse_scope(raw)
    assert err.value.code == "invalid_scope"
    assert err.value.hint


@pytest.mark.parametrize("name", [".github", "_site", "-dotfiles", "app.", "a"])
def test_repository_names_may_start_or_end_with_punctuation(name: str) -> None:
    # GitHub's own conventions (".github", "_site") name real repositories: recall in one
    # must not fail on its derived scope.
    assert parse_scope(f"repo::Acme/{name}").text == f"repo::acme/{name.lower()}"
    rungs = [s.text for s in ladder(repo=f"acme/{name}", branch="main")]
    assert rungs == [f"branch::acme/{name}::main", f"repo::acme/{name}", "global"]


def test_branch_keeps_slashes_and_lowers_case() -> None:
    scope = parse_scope("branch::Acme/App::Feature/Login-UI")
    assert scope.text == "branch::acme/app::feature/login-ui"
    assert [s.text for s in scope.broader()] == ["repo::acme/app", "global"]


def test_ladder_is_narrow_to_broad() -> None:
    rungs = [s.text for s in ladder(repo="Acme/App", branch="main", project="billing")]
    assert rungs == ["branch::acme/app::main", "repo::acme/app", "project::billing", "global"]
    assert [s.text for s in ladder()] == ["global"]


def test_refusals_read_whole_and_suggest_nothing_made_up() -> None:
    with pytest.raises(LorestoreError) as branch:
        parse_scope("repo::acme/app::main")
    assert not branch.value.message.endswith("use")  # the sentence is whole
    assert branch.value.details["corrected"] == "branch::acme/app::main"
    with pytest.raises(LorestoreError) as lone:
        parse_scope("repo::acme")
    assert "acme/acme" not in (lone.value.hint or "") and "OWNER/acme" in (lone.value.hint or "")
