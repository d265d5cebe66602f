"""The rollout loop: one batched policy call per step, each episode bound to its seed.

Env slot i of the vector env is batch row i of the policy. A slot runs one episode at a time;
when it ends, the slot takes the next pending episode (continuous batching) and the policy
forgets that row only. Because episode e always starts from seed start_seed + e with a freshly
reset policy row, per-episode results do not depend on the batch size, on sync or async
workers, on whether slots are refilled, or on an episode having been re-run after a crash.
With row groups or independent rows, each group of slots is a loop of its own, and
`schedules` orders their rounds.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import TaskSpec
from lerobot.configs.eval import EvalConfig
from lerobot.envs.commands import ChunkResult, StepResult
from lerobot.envs.vector import SlotEnv, SlotFailure, SlotGroup, stack_observations
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.schedules import (
    Planning,
    answer_planning,
    run_as_ready,
    run_in_turns,
    slot_groups,
    with_this_process_as_one,
)
from lerobot.policies.pretrained import RowPolicy
from lerobot.policies.row_groups import split_policy
from lerobot.processor.observation import observation_to_batch
from lerobot.utils.constants import ENV_TASK, TASK
from lerobot.utils.device_utils import policy_device
from lerobot.utils.errors import HarnessError, PolicyError
from lerobot.utils.logging_utils import one_line
from lerobot.utils.video import EpisodeVideo

logger = logging.getLogger(__name__)

DEFAULT_FPS = 30
"""Video frame rate of an env that states none."""

BatchHook = Callable[[dict[str, Any]], dict[str, Any]]
ActionHook = Callable[[torch.Tensor], torch.Tensor]
StepHook = Callable[[int, int, Any, np.ndarray, int], None]
"""on_step(env_id, episode_index, observation, action, step): the observation the action was
chosen from (one env's, unbatched) and that action, before the env steps. Step 0 marks a
(re)start: an episode re-run after a crash begins again at step 0."""


@dataclass(frozen=True)
class RolloutHooks:
    """What the caller wants to hear while episodes run."""

    on_episode_end: Callable[[EpisodeResult], None] | None = None
    on_step: StepHook | None = None
    """Called for every active slot once its action is known (recording demonstrations)."""
    on_steps: Callable[[int], None] | None = None
    """Called after every round with the number of env steps it took (each step of a chunk
    counts): what measuring a batch size's throughput counts (`batch_probe`)."""
    should_stop: Callable[[], bool] | None = None
    """Asked before every step; True ends the loop with RolloutStoppedError (a run stopping its
    other tasks when one fails or is interrupted)."""


class RolloutStoppedError(Exception):
    """The caller's `should_stop` asked the loop to end; unfinished episodes are not reported."""


@dataclass(frozen=True)
class RolloutSettings:
    """How episodes run: the same for every task of a run, on every backend."""

    start_seed: int = 0
    """Episode e starts from seed start_seed + e."""
    max_episodes_rendered: int = 0
    """Episodes 0..N-1 of each task get a video."""
    videos_dir: Path | None = None
    """The run's video folder; each task writes into its own subfolder (`videos_dir_for`)."""
    continuous_batching: bool = True
    chunks_in_workers: bool = True
    """A row inside an action chunk sends the rest of it to its env worker in one message
    (`RowPolicy.take_queued_actions`); False: one round trip per step. Results are identical."""
    row_groups: int = 1
    """Split the slots into this many groups that take turns: while the policy computes one
    group's actions, the other groups' workers step (`run_episodes`; `--eval.row_groups`)."""
    independent_rows: bool = False
    """Each worker's slots advance on their own: their next actions are computed as soon as
    they are back, batched with the others back by then (`run_as_ready`)."""
    use_amp: bool = False
    max_episode_retries: int = 2
    rename_map: Mapping[str, str] = field(default_factory=dict)
    preprocessor: BatchHook | None = None
    postprocessor: ActionHook | None = None

    @classmethod
    def from_config(
        cls,
        eval_cfg: EvalConfig,
        seed: int,
        *,
        use_amp: bool = False,
        rename_map: Mapping[str, str] | None = None,
        videos_dir: Path | None = None,
        preprocessor: BatchHook | None = None,
        postprocessor: ActionHook | None = None,
    ) -> RolloutSettings:
        """The settings `--eval.*` (and `--seed`, `--policy.use_amp`, `--rename_map`) describe."""
        return cls(
            start_seed=seed,
            max_episodes_rendered=eval_cfg.max_episodes_rendered,
            videos_dir=Path(videos_dir) if videos_dir is not None else None,
            continuous_batching=eval_cfg.continuous_batching,
            chunks_in_workers=eval_cfg.chunks_in_workers,
            row_groups=eval_cfg.row_groups,
            independent_rows=bool(eval_cfg.independent_rows),
            use_amp=use_amp,
            max_episode_retries=eval_cfg.max_episode_retries,
            rename_map=dict(rename_map or {}),
            preprocessor=preprocessor,
            postprocessor=postprocessor,
        )

    def videos_dir_for(self, task: TaskSpec) -> Path | None:
        """Where a task's videos go: `<videos_dir>/<group>_<task_id>/` (a task without a group,
        as LeRobot's single-env `eval_policy` runs it, writes straight into `videos_dir`)."""
        if self.videos_dir is None:
            return None
        return self.videos_dir / task.video_folder if task.group else self.videos_dir


def task_of_env(env: SlotEnv) -> TaskSpec:
    """The task a vector env runs: the one it was built for, else what its metadata says.

    Envs built by `lerobot.envs.factory` carry their `TaskSpec`; for any other vector env the
    name, description and fps come from `metadata` (as LeRobot's env factory fills it), with no
    call into its workers.
    """
    if env.task is not None:
        return env.task
    metadata = env.metadata or {}
    return TaskSpec(
        group="",
        task_id=0,
        name=str(metadata.get("task", "")),
        description=str(metadata.get("task_description", "")),
        fps=int(metadata.get("render_fps") or DEFAULT_FPS),
    )


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

    def finish(self, policy_error: str | None = None) -> EpisodeResult:
        """The episode's result; `policy_error`: the policy's output ended it (it is scored)."""
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
            policy_error=one_line(policy_error) if policy_error is not None else None,
        )

    def abandon(self, reason: str) -> EpisodeResult:
        """The result of an episode whose every attempt failed: unsuccessful, with the reason."""
        self.discard_video()
        return EpisodeResult.failed(
            self.index,
            self.seed,
            reason,
            self.retries,
            n_steps=self.n_steps,
            wall_s=time.perf_counter() - self.started_at,
            init_state_index=self.init_state_index,
        )

    def discard_video(self) -> None:
        if self.video is not None:
            self.video.close()
            self.video.path.unlink(missing_ok=True)
            self.video = None


