"""Is checkpoint B better than A? Tests, intervals and episode budgets for two runs' success rates.

Episode e of a task starts from seed `seed + e` in every run, so two runs over the same tasks
are paired episode by episode: the same initial scene, once with each policy. Pairing removes
the scene-to-scene variation (an easy seed is easy for both policies) and leaves only the
episodes where the two policies disagree: the discordant pairs. All paired statistics here
work on one 2x2 table of pairs per task:

                 B succeeds   B fails
    A succeeds   both         a_won
    A fails      b_won        neither

Differences are always B minus A, as fractions in [-1, 1]. Everything is plain Python (no
numpy, scipy or torch), so reports are rebuilt on any machine; the tests check each function
against scipy and statsmodels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from lerobot.evaluation.intervals import Z_95, wilson_interval

ALPHA = 0.05
"""Two-sided significance level of every test and of the budgets."""
POWER = 0.8
"""Power the paired budget aims for."""


@dataclass(frozen=True)
class PairedCounts:
    """One task's (or the pooled) 2x2 table of episode pairs."""

    both: int
    a_won: int
    """A succeeded, B failed."""
    b_won: int
    """A failed, B succeeded."""
    neither: int

    @property
    def n_pairs(self) -> int:
        return self.both + self.a_won + self.b_won + self.neither

    @property
    def n_discordant(self) -> int:
        return self.a_won + self.b_won

    def __add__(self, other: PairedCounts) -> PairedCounts:
        return PairedCounts(
            self.both + other.both,
            self.a_won + other.a_won,
            self.b_won + other.b_won,
            self.neither + other.neither,
        )


# -- tests -----------------------------------------------------------------------------------


