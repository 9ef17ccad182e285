"""Word rarity and saturation for PostgreSQL's full-text scores (core/rarity.py): a word few
hits hold counts more than one most hold; with one word, or words all hits hold alike, the
ranks keep their order; a word said often counts less than two words said once."""

from __future__ import annotations

from lorestore.core.rarity import K1, TEXT_OCCURRENCE, rarity_scores, saturated


def test_a_rare_word_outweighs_a_common_one() -> None:
    # word 0 held by every hit, strongly (say, in the key); word 1 by one hit, weakly
    common = [[1.6, 0.0]] * 8
    rare = [[0.0, 0.3]]
    scores = rarity_scores([*common, *rare])
    assert scores[-1] > max(scores[:-1]) > 0


def test_one_word_keeps_the_order_of_the_ranks() -> None:
    scores = rarity_scores([[0.4], [0.9], [0.1]])
    assert sorted(range(3), key=lambda i: -scores[i]) == [1, 0, 2]
    assert min(scores) > 0  # a word every hit holds still counts


def test_no_hits_and_no_words() -> None:
    assert rarity_scores([]) == []
    assert rarity_scores([[], []]) == [0.0, 0.0]


def test_copies_of_one_key_up_the_ladder_count_once() -> None:
    # word 1 is held by three copies of one key (branch, repo, global) and by nothing else;
    # word 0 by two other lessons: counted by key, word 1 is the rarer
    ranks = [[0.0, 0.3], [0.0, 0.3], [0.0, 0.3], [0.3, 0.0], [0.3, 0.0]]
    keys = ["rounding", "rounding", "rounding", "convert", "report"]
    by_key = rarity_scores(ranks, keys)
    assert by_key[0] > by_key[3]
    by_hit = rarity_scores(ranks)
    assert by_hit[0] < by_hit[3]  # counted hit by hit, the copies made it look common


def test_a_word_said_often_saturates() -> None:
    # hit 0 says word 0 six times in its text; hit 1 holds words 0 and 1 once; hit 2 word 1
    # once: both words are held by two hits, equally rare, and two words once beat one word
    # six times, as in BM25
    text = TEXT_OCCURRENCE
    scores = rarity_scores([[6 * text, 0.0], [text, text], [0.0, text]])
    assert scores[1] > scores[0] > scores[2]
    assert saturated(6 * text) < 6 * saturated(text)
    assert saturated(0.1) < saturated(0.2) < saturated(5.0) < K1 + 1  # the order kept
