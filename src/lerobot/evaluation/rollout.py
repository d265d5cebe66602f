"""The rollout loop: one batched policy call per step, each episode bound to its seed.

Env slot i of the vector env is batch row i of the policy. A slot runs one episode at a time;
when it ends, the slot takes the next pending episode (continuous batching) and the policy
forgets that row only. Because episode e always starts from seed start_seed + e with a freshly
reset policy row, per-episode results do not depend on the batch size, on sync or async
workers, on whether slots are refilled, or on an episode having been re-run after a crash.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lerobot.envs.vector import EnvWorkerError, LazyVectorEnv, SlotFailure, StepResult, stack_observations
from lerobot.evaluation.video import EpisodeVideo
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.processor.observation import observation_to_batch, task_strings
from lerobot.utils.constants import ENV_TASK, TASK
from lerobot.utils.device import policy_device

logger = logging.getLogger(__name__)

BatchHook = Callable[[dict[str, Any]], dict[str, Any]]
ActionHook = Callable[[torch.Tensor], torch.Tensor]
StepHook = Callable[[int, int, Any, np.ndarray, int], None]
"""on_step(env_id, episode_index, observation, action, step): the observation the action was
chosen from (one env's, unbatched) and that action, before the env steps. Step 0 marks a
(re)start: an episode re-run after a crash begins again at step 0."""


@dataclass(frozen=True)
class EpisodeResult:
    """What one finished episode produced."""

    episode_index: int
    seed: int
    success: bool
    """Succeeded at any step before the episode ended."""
    success_at_end: bool
    """Succeeded at the last step."""
    sum_reward: float
    max_reward: float
    n_steps: int
    wall_s: float
    video_path: str | None = None
    retries: int = 0
    """How many times the episode was re-run from its start after its env crashed or hung."""
    failure_reason: str | None = None
    """Set when every attempt failed; the episode then counts as unsuccessful."""
    init_state_index: int | None = None
    """Which of the task's fixed initial states the episode started from (LIBERO), as the env
    reported it in its reset info."""


@dataclass
class RolloutSettings:
    """How to run the episodes of one task."""

    n_episodes: int
    start_seed: int = 0
    episode_indices: Sequence[int] | None = None
    """Run only these episodes (e.g. the ones a resumed run is missing); default all."""
    max_episodes_rendered: int = 0
    videos_dir: Path | None = None
    fps: int = 30
    continuous_batching: bool = True
    overlap_inference: bool = False
    """Split the slots into two lanes and step one while the other's actions are computed
    (worker processes and at least two envs only; otherwise ignored)."""
    use_amp: bool = False
    max_episode_retries: int = 2
    rename_map: dict[str, str] = field(default_factory=dict)
    preprocessor: BatchHook | None = None
    postprocessor: ActionHook | None = None
    on_episode_end: Callable[[EpisodeResult], None] | None = None
    on_step: StepHook | None = None
    """Called for every active slot once its action is known (recording demonstrations)."""

    shard: tuple[int, int] | None = None
    """(i, n): only episodes e with e % n == i."""

    def pending_episodes(self) -> list[int]:
        indices = range(self.n_episodes) if self.episode_indices is None else self.episode_indices
        if self.shard is not None:
            index, count = self.shard
            indices = [e for e in indices if e % count == index]
        return sorted(indices)


@dataclass
class _RunningEpisode:
    index: int
    seed: int
    retries: int = 0
    started_at: float = field(default_factory=time.perf_counter)
    sum_reward: float = 0.0
    max_reward: float = -math.inf
    n_steps: int = 0
    success: bool = False
    success_at_end: bool = False
    init_state_index: int | None = None
    video: EpisodeVideo | None = None

    def record(self, step: StepResult) -> None:
        success_now = bool(step.info.get("is_success", False))
        self.sum_reward += step.reward
        self.max_reward = max(self.max_reward, step.reward)
        self.n_steps += 1
        self.success = self.success or success_now
        self.success_at_end = success_now
        if self.video is not None and step.frame is not None:
            self.video.add(step.frame)

    def finish(self) -> EpisodeResult:
        video_path = None
        if self.video is not None:
            self.video.close()
            video_path = str(self.video.path)
        return EpisodeResult(
            episode_index=self.index,
            seed=self.seed,
            success=self.success,
            success_at_end=self.success_at_end,
            sum_reward=self.sum_reward,
            max_reward=self.max_reward if self.n_steps else 0.0,
            n_steps=self.n_steps,
            wall_s=time.perf_counter() - self.started_at,
            video_path=video_path,
            retries=self.retries,
            init_state_index=self.init_state_index,
        )

    def abandon(self, reason: str) -> EpisodeResult:
        """The result of an episode whose every attempt failed: unsuccessful, with the reason."""
        self.discard_video()
        return EpisodeResult(
            episode_index=self.index,
            seed=self.seed,
            success=False,
            success_at_end=False,
            sum_reward=0.0,
            max_reward=0.0,
            n_steps=self.n_steps,
            wall_s=time.perf_counter() - self.started_at,
            retries=self.retries,
            failure_reason=reason,
            init_state_index=self.init_state_index,
        )

    def discard_video(self) -> None:
        if self.video is not None:
            self.video.close()
            self.video.path.unlink(missing_ok=True)
            self.video = None


def run_episodes(
    env: LazyVectorEnv, policy: PreTrainedPolicy, settings: RolloutSettings
) -> list[EpisodeResult]:
    """Run the episodes of one task on `env`; results sorted by episode index."""
    return _RolloutLoop(env, policy, settings).run()


class _RolloutLoop:
    """What every lane shares: the env, the queue of pending episodes, retries and results.

    A lane is a group of env slots with its own policy rows. Without overlap there is one lane
    of every slot: choose actions, step, repeat. With `settings.overlap_inference` the slots split into
    two lanes, each with a twin of the policy (same weights, its own per-row state), and one
    lane's envs step in their workers while the other lane's actions are computed.
    """

    def __init__(self, env: LazyVectorEnv, policy: PreTrainedPolicy, settings: RolloutSettings):
        self.env, self.settings = env, settings
        self.device = policy_device(policy)
        self.pending = deque(settings.pending_episodes())
        self.retries: dict[int, int] = {}
        self.results: list[EpisodeResult] = []
        self.lanes = [
            _Lane(self, env_ids, lane_policy) for env_ids, lane_policy in _split_lanes(env, policy, settings)
        ]

    def run(self) -> list[EpisodeResult]:
        if not self.pending:
            return []
        descriptions = task_strings(_call_or_none(self.env, "task_description", "task"), self.env.num_envs)
        env_tasks = task_strings(_call_or_none(self.env, "task"), self.env.num_envs)
        for lane in self.lanes:
            lane.set_tasks(descriptions, env_tasks)
        # One inference-mode scope for the whole loop rather than one per step: entering it
        # costs microseconds, which count against a state-only step of under a millisecond.
        with torch.inference_mode():
            if len(self.lanes) == 1:
                self._run_one_lane(self.lanes[0])
            else:
                self._run_overlapped()
        return sorted(self.results, key=lambda r: r.episode_index)

    def _run_one_lane(self, lane: _Lane) -> None:
        while self.pending or lane.active_ids():
            if lane.send_step():
                lane.collect_step()

    def _run_overlapped(self) -> None:
        """Collect one lane's step, choose its next actions and send them; then the other lane.

        While a lane is being collected and its actions computed, the other lane's envs are
        stepping in their worker processes.
        """
        in_flight = [lane.send_step() for lane in self.lanes]
        while self.pending or any(in_flight) or any(lane.active_ids() for lane in self.lanes):
            for index, lane in enumerate(self.lanes):
                if in_flight[index]:
                    lane.collect_step()
                in_flight[index] = lane.send_step()

    def finish(self, result: EpisodeResult) -> None:
        self.results.append(result)
        if self.settings.on_episode_end is not None:
            self.settings.on_episode_end(result)


def _split_lanes(
    env: LazyVectorEnv, policy: PreTrainedPolicy, settings: RolloutSettings
) -> list[tuple[list[int], PreTrainedPolicy]]:
    """Env slots per lane and the policy each lane calls: two halves only when overlapping
    can help (at least two envs, stepped in worker processes)."""
    slots = list(range(env.num_envs))
    if not (settings.overlap_inference and env.use_async and env.num_envs >= 2):
        return [(slots, policy)]
    half = (env.num_envs + 1) // 2
    return [(slots[:half], policy.rollout_twin()), (slots[half:], policy.rollout_twin())]


class _Lane:
    """Env slots `env_ids` stepped together; policy row j is env slot env_ids[j]."""

    def __init__(self, loop: _RolloutLoop, env_ids: Sequence[int], policy: PreTrainedPolicy):
        self.loop, self.env, self.settings = loop, loop.env, loop.settings
        self.env_ids = list(env_ids)
        self.policy = policy
        self.device = loop.device
        self.slots: list[_RunningEpisode | None] = [None] * len(self.env_ids)
        self.observations: list[Any] = [None] * len(self.env_ids)
        self.step_index = 0
        self.action_shape = (len(self.env_ids), *self.env.single_action_space.shape)
        self.descriptions: list[str] = []
        self.env_tasks: list[str] = []
        self.stepping: list[int] = []
        """Rows sent a step that `collect_step` has not collected yet."""

    def set_tasks(self, descriptions: Sequence[str], env_tasks: Sequence[str]) -> None:
        self.descriptions = [descriptions[i] for i in self.env_ids]
        self.env_tasks = [env_tasks[i] for i in self.env_ids]

    def active_ids(self) -> list[int]:
        """Rows running an episode."""
        return [row for row, slot in enumerate(self.slots) if slot is not None]

    def send_step(self) -> bool:
        """Start what can start, choose the active rows' actions and send them to their envs.

        False when no row is active (nothing was sent).
        """
        if self.loop.pending:
            self._start_pending_episodes()
        active = self.active_ids()
        if not active:
            return False  # every start failed (back in the queue), or nothing left to run
        actions = self._select_actions(active)
        self._report_steps(active, actions)
        recorded = (
            [self.env_ids[r] for r in active if self.slots[r].video is not None]
            if self._videos_open()
            else ()
        )
        self.stepping = active
        self.env.step_at_async(
            [self.env_ids[r] for r in active], [actions[r] for r in active], render_ids=recorded
        )
        return True

    def collect_step(self) -> None:
        """Apply the outcomes of the step `send_step` sent."""
        active, self.stepping = self.stepping, []
        outcomes = self.env.step_at_wait([self.env_ids[r] for r in active])
        for row, outcome in zip(active, outcomes, strict=True):
            if isinstance(outcome, SlotFailure):
                self._handle_failure(row, outcome.describe("step"))
            else:
                self._apply_step(row, outcome)
        self.step_index += 1

    def _videos_open(self) -> bool:
        return any(slot is not None and slot.video is not None for slot in self.slots)

    def _start_pending_episodes(self) -> None:
        pending = self.loop.pending
        free = [row for row, slot in enumerate(self.slots) if slot is None]
        if not self.settings.continuous_batching and len(free) < len(self.slots):
            return  # without refilling, a new wave starts only when the whole lane is idle
        starting = free[: len(pending)]
        if not starting:
            return
        episodes = [pending.popleft() for _ in starting]
        seeds = [self.settings.start_seed + e for e in episodes]
        # The episode index travels with the reset: benchmarks with fixed initial states
        # (LIBERO's init states) pick them by episode, never by slot or reset count.
        options = [{"episode_index": e} for e in episodes]
        resets = self.env.reset_at(
            [self.env_ids[r] for r in starting], seeds, options, tolerate_failures=True
        )
        for row, episode, seed, outcome in zip(starting, episodes, seeds, resets, strict=True):
            self.slots[row] = _RunningEpisode(
                index=episode, seed=seed, retries=self.loop.retries.get(episode, 0)
            )
            if isinstance(outcome, SlotFailure):
                self._handle_failure(row, outcome.describe("reset"))
            else:
                observation, info = outcome
                self.observations[row] = observation
                self.slots[row].init_state_index = info.get("init_state_index")
        self.policy.reset(env_ids=starting, seeds=seeds)
        self._open_videos([row for row in starting if self.slots[row] is not None])

    def _open_videos(self, rows: Sequence[int]) -> None:
        """Start the videos of episodes that are recorded, with the first frame after reset."""
        if self.settings.videos_dir is None:
            return
        recorded = [row for row in rows if self.slots[row].index < self.settings.max_episodes_rendered]
        if not recorded:
            return
        frames = self.env.render_at([self.env_ids[r] for r in recorded], tolerate_failures=True)
        for row, frame in zip(recorded, frames, strict=True):
            if isinstance(frame, SlotFailure):
                self._handle_failure(row, frame.describe("render"))
                continue
            path = Path(self.settings.videos_dir) / f"eval_episode_{self.slots[row].index}.mp4"
            self.slots[row].video = EpisodeVideo(path, self.settings.fps)
            self.slots[row].video.add(frame)

    def _select_actions(self, active: Sequence[int]) -> np.ndarray:
        """One policy call for every row; rows of idle slots are computed and ignored."""
        if len(active) == len(self.observations):
            stacked = stack_observations(self.observations)
        else:
            filler = self.observations[active[0]]
            stacked = stack_observations([obs if obs is not None else filler for obs in self.observations])
        batch: dict[str, Any] = observation_to_batch(stacked, self.device, self.settings.rename_map)
        batch[TASK] = self.descriptions
        batch[ENV_TASK] = self.env_tasks
        if self.settings.preprocessor is not None:
            batch = self.settings.preprocessor(batch)
        amp = torch.autocast(self.device.type) if self.settings.use_amp else nullcontext()
        with amp:
            actions = self.policy.select_action(batch)
            if self.settings.postprocessor is not None:
                actions = self.settings.postprocessor(actions)
        if actions.device.type != "cpu" or actions.dtype != torch.float32:
            actions = actions.to("cpu", torch.float32)  # the one device-to-host copy per step
        actions = actions.numpy()
        self._check_actions(actions, active)
        return actions

    def _report_steps(self, active: Sequence[int], actions: np.ndarray) -> None:
        if self.settings.on_step is None:
            return
        for row in active:
            episode = self.slots[row]
            self.settings.on_step(
                self.env_ids[row], episode.index, self.observations[row], actions[row], episode.n_steps
            )

    def _check_actions(self, actions: np.ndarray, active: Sequence[int]) -> None:
        expected = self.action_shape
        if actions.shape != expected:
            raise ValueError(
                f"policy {self.policy.name!r} returned actions of shape {actions.shape} at step "
                f"{self.step_index}; expected {expected}"
            )
        if np.isfinite(actions).all():  # the common case, without indexing the active rows
            return
        if not np.isfinite(actions[list(active)]).all():
            raise ValueError(
                f"policy {self.policy.name!r} returned NaN or inf actions at step {self.step_index} "
                f"(expected finite actions of shape {expected})"
            )

    def _apply_step(self, row: int, step: StepResult) -> None:
        episode = self.slots[row]
        episode.record(step)
        self.observations[row] = step.observation
        if step.terminated or step.truncated:
            self._finish(row, episode.finish())

    def _handle_failure(self, row: int, reason: str) -> None:
        """Replace the env; re-run its episode from the start (same seed) or give it up."""
        episode = self.slots[row]
        logger.warning("episode %d: %s", episode.index, reason.splitlines()[0])
        self.env.restart([self.env_ids[row]])
        retries = self.loop.retries
        attempts = retries.get(episode.index, 0) + 1
        if attempts <= self.settings.max_episode_retries:
            episode.discard_video()
            retries[episode.index] = attempts
            self.loop.pending.appendleft(episode.index)
            self.slots[row] = None
        else:
            self._finish(row, episode.abandon(reason.splitlines()[0]))

    def _finish(self, row: int, result: EpisodeResult) -> None:
        self.slots[row] = None
        self.loop.finish(result)


def _call_or_none(env: LazyVectorEnv, *names: str) -> Sequence[Any] | None:
    """The first attribute among `names` that the sub-envs have, read once per task."""
    for name in names:
        try:
            return list(env.call(name))
        except EnvWorkerError:  # the env does not define it; try the next name
            continue
    return None
