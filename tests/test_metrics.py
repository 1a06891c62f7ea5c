"""Retrieval metrics on hand-computed rankings, and the bootstrap statistics behind them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loremap.search.metrics import (
    Estimate,
    all_at,
    bootstrap,
    min_detectable_effect,
    ndcg_at,
    paired_difference,
    recall_at,
    reciprocal_rank,
)

IDS = st.sampled_from("abcdefgh")
RANKED = st.lists(IDS, max_size=12)
GOLD = st.sets(IDS, max_size=5)
K = st.integers(min_value=1, max_value=15)
VALUES = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30)
LOG2_3 = math.log2(3)


# -- per-query metrics -------------------------------------------------------------------------


def test_recall_counts_the_share_of_gold_in_the_top_k():
    assert recall_at(["a", "b", "c"], {"a", "c", "z"}, 1) == pytest.approx(1 / 3)
    assert recall_at(["a", "b", "c"], {"a", "c", "z"}, 2) == pytest.approx(1 / 3)
    assert recall_at(["a", "b", "c"], {"a", "c", "z"}, 3) == pytest.approx(2 / 3)


def test_all_at_needs_every_gold_id_in_the_top_k():
    assert all_at(["a", "b", "c"], ["a", "c"], 2) == 0.0
    assert all_at(["a", "b", "c"], ["a", "c"], 3) == 1.0


def test_ndcg_with_two_gold_ids_discounts_by_log2_of_the_rank():
    # DCG = 1/log2(3) + 1/log2(4); ideal DCG = 1/log2(2) + 1/log2(3)
    expected = (1 / LOG2_3 + 0.5) / (1 + 1 / LOG2_3)
    assert ndcg_at(["x", "a", "b"], {"a", "b"}) == pytest.approx(expected)
    assert ndcg_at(["a", "b", "x"], {"a", "b"}) == pytest.approx(1.0)
    assert ndcg_at(["x", "y", "a"], {"a", "b"}, k=2) == 0.0


def test_ndcg_ideal_uses_no_more_relevant_items_than_k():
    assert ndcg_at(["a", "b"], {"a", "b", "c"}, k=2) == pytest.approx(1.0)
    assert ndcg_at(["a", "x"], {"a", "b", "c"}, k=2) == pytest.approx(1 / (1 + 1 / LOG2_3))


def test_reciprocal_rank_is_one_over_the_first_hit_or_zero():
    assert reciprocal_rank(["x", "y", "a", "b"], {"a", "b"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a"], {"a"}) == 1.0
    assert reciprocal_rank(["x", "y"], {"a"}) == 0.0
    assert reciprocal_rank([], {"a"}) == 0.0


def test_a_repeated_id_counts_once_and_takes_no_extra_slot():
    ranked = ["x", "x", "x", "a", "b"]
    assert recall_at(ranked, {"a", "b"}, 3) == 1.0
    assert all_at(ranked, {"a", "b"}, 3) == 1.0
    assert reciprocal_rank(ranked, {"a"}) == 0.5
    assert ndcg_at(["a", "a", "b"], {"a", "b"}) == pytest.approx(1.0)
    assert recall_at(["a", "a"], {"a", "b"}, 2) == 0.5


def test_empty_gold_scores_one_on_every_metric():
    assert recall_at(["a"], set(), 1) == 1.0
    assert all_at([], set(), 5) == 1.0
    assert ndcg_at(["a"], set()) == 1.0
    assert reciprocal_rank(["a"], set()) == 1.0


def test_k_larger_than_the_list_sees_the_whole_list():
    assert recall_at(["a"], {"a", "b"}, 100) == 0.5
    assert all_at(["a"], {"a", "b"}, 100) == 0.0
    assert ndcg_at(["a"], {"a", "b"}, k=100) == pytest.approx(1 / (1 + 1 / LOG2_3))
    assert recall_at([], {"a"}, 10) == 0.0


@pytest.mark.parametrize("function", [recall_at, all_at, ndcg_at])
def test_k_below_one_is_refused(function):
    with pytest.raises(ValueError, match="k must be at least 1"):
        function(["a"], {"a"}, 0)


@given(RANKED, GOLD, K)
def test_every_metric_lies_between_zero_and_one(ranked, gold, k):
    for value in (recall_at(ranked, gold, k), all_at(ranked, gold, k), ndcg_at(ranked, gold, k),
                  reciprocal_rank(ranked, gold)):
        assert 0.0 <= value <= 1.0 + 1e-12


@given(RANKED, GOLD, K)
def test_recall_never_drops_as_k_grows(ranked, gold, k):
    assert recall_at(ranked, gold, k) <= recall_at(ranked, gold, k + 1)
    assert all_at(ranked, gold, k) <= all_at(ranked, gold, k + 1)


@given(RANKED, GOLD, K)
def test_finding_everything_means_full_recall_and_full_ndcg(ranked, gold, k):
    if all_at(ranked, gold, k) == 1.0:
        assert recall_at(ranked, gold, k) == 1.0
        assert ndcg_at(ranked, gold, k) <= 1.0 + 1e-12


@given(RANKED, GOLD, K)
def test_duplicates_do_not_change_any_metric(ranked, gold, k):
    doubled = [id_ for id_ in ranked for _ in range(2)]
    assert recall_at(doubled, gold, k) == recall_at(ranked, gold, k)
    assert ndcg_at(doubled, gold, k) == ndcg_at(ranked, gold, k)
    assert reciprocal_rank(doubled, gold) == reciprocal_rank(ranked, gold)


# -- bootstrap ---------------------------------------------------------------------------------


def test_the_bootstrap_of_no_values_is_refused():
    with pytest.raises(ValueError, match="no values"):
        bootstrap([])


def test_one_value_has_a_zero_width_interval():
    assert bootstrap([0.25]) == Estimate(0.25, 0.25, 0.25)


def test_a_balanced_binary_sample_has_the_textbook_interval():
    # mean 0.5, standard error sqrt(0.25 / 100) = 0.05, so the 95 % interval is about +-0.098
    estimate = bootstrap([0.0, 1.0] * 50)
    assert estimate.mean == 0.5
    assert 0.38 <= estimate.low <= 0.42
    assert 0.58 <= estimate.high <= 0.62


def test_a_wider_level_gives_a_wider_interval():
    values = [i / 10 for i in range(11)]
    narrow, wide = bootstrap(values, level=0.5), bootstrap(values, level=0.99)
    assert wide.low < narrow.low < narrow.high < wide.high


@given(VALUES, st.integers(min_value=0, max_value=2**32))
def test_the_interval_contains_the_mean(values, seed):
    estimate = bootstrap(values, iterations=200, seed=seed)
    assert estimate.low <= estimate.mean <= estimate.high


@given(VALUES, st.integers(min_value=0, max_value=2**32))
def test_the_same_seed_gives_the_same_interval(values, seed):
    assert bootstrap(values, iterations=100, seed=seed) == bootstrap(values, 100, seed)


def test_paired_difference_of_identical_lists_is_exactly_zero():
    values = [0.1, 0.7, 0.3, 1.0, 0.0]
    assert paired_difference(values, values) == Estimate(0.0, 0.0, 0.0)


def test_paired_difference_of_a_constant_shift_is_the_shift():
    base = [0.0, 0.125, 0.5, 0.25, 0.625]
    assert paired_difference(base, [v + 0.25 for v in base]) == Estimate(0.25, 0.25, 0.25)
    assert paired_difference([v + 0.25 for v in base], base) == Estimate(-0.25, -0.25, -0.25)


@given(VALUES, st.floats(min_value=-1.0, max_value=1.0))
def test_paired_difference_of_any_shift_is_close_to_the_shift(values, shift):
    estimate = paired_difference(values, [v + shift for v in values], iterations=50)
    assert estimate == pytest.approx((shift, shift, shift), abs=1e-9)


def test_paired_difference_needs_lists_of_one_length():
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([0.0, 1.0], [1.0])


def test_a_clear_improvement_has_an_interval_above_zero():
    base = [0.0, 1.0] * 30
    better = [1.0] * 60
    estimate = paired_difference(base, better)
    assert estimate.mean == 0.5
    assert estimate.low > 0


# -- minimum detectable effect -----------------------------------------------------------------


def test_the_mde_follows_the_normal_formula():
    values = [0.0, 1.0, 0.0, 1.0]
    sd = math.sqrt(1 / 3)  # sample sd, n - 1 in the denominator
    assert min_detectable_effect(values) == pytest.approx((1.959964 + 0.841621) * sd / 2,
                                                          rel=1e-5)


def test_a_stricter_test_needs_a_larger_effect():
    values = [0.0, 1.0, 1.0, 0.5, 0.25]
    assert min_detectable_effect(values, alpha=0.01) > min_detectable_effect(values)
    assert min_detectable_effect(values, power=0.9) > min_detectable_effect(values)


def test_more_queries_detect_smaller_effects():
    assert min_detectable_effect([0.0, 1.0] * 200) < min_detectable_effect([0.0, 1.0] * 20)


def test_one_query_cannot_detect_anything():
    assert min_detectable_effect([0.5]) == math.inf
    assert min_detectable_effect([]) == math.inf


def test_the_mde_refuses_probabilities_outside_zero_and_one():
    with pytest.raises(ValueError, match="between 0 and 1"):
        min_detectable_effect([0.0, 1.0], alpha=1.5)
