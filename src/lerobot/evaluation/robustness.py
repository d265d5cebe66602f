"""Success under perturbation beside success without it: LIBERO-PRO's suites regrouped by
perturbation family and base suite.

A robustness result is a drop: 92% on libero_spatial and 31% on libero_spatial_swap. So the
results of a run's perturbed suites are put beside those of the unperturbed suite they perturb,
from the same run or, in a comparison, from another one (`lerobot-eval-report A B`). The
grouping is read from the suite names alone (`lerobot.envs.libero_pro.suites`), so it also works
on files written before it existed, on merged shards and on plain `--env.type=libero` runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lerobot.envs.libero_pro.suites import perturbation_of
from lerobot.evaluation.intervals import pc_wilson_interval
from lerobot.evaluation.results import Summary

UNPERTURBED = "unperturbed"


@dataclass(frozen=True)
class SuiteRate:
    suite: str
    summary: Summary


@dataclass(frozen=True)
class RobustnessRow:
    """One base suite: its unperturbed rate (when run) and each family's rate on it."""

    base_suite: str
    unperturbed: SuiteRate | None
    perturbed: Mapping[str, SuiteRate]

    def drop(self, family: str) -> float | None:
        """Points lost under `family` (negative: lost), when both rates are known."""
        rate = self.perturbed.get(family)
        if rate is None or self.unperturbed is None:
            return None
        after, before = rate.summary.pc_success, self.unperturbed.summary.pc_success
        return None if after is None or before is None else after - before


@dataclass(frozen=True)
class Robustness:
    rows: tuple[RobustnessRow, ...]
    families: tuple[str, ...]
    """The families any row has, in first-seen order."""

    def family_overall(self, family: str) -> Summary:
        return pooled(row.perturbed[family].summary for row in self.rows if family in row.perturbed)

    def unperturbed_overall(self) -> Summary:
        return pooled(row.unperturbed.summary for row in self.rows if row.unperturbed is not None)


def robustness(groups: Mapping[str, Summary]) -> Robustness | None:
    """The perturbed suites among `groups` (suite -> summary) beside their base suites; None
    when no group is a perturbed suite."""
    perturbed: dict[str, dict[str, SuiteRate]] = {}
    for suite, summary in groups.items():
        perturbation = perturbation_of(suite)
        if perturbation is not None:
            perturbed.setdefault(perturbation.base_suite, {})[perturbation.family] = SuiteRate(suite, summary)
    if not perturbed:
        return None
    rows = tuple(
        RobustnessRow(
            base,
            SuiteRate(base, groups[base]) if base in groups else None,
            by_family,
        )
        for base, by_family in perturbed.items()
    )
    families = tuple(dict.fromkeys(family for row in rows for family in row.perturbed))
    return Robustness(rows, families)


def pooled_groups(group_maps: Iterable[Mapping[str, Summary]]) -> dict[str, Summary]:
    """Several runs' suites as one map; a suite run more than once keeps the first run's."""
    pooled_map: dict[str, Summary] = {}
    for groups in group_maps:
        for suite, summary in groups.items():
            pooled_map.setdefault(suite, summary)
    return pooled_map


def pooled(summaries: Iterable[Summary]) -> Summary:
    """Success over the episodes of several suites together, with its Wilson interval."""
    summaries = list(summaries)
    n = sum(s.n_episodes for s in summaries)
    successes = sum(s.n_successes or 0 for s in summaries)
    interval = pc_wilson_interval(successes, n)
    return Summary(
        n_episodes=n,
        n_successes=successes,
        pc_success=100.0 * successes / n if n else None,
        pc_success_ci95=tuple(interval) if interval else None,
        pc_success_at_end=None,
        avg_sum_reward=None,
        avg_max_reward=None,
        avg_episode_length=None,
        eval_s=None,
    )


def per_perturbation_json(groups: Mapping[str, Summary]) -> dict[str, Any] | None:
    """eval_info.json's `per_perturbation`: {family: {"overall", "per_base_suite": {base:
    {"suite", rates...}}}}, with `unperturbed` for the base suites the run also holds."""
    found = robustness(groups)
    if found is None:
        return None

    def rate(entry: SuiteRate) -> dict[str, Any]:
        return {"suite": entry.suite, **_rates(entry.summary)}

    document: dict[str, Any] = {}
    unperturbed = {row.base_suite: rate(row.unperturbed) for row in found.rows if row.unperturbed}
    if unperturbed:
        document[UNPERTURBED] = {
            "overall": _rates(found.unperturbed_overall()),
            "per_base_suite": unperturbed,
        }
    for family in found.families:
        per_base = {}
        for row in found.rows:
            if family in row.perturbed:
                per_base[row.base_suite] = rate(row.perturbed[family])
                drop = row.drop(family)
                if drop is not None:
                    per_base[row.base_suite]["pc_success_change"] = drop
        document[family] = {"overall": _rates(found.family_overall(family)), "per_base_suite": per_base}
    return document


def _rates(summary: Summary) -> dict[str, Any]:
    return {
        "pc_success": summary.pc_success,
        "pc_success_ci95": list(summary.pc_success_ci95) if summary.pc_success_ci95 else None,
        "n_successes": summary.n_successes,
        "n_episodes": summary.n_episodes,
    }
