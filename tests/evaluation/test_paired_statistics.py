"""The paired statistics against scipy, statsmodels and the published worked examples."""

import math
from itertools import product

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import StratifiedTable, mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from lerobot.evaluation.paired_statistics import (
    PairedCounts,
    episodes_for_half_width,
    holm_adjusted,
    mcnemar_exact_p_value,
    paired_difference_interval,
    pairs_to_detect,
    stratified_paired_p_value,
    unpaired_difference_interval,
)

DISCORDANT = [(0, 0), (0, 1), (1, 0), (0, 5), (3, 3), (2, 9), (12, 2), (40, 61), (480, 560)]


@pytest.mark.parametrize(("a_won", "b_won"), DISCORDANT)
def test_mcnemar_matches_scipy_binomtest_and_statsmodels(a_won, b_won):
    p = mcnemar_exact_p_value(a_won, b_won)
    if a_won + b_won:
        assert p == pytest.approx(stats.binomtest(b_won, a_won + b_won, 0.5).pvalue, rel=1e-9)
    table = [[10, a_won], [b_won, 10]]
    assert p == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)


def test_stratified_test_is_cmh_with_one_table_per_episode_pair():
    """CMH over the pairs (strata) is the test we run; its chi-square equals McNemar's."""
    per_task = [PairedCounts(3, 1, 4, 2), PairedCounts(0, 0, 3, 7), PairedCounts(5, 2, 1, 2)]
    pair_tables = []
    for counts in per_task:
        for (a_ok, b_ok), n in zip(product((1, 0), repeat=2), _cells(counts), strict=True):
            pair_tables += [np.array([[a_ok, 1 - a_ok], [b_ok, 1 - b_ok]])] * n
    cmh = StratifiedTable(pair_tables).test_null_odds(correction=False)
    a_won, b_won = 3, 8
    assert cmh.statistic == pytest.approx((a_won - b_won) ** 2 / (a_won + b_won))
    assert stratified_paired_p_value(per_task) == pytest.approx(stats.binomtest(b_won, 11).pvalue)


def _cells(counts):  # in the order of product((1, 0), repeat=2): (A ok, B ok) = 11, 10, 01, 00
    return counts.both, counts.a_won, counts.b_won, counts.neither


@pytest.mark.parametrize(
    "p_values", [[0.01, 0.04, 0.03, 0.5], [0.2], [0.001, 0.001, 0.9, 0.02, 0.049, 1.0], []]
)
def test_holm_matches_statsmodels(p_values):
    expected = multipletests(p_values, method="holm")[1] if p_values else []
    assert holm_adjusted(p_values) == pytest.approx(list(expected))


def test_paired_interval_matches_the_published_examples():
    # Newcombe 1998 (Stat Med 17:2635) Table II, example (a): 36 both, 12 + 2 discordant, 0 neither.
    low, high = paired_difference_interval(PairedCounts(both=36, a_won=2, b_won=12, neither=0))
    assert (round(low, 4), round(high, 4)) == (0.0569, 0.3404)
    # Fagerland, Lydersen and Laake, Statistical Analysis of Contingency Tables (2017), ch. 8,
    # Cavo et al. 2012: 59 both, 6 and 16 discordant, 80 neither; estimate -0.0621.
    low, high = paired_difference_interval(PairedCounts(both=59, a_won=16, b_won=6, neither=80))
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_paired_interval_flips_with_the_runs_and_stays_in_range():
    for counts in [PairedCounts(0, 0, 10, 0), PairedCounts(0, 0, 0, 10), PairedCounts(4, 1, 3, 2)]:
        low, high = paired_difference_interval(counts)
        swapped = PairedCounts(counts.both, counts.b_won, counts.a_won, counts.neither)
        assert paired_difference_interval(swapped) == pytest.approx((-high, -low))
        difference = (counts.b_won - counts.a_won) / counts.n_pairs
        assert -1 <= low <= difference <= high <= 1
    assert paired_difference_interval(PairedCounts(0, 0, 0, 0)) is None


@pytest.mark.parametrize(
    ("successes_a", "n_a", "successes_b", "n_b"),
    [(48, 80, 56, 70), (3, 10, 9, 10), (0, 10, 0, 20), (10, 10, 0, 20), (5, 6, 6, 6), (700, 1000, 760, 1000)],
)
def test_unpaired_interval_matches_statsmodels_newcombe(successes_a, n_a, successes_b, n_b):
    expected = confint_proportions_2indep(successes_b, n_b, successes_a, n_a, method="newcomb")
    assert unpaired_difference_interval(successes_a, n_a, successes_b, n_b) == pytest.approx(expected)


def test_unpaired_interval_matches_newcombes_worked_examples():
    # Newcombe 1998 (Stat Med 17:873) Table II, method 10: 56/70 vs 48/80 and 9/10 vs 3/10.
    assert [round(x, 4) for x in unpaired_difference_interval(48, 80, 56, 70)] == [0.0524, 0.3339]
    assert [round(x, 4) for x in unpaired_difference_interval(3, 10, 9, 10)] == [0.1705, 0.8090]


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.5, 0.83, 1.0])
def test_half_width_budget_is_the_fewest_episodes_whose_wilson_interval_fits(rate):
    n = episodes_for_half_width(rate, 0.05)

    def half_width(n):
        low, high = stats.binomtest(round(rate * n), n).proportion_ci(method="wilson")
        return (high - low) / 2

    # scipy's Wilson interval at the nearest count; the bisection works on the exact rate.
    assert half_width(n) <= 0.05 + 2e-3 and half_width(max(1, n - 5)) > 0.05 - 2e-3
    assert episodes_for_half_width(0.5) == 381 and episodes_for_half_width(0.0) == 35


def test_connor_sample_size_gives_80_percent_power_and_no_more_pairs_than_needed():
    def connor_power(n, delta, psi):  # Connor 1987, eq. 2, with scipy's normal distribution
        z_alpha = stats.norm.ppf(0.975)
        return stats.norm.cdf((delta * math.sqrt(n) - z_alpha * math.sqrt(psi)) / math.sqrt(psi - delta**2))

    for delta, psi in [(0.1, 0.2), (0.05, 0.1), (0.2, 0.3), (0.05, 0.4)]:
        n = pairs_to_detect(delta, psi)
        assert connor_power(n, delta, psi) >= 0.8 > connor_power(n - 1, delta, psi)
    # By hand: (1.95996 * sqrt(0.2) + 0.84162 * sqrt(0.19))^2 / 0.01 = 154.6
    assert pairs_to_detect(0.1, 0.2) == 155 == pairs_to_detect(-0.1, 0.2)
    assert pairs_to_detect(0.1, 0.0) == pairs_to_detect(0.1, 0.1)  # psi is at least |delta|