def mcnemar_exact_p_value(a_won: int, b_won: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts.

    Under "A and B are equally good", each discordant pair is won by either run with
    probability 1/2, so the smaller count is Binomial(a_won + b_won, 1/2) and the two-sided
    p-value is min(1, 2 P(X <= min(a_won, b_won))) (McNemar 1947, Psychometrika 12:153; the
    exact binomial form as in Fagerland, Lydersen and Laake 2013, BMC Med Res Methodol 13:91).
    The asymptotic chi-square form is not used: our tasks have a handful of discordant pairs.
    Exact integer arithmetic, so 2,000 pairs lose no precision.
    """
    n = a_won + b_won
    if a_won < 0 or b_won < 0:
        raise ValueError(f"discordant counts must be >= 0, got a_won={a_won}, b_won={b_won}")
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a_won, b_won) + 1))
    return min(1.0, 2 * tail / 2**n)


def stratified_paired_p_value(per_task: Sequence[PairedCounts]) -> float:
    """Exact two-sided test of "B is no better or worse than A" over all tasks together.

    The test permutes the run labels within each episode pair: the strata are the pairs, which
    lie inside their tasks, so tasks of any difficulty are respected (an easy task's
    concordant successes carry no information and drop out). Its exact null distribution is
    Binomial(all discordant pairs, 1/2), so the p-value is the exact McNemar p-value of the
    pooled discordant counts. This is also what the Cochran-Mantel-Haenszel test becomes for
    paired data: with one 2x2 table (run x success) per pair, its statistic equals McNemar's
    (Agresti, Categorical Data Analysis, 3rd ed., 2013, section 11.3.4). CMH over one table
    per *task* is not used: it treats A's and B's episodes as independent samples and ignores
    the pairing, so it is too conservative when seeds that are hard for A are hard for B too.
    """
    pooled = sum(per_task, PairedCounts(0, 0, 0, 0))
    return mcnemar_exact_p_value(pooled.a_won, pooled.b_won)


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Forty tasks tested at 0.05 each show two "significant" tasks by chance alone; Holm keeps
    the chance of any false claim at 0.05 without assuming the tasks independent (Holm 1979,
    Scand J Statist 6:65): the i-th smallest of m p-values is multiplied by m - i + 1, then
    made monotone and capped at 1.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# -- intervals of a difference ---------------------------------------------------------------


def paired_difference_interval(counts: PairedCounts, z: float = Z_95) -> tuple[float, float] | None:
    """95% interval of B's success rate minus A's from paired episodes; None without pairs.

    Newcombe's square-and-add interval for paired data (Newcombe 1998, "Improved confidence
    intervals for the difference between binomial proportions based on paired data", Stat Med
    17:2635, method 10): each run's rate gets its Wilson interval, and their distances from the
    rates are combined with the correlation phi of the two runs' outcomes, which Newcombe
    corrects towards 0 (phi* = (ad - bc - n/2) / sqrt(marginals) when ad - bc > n/2, 0 up to
    there, plain phi below 0). Chosen over Tango's score interval (Tango 1998, Stat Med 17:891)
    because it needs no iterative root finding and over the Wald interval because it stays in
    [-1, 1] and keeps its width at 0 or 100% success; Fagerland, Lydersen and Laake (2014,
    Stat Methods Med Res 24:224) recommend it with Tango's for small and large samples alike.
    """
    n = counts.n_pairs
    if n == 0:
        return None
    successes_b, successes_a = counts.both + counts.b_won, counts.both + counts.a_won
    p_b, p_a = successes_b / n, successes_a / n
    low_b, high_b = wilson_interval(successes_b, n, z)
    low_a, high_a = wilson_interval(successes_a, n, z)
    phi = _newcombe_corrected_phi(counts)
    difference = p_b - p_a
    below = _square_and_add(p_b - low_b, high_a - p_a, phi)
    above = _square_and_add(high_b - p_b, p_a - low_a, phi)
    return max(-1.0, difference - below), min(1.0, difference + above)


def _newcombe_corrected_phi(counts: PairedCounts) -> float:
    """Newcombe's phi*: the outcomes' correlation, shrunk by n/2 when positive, 0 with an empty margin."""
    a, b, c, d = counts.both, counts.a_won, counts.b_won, counts.neither
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    cross = a * d - b * c
    n = counts.n_pairs
    if cross > n / 2:
        return (cross - n / 2) / math.sqrt(margins)
    return 0.0 if cross >= 0 else cross / math.sqrt(margins)


def _square_and_add(distance_1: float, distance_2: float, phi: float) -> float:
    return math.sqrt(max(0.0, distance_1**2 + distance_2**2 - 2 * phi * distance_1 * distance_2))


def unpaired_difference_interval(
    successes_a: int, n_a: int, successes_b: int, n_b: int, z: float = Z_95
) -> tuple[float, float] | None:
    """95% interval of B's success rate minus A's from independent episodes; None if a side has none.

    Newcombe's hybrid score interval (Newcombe 1998, "Interval estimation for the difference
    between independent proportions: comparison of eleven methods", Stat Med 17:873, method
    10): L = d - sqrt((p_b - l_b)^2 + (u_a - p_a)^2), U = d + sqrt((u_b - p_b)^2 + (p_a - l_a)^2)
    with each rate's Wilson interval (l, u). For runs with other seeds, where nothing pairs.
    """
    if n_a <= 0 or n_b <= 0:
        return None
    p_a, p_b = successes_a / n_a, successes_b / n_b
    low_a, high_a = wilson_interval(successes_a, n_a, z)
    low_b, high_b = wilson_interval(successes_b, n_b, z)
    difference = p_b - p_a
    below = math.hypot(p_b - low_b, high_a - p_a)
    above = math.hypot(high_b - p_b, p_a - low_a)
    return difference - below, difference + above


# -- episode budgets -------------------------------------------------------------------------


def episodes_for_half_width(rate: float, half_width: float = 0.05, z: float = Z_95) -> int:
    """Episodes per task for a 95% Wilson interval of at most +-`half_width` at success `rate`.

    Wilson, not the normal approximation, because it is the interval every report shows (see
    `lerobot.evaluation.intervals`), and because the normal one promises +-0 from a single
    episode at 0% or 100% success. The half-width of Wilson's interval at observed rate p after
    n episodes is z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/(4n^2)) (Wilson 1927, JASA 22:209;
    Newcombe 1998, Stat Med 17:857, method 3); it falls as n grows, so the smallest n that
    meets the target is found by bisection. At p = 0.5 and +-5 points it gives 381, where the
    normal approximation gives 385.
    """
    if not 0.0 <= rate <= 1.0 or not 0.0 < half_width < 0.5:
        raise ValueError(f"rate={rate} must be in [0, 1] and half_width={half_width} in (0, 0.5)")
    low, high = 1, 1
    while _wilson_half_width(rate, high, z) > half_width:
        low, high = high, 2 * high
    while low < high:
        middle = (low + high) // 2
        if _wilson_half_width(rate, middle, z) > half_width:
            low = middle + 1
        else:
            high = middle
    return high


def _wilson_half_width(rate: float, n: int, z: float) -> float:
    z2_n = z * z / n
    return z / (1 + z2_n) * math.sqrt(rate * (1 - rate) / n + z2_n / (4 * n))


def pairs_to_detect(difference: float, discordance: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Episode pairs for McNemar's test to find a true difference `difference` (B minus A).

    Connor's sample size for the paired design (Connor 1987, "Sample size for testing
    differences in proportions for the paired-sample design", Biometrics 43:207, eq. 3):
    n = (z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2, where psi is the
    probability that a pair is discordant (estimated from the runs at hand) and delta the
    difference. A difference of delta needs at least |delta| of the pairs discordant, so psi is
    raised to |delta| when the observed discordance is lower.
    """
    delta = abs(difference)
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"difference={difference}: must be nonzero, between -1 and 1")
    psi = min(1.0, max(discordance, delta))
    normal = NormalDist()
    z_alpha, z_power = normal.inv_cdf(1 - alpha / 2), normal.inv_cdf(power)
    root = z_alpha * math.sqrt(psi) + z_power * math.sqrt(max(0.0, psi - delta * delta))
    return math.ceil(root * root / (delta * delta) - 1e-9)
