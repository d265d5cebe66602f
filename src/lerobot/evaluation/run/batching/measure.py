"""Which batch size gives a workload the most env steps per second on this machine: measured.

`--eval.batch_size=0` without a measurement guesses from the core count (`auto_batch_size`).
A guess cannot know whether the simulator, the renderer, the policy or the harness's own
round trips bound a step, and each moves the best batch: on a 16-core GPU box ACT on 480x480
renders kept gaining from 8 envs to 32 (issue 29), where state-only envs on 2 cores gain
little past 2. So `--eval.measure_batch_size=true` runs the real loop (this policy, this env,
its workers laid out as the run would) at a few batch sizes, in ascending order, for a few
seconds each after a warm-up that leaves out starting the workers, and stops climbing once a
larger batch no longer gains; then the fastest size in row groups that take turns
(`--eval.row_groups`), which pay where a policy call is cheap against a group's simulation
and lose where its cost is fixed and large, and with rows advancing independently
(`--eval.independent_rows`), which pays where steps, resets or renders differ between envs
and costs the main process more rounds: again something only a measurement tells.
Episodes run for the measurement are thrown away; results never depend on the batch size
(per-episode seeds and policy rows).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lerobot.configs.env import TaskSpec
from lerobot.envs.slots import SlotEnv
from lerobot.evaluation.run.batching.layout import MAX_AUTO_BATCH_SIZE, arranged
from lerobot.evaluation.run.batching.remembered import BatchRate
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, RolloutStoppedError, run_episodes
from lerobot.policies.pretrained import RowPolicy

logger = logging.getLogger(__name__)

PROBED_BATCHES = (1, 2, 4, 8, 16, 24, 32, 48, 64)
PROBED_ROW_GROUPS = (2, 4)
WARMUP_S = 2.0
"""Steps of a batch's first seconds are not counted: its workers start and build their
simulators, the policy's first calls allocate (CUDA kernels, caches)."""
WINDOW_S = 5.0
"""How long each batch size is measured after its warm-up."""
MIN_ROUNDS = 10
"""Rounds counted at least, however long the window has lasted (`_StepClock`)."""
MIN_GAIN = 0.03
"""A larger batch must step this much faster to be worth its processes and memory."""
EPISODES_PER_ENV = 1000
"""Episodes queued per env: more than any measurement finishes, so no slot idles."""


@dataclass(frozen=True)
class BatchMeasurement:
    rates: tuple[BatchRate, ...]
    """In the order measured: batch sizes ascending in one group, then the best one in groups."""

    @property
    def best(self) -> BatchRate:
        """The fewest envs, then the fewest groups, within MIN_GAIN of the fastest: as fast, with
        fewer processes and policy calls."""
        fastest = max(rate.env_steps_per_s for rate in self.rates)
        near = [r for r in self.rates if r.env_steps_per_s * (1 + MIN_GAIN) >= fastest]
        return min(near, key=lambda r: (r.batch_size, r.independent_rows, r.row_groups))


def candidate_batches(cores: int, cap: int = MAX_AUTO_BATCH_SIZE) -> list[int]:
    """Batch sizes worth measuring: from half the cores (fewer envs than cores leave cores idle)
    to four times as many (envs waiting on a GPU render or a policy call leave their core to
    another), at most `cap`."""
    return [b for b in PROBED_BATCHES if cores / 2 <= b <= min(cap, 4 * cores)] or [1]


def candidate_row_groups(n_units: int) -> list[int]:
    """Groupings worth measuring for a batch whose envs answer in `n_units` units (worker
    processes, and envs of the main process): 2 and 4, where there are as many units."""
    return [groups for groups in PROBED_ROW_GROUPS if groups <= n_units]


RateAt = Callable[[int, int], float]
"""env_steps_per_s(batch_size, row_groups)."""


