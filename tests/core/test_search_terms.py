"""Query text -> search terms (core/search.py): identifiers split into their words, paths into
their parts, the aliases we own added; stop words still refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorestore.core.errors import LorestoreError
from lorestore.core.search import ALIASES, MAX_QUERY_TERMS, STOP_WORDS, query_terms


def test_identifiers_keep_the_whole_word_then_its_parts() -> None:
    assert query_terms("RetryBudget") == ["retrybudget", "retry", "budget"]
    assert query_terms("HTTPServer timeout") == ["httpserver", "http", "server", "timeout"]
    assert query_terms("retry_budget") == ["retry_budget", "retry", "budget"]
    assert query_terms("tests/conftest.py") == ["tests/conftest.py", "tests", "conftest", "py"]
    assert query_terms("plain words only") == ["plain", "words"]  # "only" is a stop word


def test_aliases_are_added_after_the_words_of_the_task() -> None:
    assert query_terms("postgresql upgrade") == ["postgresql", "upgrade", "pg", "postgres"]
    assert query_terms("k8s rollout") == ["k8s", "rollout", "kubernetes"]
    assert query_terms("rollout") == ["rollout"]  # the control: no alias, nothing added
    for group in ALIASES:
        assert 2 <= len(group) <= 3 and not group & STOP_WORDS


def test_stop_words_alone_are_still_refused() -> None:
    with pytest.raises(LorestoreError) as err:
        query_terms("the and of")
    assert err.value.code == "invalid_argument"


@given(st.text(max_size=200))
def test_terms_are_distinct_lower_case_and_bounded(text: str) -> None:
    try:
        terms = query_terms(text)
    except LorestoreError:
        return
    assert len(terms) == len(set(terms)) <= MAX_QUERY_TERMS
    assert all(t and t not in STOP_WORDS for t in terms)
