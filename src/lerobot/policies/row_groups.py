"""Several groups of env slots sharing one policy, each group seeing only its own rows.

The rollout can split its slots into groups that take turns (`--eval.row_groups`): while the
policy computes the next actions of one group, the workers of the others step. Each group
sees a policy of its own size; underneath, one policy holds the rows of whichever group
called last, and the others' per-row state (queues, histories, generators) waits aside
(`save_rows`/`restore_rows`, as a policy server keeps its clients' rows). Row i of a group
continues exactly as it would in one batch: its results do not depend on the grouping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lerobot.policies.pretrained import RowPolicy

ROW_METHODS = frozenset(
    {"reset", "select_action", "actions_without_observation", "rows_reading_images", "take_queued_actions"}
)
"""The calls that read or change per-row state: the group's rows are loaded first."""


def can_move_rows(policy: RowPolicy) -> bool:
    """Whether the policy can keep the rows of several groups (`save_rows` of no row works)."""
    try:
        policy.save_rows([])
    except (AttributeError, NotImplementedError):
        return False
    return True


class _Holder:
    """Which group's rows the shared policy holds now."""

    def __init__(self) -> None:
        self.loaded: RowGroupPolicy | None = None

    def unload(self) -> None:
        """Put the rows the shared policy holds back with their group."""
        if self.loaded is not None:
            self.loaded._states = self.loaded.policy.save_rows(range(self.loaded.n_rows))
            self.loaded = None


def split_policy(policy: RowPolicy, sizes: Sequence[int]) -> list[RowGroupPolicy]:
    """One view of `policy` per group of `sizes[i]` rows; every row starts fresh."""
    holder = _Holder()
    return [RowGroupPolicy(policy, size, holder) for size in sizes]


class RowGroupPolicy:
    """A `RowPolicy` of `n_rows` rows over a policy shared with other groups (`split_policy`).

    Everything else (name, config, parameters) is the shared policy's.
    """

    def __init__(self, policy: RowPolicy, n_rows: int, holder: _Holder):
        self.policy, self.n_rows, self._holder = policy, n_rows, holder
        self._states: list[Any] = [None] * n_rows

    def _load(self) -> None:
        """Put this group's rows into the shared policy (saving the previous group's)."""
        if self._holder.loaded is self:
            return
        self._holder.unload()
        self.policy.restore_rows(self._states)
        self._holder.loaded = self

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.policy, name)  # AttributeError when the policy has none: hasattr works
        if name in ROW_METHODS and callable(value):
            return self._with_rows_loaded(value)
        return value

    def _with_rows_loaded(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self._load()
            return method(*args, **kwargs)

        return call


def select_action_of_groups(groups: Sequence[RowGroupPolicy], batch: dict[str, Any]) -> list[Any]:
    """Each group's actions from one call of the shared policy over all their rows: `batch`
    holds the groups' rows one group after the other. What rows that advance independently
    use to batch the groups that are ready at the same time (one model call, not one each).
    The rows' state goes back to their groups afterwards, also when the call raises."""
    holder = groups[0]._holder
    policy = groups[0].policy
    holder.unload()
    policy.restore_rows([state for group in groups for state in group._states])
    try:
        actions = policy.select_action(batch)
    finally:
        states = policy.save_rows(range(sum(group.n_rows for group in groups)))
        start = 0
        for group in groups:
            group._states, start = states[start : start + group.n_rows], start + group.n_rows
    return list(actions.split([group.n_rows for group in groups]))
