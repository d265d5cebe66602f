"""Confidence intervals for success rates.

Fifty episodes at 80% success leave the true rate anywhere between about 67% and 89%; two
policies 5 points apart on such runs are not told apart. Every success rate we publish
carries its interval so that readers see this without doing the arithmetic.

We use the Wilson score interval (Wilson, 1927) rather than the textbook normal
approximation p +/- z*sqrt(p(1-p)/n): the latter collapses to [p, p] at 0% and 100% success,
exactly the rates a scripted expert or a broken policy produce, and can leave [0, 1]. Wilson
stays inside [0, 1] and keeps a sensible width at the extremes and for small n (Brown, Cai
and DasGupta, "Interval Estimation for a Binomial Proportion", Statistical Science 2001).
"""

from __future__ import annotations

import math

Z_95 = 1.959963984540054
"""Two-sided 95% quantile of the standard normal distribution."""


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval of a success probability, as fractions in [0, 1]; None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes}: must be between 0 and n={n}")
    p = successes / n
    z2_n = z * z / n
    center = (p + z2_n / 2) / (1 + z2_n)
    half_width = z / (1 + z2_n) * math.sqrt(p * (1 - p) / n + z2_n / (4 * n))
    # At 0 (n) successes the lower (upper) bound is exactly 0 (1); rounding would say 1e-17.
    low = 0.0 if successes == 0 else max(0.0, center - half_width)
    high = 1.0 if successes == n else min(1.0, center + half_width)
    return low, high


def pc_wilson_interval(successes: int, n: int) -> list[float] | None:
    """The 95% Wilson interval in percent, `[low, high]`, as eval_info.json stores it."""
    interval = wilson_interval(successes, n)
    return None if interval is None else [100.0 * interval[0], 100.0 * interval[1]]