def run_episodes(
    env: SlotEnv,
    policy: RowPolicy,
    episodes: Iterable[int],
    settings: RolloutSettings,
    task: TaskSpec | None = None,
    hooks: RolloutHooks | None = None,
) -> list[EpisodeResult]:
    """Run `episodes` (indices) of one task on `env`; results sorted by episode index.

    `task` names the task for the policy (its description) and the videos (folder, fps);
    default: the env's own (`task_of_env`).
    """
    task = task if task is not None else task_of_env(env)
    work = _Work(deque(sorted(episodes)))
    hooks = hooks or RolloutHooks()
    if settings.independent_rows:
        groups = slot_groups(env, policy, env.num_envs, "--eval.independent_rows=true")
        groups = with_this_process_as_one(env, groups)
    else:
        groups = slot_groups(env, policy, settings.row_groups)
    if len(groups) < 2:
        return _RolloutLoop(env, policy, work, settings, task, hooks).run()
    views = split_policy(policy, [len(group) for group in groups])
    loops = [
        _RolloutLoop(SlotGroup(env, group), view, work, settings, task, hooks)
        for group, view in zip(groups, views, strict=True)
    ]
    if settings.independent_rows:
        return run_as_ready(env, loops, work)
    return run_in_turns(loops, work, hooks)


