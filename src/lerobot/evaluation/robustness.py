"""Success under perturbation beside success without it: a run's task groups regrouped by
perturbation family and base suite, as their benchmarks declare them.

A robustness result is a drop: 92% on a suite and 31% on the same suite with its objects
swapped. So the results of a run's perturbed groups are put beside those of the unperturbed
group they perturb, from the same run or, in a comparison, from another one
(`lerobot-eval-report A B`). Which group perturbs which is declared by the benchmarks
(`EnvConfig.perturbation_of`), as they declare their tasks, and asked of every registered one
by group name alone: so the regrouping also works on files written before it existed, on
merged shards and on a run of the unperturbed suites under another env type.

The regrouping reads four numbers of a group (`SuccessRate`, which the result model's `Summary`
has), so the result model builds on it and not the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import lerobot.envs  # noqa: F401  (registers every benchmark's config, with its declarations)
from lerobot.configs.env import EnvConfig, Perturbation
from lerobot.evaluation.intervals import pc_wilson_interval

UNPERTURBED = "unperturbed"


class SuccessRate(Protocol):
    """What the regrouping reads of a group's result (the result model's `Summary` has it)."""

    @property
    def n_episodes(self) -> int: ...

    @property
    def n_successes(self) -> int | None: ...

    @property
    def pc_success(self) -> float | None: ...

    @property
    def pc_success_ci95(self) -> tuple[float, float] | None: ...


@dataclass(frozen=True)
class PooledRate:
    """Success over the episodes of several groups together, with its Wilson interval."""

    n_episodes: int
    n_successes: int
    pc_success: float | None
    pc_success_ci95: tuple[float, float] | None

    @classmethod
    def of(cls, rates: Iterable[SuccessRate]) -> PooledRate:
        rates = list(rates)
        n = sum(r.n_episodes for r in rates)
        successes = sum(r.n_successes or 0 for r in rates)
        interval = pc_wilson_interval(successes, n)
        return cls(
            n_episodes=n,
            n_successes=successes,
            pc_success=100.0 * successes / n if n else None,
            pc_success_ci95=tuple(interval) if interval else None,
        )


@dataclass(frozen=True)
class SuiteRate:
    suite: str
    summary: SuccessRate


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

    def family_overall(self, family: str) -> PooledRate:
        return PooledRate.of(row.perturbed[family].summary for row in self.rows if family in row.perturbed)

    def unperturbed_overall(self) -> PooledRate:
        return PooledRate.of(row.unperturbed.summary for row in self.rows if row.unperturbed is not None)


def declared_perturbation(group: str) -> Perturbation | None:
    """The perturbation a registered benchmark declares for the group named `group`; None when
    none does (an unperturbed group, or a benchmark without perturbed groups)."""
    for config_class in EnvConfig.get_known_choices().values():
        perturbation = config_class.perturbation_of(group)
        if perturbation is not None:
            return perturbation
    return None


def robustness(groups: Mapping[str, SuccessRate]) -> Robustness | None:
    """The perturbed groups among `groups` (group -> rate) beside their base suites; None
    when no group is a perturbed one."""
    perturbed: dict[str, dict[str, SuiteRate]] = {}
    for suite, summary in groups.items():
        perturbation = declared_perturbation(suite)
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


def pooled_groups(group_maps: Iterable[Mapping[str, SuccessRate]]) -> dict[str, SuccessRate]:
    """Several runs' groups as one map; a group run more than once keeps the first run's."""
    pooled_map: dict[str, SuccessRate] = {}
    for groups in group_maps:
        for suite, summary in groups.items():
            pooled_map.setdefault(suite, summary)
    return pooled_map


def per_perturbation_json(groups: Mapping[str, SuccessRate]) -> dict[str, Any] | None:
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


def _rates(summary: SuccessRate) -> dict[str, Any]:
    return {
        "pc_success": summary.pc_success,
        "pc_success_ci95": list(summary.pc_success_ci95) if summary.pc_success_ci95 else None,
        "n_successes": summary.n_successes,
        "n_episodes": summary.n_episodes,
    }