def measure_batch_sizes(
    env_steps_per_s: RateAt,
    candidates: Sequence[int],
    row_groups_at: Callable[[int], Sequence[int]] | None = None,
    row_groups: int = 1,
    independent_rate_at: Callable[[int], float] | None = None,
    independent_rows: bool = False,
) -> BatchMeasurement:
    """Measure `candidates` in ascending order in `row_groups` groups (1: lockstep), stopping at
    the first that is not MIN_GAIN faster than the fastest before it (past the machine's
    saturation each larger batch only adds processes); then, with `row_groups_at(batch_size)`,
    the fastest size split into those groupings, ascending, with the same stop; then, with
    `independent_rate_at(batch_size)`, the fastest size with rows advancing independently.
    `independent_rows`: `env_steps_per_s` itself runs with them (they were given)."""
    rates = _climb(env_steps_per_s, [(batch_size, row_groups) for batch_size in sorted(candidates)], [])
    if independent_rows:
        rates = [replace(rate, independent_rows=True) for rate in rates]
    if row_groups_at is not None:
        best = BatchMeasurement(tuple(rates)).best.batch_size
        rates = _climb(env_steps_per_s, [(best, groups) for groups in sorted(row_groups_at(best))], rates)
    if independent_rate_at is not None:
        best = BatchMeasurement(tuple(rates)).best.batch_size
        rates.append(_logged(BatchRate(best, independent_rate_at(best), independent_rows=True)))
    return BatchMeasurement(tuple(rates))


def _climb(
    env_steps_per_s: RateAt, settings: Sequence[tuple[int, int]], rates: list[BatchRate]
) -> list[BatchRate]:
    """`rates` and those of `settings` measured in order until one does not gain MIN_GAIN over
    the fastest so far (`rates` included)."""
    rates = list(rates)
    for batch_size, row_groups in settings:
        rate = _logged(BatchRate(batch_size, env_steps_per_s(batch_size, row_groups), row_groups))
        fastest = max((r.env_steps_per_s for r in rates), default=0.0)
        rates.append(rate)
        if len(rates) > 1 and rate.env_steps_per_s < fastest * (1 + MIN_GAIN):
            break
    return rates


def _logged(rate: BatchRate) -> BatchRate:
    logger.info(
        "batch size %d%s: %.0f env-steps/s",
        rate.batch_size,
        arranged(rate.row_groups, rate.independent_rows),
        rate.env_steps_per_s,
    )
    return rate


class _StepClock:
    """Counts the env steps of the rounds that end between the warm-up and the end of the window.

    The window lasts `window_s` and at least MIN_ROUNDS rounds: where a round takes a second
    (two cameras rendered on a CPU, a VLA's chunk at a large batch), a few seconds
    would hold two or three rounds, and the rate would be mostly where their ends happen to fall.
    """

    def __init__(self, warmup_s: float, window_s: float, min_rounds: int = MIN_ROUNDS):
        self.warmup_s, self.window_s, self.min_rounds = warmup_s, window_s, min_rounds
        self.first_round: float | None = None
        self.started: float | None = None
        self.last_round = 0.0
        self.steps = 0
        self.rounds = 0

    def count(self, steps: int) -> None:
        now = time.perf_counter()
        if self.first_round is None:
            self.first_round = now
        if self.started is not None:
            self.steps += steps
            self.rounds += 1
            self.last_round = now
        elif now - self.first_round >= self.warmup_s:
            self.started = now  # this round ends the warm-up; the next ones count

    def window_over(self) -> bool:
        if self.started is None or self.rounds < self.min_rounds:
            return False
        return time.perf_counter() - self.started >= self.window_s

    def rate(self) -> float:
        if self.started is None or self.last_round <= self.started:
            return 0.0
        return self.steps / (self.last_round - self.started)


def env_steps_per_second(
    env: SlotEnv,
    policy: RowPolicy,
    settings: RolloutSettings,
    task: TaskSpec,
    warmup_s: float | None = None,
    window_s: float | None = None,
) -> float:
    """Env steps per second of the rollout loop on `env` with `policy`, over `window_s` after
    `warmup_s` (default WARMUP_S and WINDOW_S); no videos. The policy's rows are reset afterwards."""
    clock = _StepClock(WARMUP_S if warmup_s is None else warmup_s, WINDOW_S if window_s is None else window_s)
    episodes = range(EPISODES_PER_ENV * env.num_envs)
    settings = replace(settings, start_seed=0, max_episodes_rendered=0, videos_dir=None)
    hooks = RolloutHooks(on_steps=clock.count, should_stop=clock.window_over)
    try:
        run_episodes(env, policy, episodes, settings, task, hooks)
    except RolloutStoppedError:
        pass
    finally:
        policy.reset()
    return clock.rate()