@dataclass
class _Work:
    """What every group of slots draws from and reports to."""

    pending: deque[int]
    retries: dict[int, int] = field(default_factory=dict)
    results: list[EpisodeResult] = field(default_factory=list)


@dataclass(frozen=True)
class _Round:
    """One round of a slot group: the slots that step (with their action, or rest of chunk)
    and those that reset for their next episodes."""

    active: list[int]
    actions: Any
    chunked: bool
    starting: list[int]
    episodes: list[int]
    seeds: list[int]
    recorded: list[int]
    blind: list[int]

    def command(self) -> tuple:
        """The arguments of `step_and_reset_at` (or `send_step_and_reset_at`) for this round.

        The episode index travels with the reset: benchmarks with fixed initial states
        (LIBERO's init states) pick them by episode, never by slot or reset count.
        """
        options = [{"episode_index": e} for e in self.episodes]
        actions = [self.actions[i] for i in self.active]
        return (self.active, actions, self.starting, self.seeds, options, self.recorded, self.blind)


class _RolloutLoop:
    def __init__(
        self,
        env: SlotEnv,
        policy: RowPolicy,
        work: _Work,
        settings: RolloutSettings,
        task: TaskSpec,
        hooks: RolloutHooks,
    ):
        self.env, self.policy, self.settings, self.task, self.hooks = env, policy, settings, task, hooks
        self.videos_dir = settings.videos_dir_for(task)
        self.device = policy_device(policy)
        self.pending, self.retries, self.results = work.pending, work.retries, work.results
        self.slots: list[_RunningEpisode | None] = [None] * env.num_envs
        self.observations: list[Any] = [None] * env.num_envs
        self.blind: list[bool] = [False] * env.num_envs
        """Slot i's observation has black images (a blind step): the policy must not read them."""
        self.cut_short: dict[int, str] = {}
        """Slot -> why its episode ends after its current chunk: the policy's next queued action
        is NaN or inf (the chunk was cut before it)."""
        self.sends_chunks = (
            settings.chunks_in_workers
            and getattr(env, "runs_action_chunks", False)
            and hooks.on_step is None  # a recording wants every observation
            and hasattr(policy, "take_queued_actions")
        )
        self.step_index = 0
        self.action_shape = (env.num_envs, *env.single_action_space.shape)
        self.descriptions = [task.description] * env.num_envs
        self.env_tasks = [task.name] * env.num_envs

    def stop_if_asked(self) -> None:
        """RolloutStoppedError when the caller's `should_stop` says so (asked before each round)."""
        if self.hooks.should_stop is not None and self.hooks.should_stop():
            raise RolloutStoppedError(f"{self.task.label}: stopped with {len(self.pending)} episodes pending")

    def busy(self) -> bool:
        """Whether an episode is running in one of this loop's slots."""
        return any(slot is not None for slot in self.slots)

    def run(self) -> list[EpisodeResult]:
        if not self.pending:
            return []
        # One inference-mode scope for the whole loop rather than one per step: entering it
        # costs microseconds, which count against a state-only step of under a millisecond.
        with torch.inference_mode():
            while self.pending or self.busy():
                self.stop_if_asked()
                self._step_once()
        return sorted(self.results, key=lambda r: r.episode_index)

    def _step_once(self) -> None:
        """Step every running episode while free slots reset for their next episodes.

        A slot whose episode just ended resets in the same round as the others step, so in
        worker processes its reset does not hold them up; it steps from the next round on.
        """
        planned = self.plan_round()
        if planned is not None:
            self.apply_round(planned, *self.env.step_and_reset_at(*planned.command()))

    def send_round(self, planned: _Round | None) -> _Round | None:
        """Send a planned round (None: nothing) to the workers, who step while the caller goes
        on; its replies are gathered by `collect_round`. For groups of a `LazyVectorEnv`
        (`SlotGroup`)."""
        if planned is not None:
            self.env.send_step_and_reset_at(*planned.command())
        return planned

    def collect_round(self, sent: _Round) -> None:
        self.apply_round(sent, *self.env.gather_step_and_reset(sent.active, sent.starting))

    def plan_round(self) -> _Round | None:
        """This round's actions for the running episodes and the resets of free slots; None
        when there is nothing to send (no episode to run, or the policy failed every row)."""
        return answer_planning(self.planning(), self.compute_actions)

    def planning(self) -> Planning:
        """`plan_round` as a generator that yields the policy's batch when the round needs the
        model and is sent its output (or thrown its HarnessError or PolicyError): so that the
        rows of several groups can share one model call (`run_as_ready`)."""
        starting = self._claim_free_slots()
        active = self._active_ids()
        if not active and not starting:
            return None
        actions: Any = None
        chunks = self._take_queued_chunks(active) if active and self.sends_chunks else None
        if chunks is not None:
            actions, active = chunks
        elif active:
            actions = yield from self._select_actions_or_fail(active)
            if actions is None:
                return None  # rows the policy failed are settled; the free slots start next round
            active = self._end_non_finite_rows(active, actions)
            self._report_steps(active, actions)
        recorded = [i for i in active if self.slots[i].video is not None]
        blind = self._slots_stepping_blind(active, recorded) if chunks is None else []
        episodes = [self.pending.popleft() for _ in starting]
        seeds = [self.settings.start_seed + e for e in episodes]
        return _Round(active, actions, chunks is not None, starting, episodes, seeds, recorded, blind)

    def apply_round(self, planned: _Round, steps: Sequence[Any], resets: Sequence[Any]) -> None:
        """Record the round's steps, end or re-run episodes, and start the reset slots' ones."""
        for env_id, outcome in zip(planned.active, steps, strict=True):
            if isinstance(outcome, SlotFailure):
                self.cut_short.pop(env_id, None)
                self._handle_failure(env_id, outcome.describe("step"))
            elif isinstance(outcome, ChunkResult):
                self._apply_chunk(env_id, outcome)
            else:
                self._apply_step(env_id, outcome)
        if planned.active:
            actions = planned.actions
            self.step_index += max(len(actions[i]) for i in planned.active) if planned.chunked else 1
        if self.hooks.on_steps is not None:
            self.hooks.on_steps(_env_steps_taken(steps))
        if planned.starting:
            self._start_episodes(planned.starting, planned.episodes, planned.seeds, resets)

    def _take_queued_chunks(self, active: Sequence[int]) -> tuple[list[Any], list[int]] | None:
        """(each slot's rest of chunk as a (steps, action_dim) array, the slots that step it),
        or None when some row reads its next observation (the per-step path then runs).

        A chunk stops at the task's step limit; a chunk holding a NaN or inf action stops
        before it, and that episode ends there as the policy's (`cut_short`), as it would step
        by step. The rows' actions go through the postprocessor together, one action per row
        of its input, as a step's batch of actions does.
        """
        rest = self.policy.take_queued_actions(len(self.observations))
        if rest is None:
            return None
        lengths = [len(chunk) for chunk in rest]
        flat = self._on_host(torch.cat(list(rest)))
        if flat.shape[1:] != self.action_shape[1:]:
            raise ValueError(
                f"policy {self.policy.name!r} queued actions of shape {flat.shape[1:]} at step "
                f"{self.step_index}; expected {self.action_shape[1:]}"
            )
        chunks = np.split(flat, np.cumsum(lengths)[:-1])
        stepping = []
        for env_id in active:
            chunk = self._cut_chunk(env_id, chunks[env_id])
            if chunk is not None:
                chunks[env_id] = chunk
                stepping.append(env_id)
        return chunks, stepping

    def _cut_chunk(self, env_id: int, chunk: np.ndarray) -> np.ndarray | None:
        """The part of a slot's chunk it steps (None: none, its episode has ended)."""
        episode = self.slots[env_id]
        if self.task.max_steps is not None:
            chunk = chunk[: max(1, self.task.max_steps - episode.n_steps)]
        finite = np.isfinite(chunk).all(axis=1)
        if finite.all():
            return chunk
        first_bad = int(np.argmin(finite))
        if first_bad == 0:
            self._end_for_non_finite_action(env_id)
            return None
        self.cut_short[env_id] = self._non_finite_reason(episode.n_steps + first_bad)
        return chunk[:first_bad]

    def _apply_chunk(self, env_id: int, chunk: ChunkResult) -> None:
        episode = self.slots[env_id]
        for step in chunk.steps[:-1]:
            episode.record(step)
        self._apply_step(env_id, chunk.last)
        reason = self.cut_short.pop(env_id, None)
        if reason is not None and self.slots[env_id] is episode:
            self._end_for_non_finite_action(env_id, reason)

    def _slots_stepping_blind(self, active: Sequence[int], recorded: Sequence[int]) -> list[int]:
        """The active slots whose coming observation's images nobody will look at: the policy
        will not read them (`rows_reading_images`), no video records them, and no `on_step`
        hook (a recording of demonstrations) receives them. Those slots skip the render."""
        if self.hooks.on_step is not None:
            return []
        seen = set(self.policy.rows_reading_images(len(self.observations))) | set(recorded)
        return [i for i in active if i not in seen]

    def _active_ids(self) -> list[int]:
        return [i for i, slot in enumerate(self.slots) if slot is not None]

    def _claim_free_slots(self) -> list[int]:
        """The free slots that start pending episodes this round (in slot order)."""
        if not self.pending:
            return []
        free = [i for i, slot in enumerate(self.slots) if slot is None]
        if not self.settings.continuous_batching and len(free) < len(self.slots):
            return []  # without refilling, a new wave starts only when the whole batch is idle
        return free[: len(self.pending)]

    def _start_episodes(
        self, starting: Sequence[int], episodes: Sequence[int], seeds: Sequence[int], resets: Sequence[Any]
    ) -> None:
        """Bind the reset slots to their episodes, fresh policy rows and (maybe) videos."""
        for env_id, episode, seed, outcome in zip(starting, episodes, seeds, resets, strict=True):
            self.slots[env_id] = _RunningEpisode(
                index=episode, seed=seed, retries=self.retries.get(episode, 0)
            )
            if isinstance(outcome, SlotFailure):
                self._handle_failure(env_id, outcome.describe("reset"))
            else:
                observation, info = outcome
                self.observations[env_id] = observation
                self.blind[env_id] = False
                self.slots[env_id].init_state_index = info.get("init_state_index")
        self.policy.reset(env_ids=starting, seeds=seeds)
        self._open_videos([i for i in starting if self.slots[i] is not None])

    def _open_videos(self, env_ids: Sequence[int]) -> None:
        """Start the videos of episodes that are recorded, with the first frame after reset."""
        if self.videos_dir is None:
            return
        recorded = [i for i in env_ids if self.slots[i].index < self.settings.max_episodes_rendered]
        if not recorded:
            return
        frames = self.env.render_at(recorded, tolerate_failures=True)
        for env_id, frame in zip(recorded, frames, strict=True):
            if isinstance(frame, SlotFailure):
                self._handle_failure(env_id, frame.describe("render"))
                continue
            path = self.videos_dir / f"eval_episode_{self.slots[env_id].index}.mp4"
            self.slots[env_id].video = EpisodeVideo(path, self.task.fps)
            self.slots[env_id].video.add(frame)

    def _select_actions(self, active: Sequence[int]) -> Planning:
        """One policy call for every slot; rows of idle slots are computed and ignored.

        The batch is built only when the policy reads it (`actions_without_observation`):
        most steps of a chunking policy pop queued actions, and converting the frames for
        them would be wasted work. The model's call itself is the caller's (`planning`).
        """
        actions = self.policy.actions_without_observation(len(self.observations))
        if actions is None:
            actions = yield self._policy_batch(active)
        actions = self._on_host(actions)
        self._check_shape(actions)
        return actions

    def compute_actions(
        self, batch: dict[str, Any], select_action: Callable[[dict[str, Any]], Any] | None = None
    ) -> Any:
        """The policy's actions for a batch of `_policy_batch`, after the preprocessor and under
        autocast when asked; `select_action`: another call than this loop's policy's (one over
        the rows of several groups, `schedules.compute_together`)."""
        if self.settings.preprocessor is not None:
            batch = self.settings.preprocessor(batch)
        with self._autocast():
            return (select_action or self.policy.select_action)(batch)

    def _autocast(self) -> Any:
        return torch.autocast(self.device.type) if self.settings.use_amp else nullcontext()

    def _on_host(self, actions: torch.Tensor) -> np.ndarray:
        """The policy's actions through the postprocessor (under autocast when asked), as a
        float32 array: the one device-to-host copy per step, or per chunk."""
        if self.settings.postprocessor is not None:
            with self._autocast():
                actions = self.settings.postprocessor(actions)
        if actions.device.type != "cpu" or actions.dtype != torch.float32:
            actions = actions.to("cpu", torch.float32)
        return actions.numpy()

    def _policy_batch(self, active: Sequence[int]) -> dict[str, Any]:
        """Every slot's observation as the policy's batch (idle slots repeat an active one's),
        before the preprocessor (`compute_actions`)."""
        if len(active) == len(self.observations):
            stacked = stack_observations(self.observations)
        else:
            filler = self.observations[active[0]]
            stacked = stack_observations([obs if obs is not None else filler for obs in self.observations])
        batch: dict[str, Any] = observation_to_batch(stacked, self.device, self.settings.rename_map)
        self._poison_blind_images(batch)
        batch[TASK] = self.descriptions
        batch[ENV_TASK] = self.env_tasks
        return batch

    def _poison_blind_images(self, batch: dict[str, Any]) -> None:
        """NaN for the images of rows whose render was skipped: a policy that reads one after
        its `rows_reading_images` left it out returns NaN actions, which stop the run
        (`_end_non_finite_rows`), instead of acting on a black frame and being scored on it."""
        rows = [i for i, blind in enumerate(self.blind) if blind]
        if not rows:
            return
        for value in batch.values():
            if isinstance(value, torch.Tensor) and value.ndim >= 4 and value.is_floating_point():
                value[rows] = math.nan

    def _select_actions_or_fail(self, active: Sequence[int]) -> Planning:
        """The actions, or None when the policy raised for some rows: a harness failure (a lost
        policy server) re-runs their episodes like a crashed env; a policy error ends them."""
        try:
            return (yield from self._select_actions(active))
        except HarnessError as exc:
            for env_id in _failed_rows(exc.rows, active):
                self._handle_failure(env_id, str(exc), restart_env=False)
        except PolicyError as exc:
            reason = one_line(str(exc)) if str(exc) else type(exc).__name__
            for env_id in _failed_rows(exc.rows, active):
                logger.warning("episode %d: %s", self.slots[env_id].index, reason)
                self._finish(env_id, self.slots[env_id].abandon(reason))
        return None

    def _report_steps(self, active: Sequence[int], actions: np.ndarray) -> None:
        if self.hooks.on_step is None:
            return
        for env_id in active:
            episode = self.slots[env_id]
            self.hooks.on_step(
                env_id, episode.index, self.observations[env_id], actions[env_id], episode.n_steps
            )

    def _check_shape(self, actions: np.ndarray) -> None:
        expected = self.action_shape
        if actions.shape != expected:
            raise ValueError(
                f"policy {self.policy.name!r} returned actions of shape {actions.shape} at step "
                f"{self.step_index}; expected {expected}"
            )

    def _end_non_finite_rows(self, active: Sequence[int], actions: np.ndarray) -> list[int]:
        """The active rows whose actions are finite. NaN or inf actions are the policy's output:
        that row's episode ends there, scored as the policy's (`policy_error`, unsuccessful from
        that step on), and the other rows step on; unless the row's images were not rendered,
        which the policy said it would not read: that is a bug of the policy (ValueError)."""
        if np.isfinite(actions).all():  # the common case, without indexing the active rows
            return list(active)
        unrendered = [i for i in active if self.blind[i] and not np.isfinite(actions[i]).all()]
        if unrendered:  # the policy broke its own contract: a bug, not an outcome
            raise ValueError(
                f"policy {self.policy.name!r} returned NaN or inf actions at step {self.step_index}; "
                f"rows {unrendered} had unrendered (NaN) images, which its rows_reading_images() "
                "said it would not read"
            )
        kept = []
        for env_id in active:
            if np.isfinite(actions[env_id]).all():
                kept.append(env_id)
            else:
                self._end_for_non_finite_action(env_id)
        return kept

    def _non_finite_reason(self, step: int) -> str:
        return f"policy {self.policy.name!r} returned NaN or inf actions at step {step} of the episode"

    def _end_for_non_finite_action(self, env_id: int, reason: str | None = None) -> None:
        """End a slot's episode, scored, at a NaN or inf action of the policy (never stepped)."""
        episode = self.slots[env_id]
        reason = reason or self._non_finite_reason(episode.n_steps)
        logger.warning("episode %d: %s", episode.index, reason)
        episode.success_at_end = False
        self._finish(env_id, episode.finish(policy_error=reason))

    def _apply_step(self, env_id: int, step: StepResult) -> None:
        episode = self.slots[env_id]
        episode.record(step)
        self.observations[env_id] = step.observation
        self.blind[env_id] = not step.images
        # The task's step limit also ends episodes of envs that do not truncate by themselves.
        at_limit = self.task.max_steps is not None and episode.n_steps >= self.task.max_steps
        if step.terminated or step.truncated or at_limit:
            self._finish(env_id, episode.finish())

    def _handle_failure(self, env_id: int, reason: str, restart_env: bool = True) -> None:
        """Replace the env (unless only the policy side failed); re-run its episode from the
        start (same seed) or give it up."""
        episode = self.slots[env_id]
        # A worker's failure carries its traceback: whole at DEBUG, its first line otherwise.
        shown = reason if logger.isEnabledFor(logging.DEBUG) else one_line(reason)
        logger.warning("episode %d: %s", episode.index, shown)
        if restart_env:
            self.env.restart([env_id])
        attempts = self.retries.get(episode.index, 0) + 1
        if attempts <= self.settings.max_episode_retries:
            episode.discard_video()
            self.retries[episode.index] = attempts
            self.pending.appendleft(episode.index)
            self.slots[env_id] = None
        else:
            self._finish(env_id, episode.abandon(reason))

    def _finish(self, env_id: int, result: EpisodeResult) -> None:
        self.results.append(result)
        self.slots[env_id] = None
        if self.hooks.on_episode_end is not None:
            self.hooks.on_episode_end(result)


def _env_steps_taken(outcomes: Sequence[Any]) -> int:
    """The env steps a round's outcomes took: one per step, a chunk's own count, none for a failure."""
    return sum(
        len(outcome.steps) if isinstance(outcome, ChunkResult) else isinstance(outcome, StepResult)
        for outcome in outcomes
    )


def _failed_rows(rows: Sequence[int] | None, active: Sequence[int]) -> list[int]:
    """The running slots among the rows a policy failed on (None: all of them)."""
    return list(active) if rows is None else [row for row in rows if row in active]
