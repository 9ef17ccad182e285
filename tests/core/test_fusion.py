"""The fusion rule of hybrid retrieval (core/fusion.py): full-text and semantic evidence add
up, a similarity below the floor adds nothing, and a lesson neither matches keeps 0."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from lorestore.core.fusion import SIMILARITY_FLOOR, fuse, related


def test_words_and_meaning_add_up_and_unrelated_stays_zero() -> None:
    lexical = {"both": 4.0, "words": 4.0, "meaning": 0.0, "neither": 0.0, "weak": 2.0}
    similarity = {"both": 0.7, "words": 0.0, "meaning": 0.7, "neither": 0.1, "weak": 0.7}
    fused = fuse(lexical, similarity)
    assert fused["both"] > fused["words"] > 0
    assert fused["both"] > fused["meaning"] > 0
    assert fused["both"] > fused["weak"] > fused["meaning"]
    assert fused["neither"] == 0.0  # below the floor: no evidence at all


def test_without_similarities_the_full_text_order_is_kept() -> None:
    lexical = {"a": 3.0, "b": 2.0, "c": 0.0}
    fused = fuse(lexical, {})
    assert sorted(fused, key=lambda k: -fused[k]) == ["a", "b", "c"] and fused["c"] == 0.0


def test_the_floor_is_where_meaning_starts_to_count() -> None:
    at, above = SIMILARITY_FLOOR, SIMILARITY_FLOOR + 0.01
    fused = fuse({"at": 0.0, "above": 0.0}, {"at": at, "above": above})
    assert fused["at"] == 0.0 and fused["above"] > 0.0
    assert not related(at) and related(above)


def test_the_meaning_counts_relative_to_the_nearest_candidate() -> None:
    """As the words' score counts relative to the best one: cosines crowded into a narrow
    band weigh as much as spread ones, so the order does not depend on the model's spread."""
    lexical = {"words": 1.0, "both": 0.5}
    spread = {"words": SIMILARITY_FLOOR, "both": 0.95}
    narrow = {"words": SIMILARITY_FLOOR, "both": SIMILARITY_FLOOR + 0.4}
    for similarity in (spread, narrow):
        fused = fuse(lexical, similarity)
        assert fused["both"] > fused["words"] > 0
    assert fuse(lexical, spread) == fuse(lexical, narrow)


_IDS = st.sampled_from([f"l{i}" for i in range(8)])
_CANDIDATES = st.dictionaries(_IDS, st.floats(0, 50, allow_subnormal=False), min_size=1)
_COSINES = st.dictionaries(_IDS, st.floats(-1, 1))


@given(_CANDIDATES, _COSINES, st.floats(0.01, 100))
def test_relevance_is_bounded_and_free_of_each_signals_scale(
    lexical: dict[str, float], similarity: dict[str, float], factor: float
) -> None:
    """Each term is relative to its best candidate: a relevance is in [0, 1], the best of each
    signal gets its whole weight, and scaling the full-text scores changes nothing."""
    fused = fuse(lexical, similarity)
    assert set(fused) == set(lexical)
    assert all(0.0 <= value <= 1.0 + 1e-9 for value in fused.values())
    scaled = fuse({k: v * factor for k, v in lexical.items()}, similarity)
    assert all(math.isclose(fused[k], scaled[k], abs_tol=1e-9) for k in fused)
    for k, value in fused.items():  # neither a word nor a meaning above the floor: nothing
        if lexical[k] == 0 and similarity.get(k, 0.0) <= SIMILARITY_FLOOR:
            assert value == 0.0
