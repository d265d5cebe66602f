"""The rollout loop of one group of slots: one batched policy call per round, each episode
bound to its seed.

Env slot i of the group is batch row i of its policy. A slot runs one episode at a time; when
it ends, the slot takes the next pending episode (continuous batching) and the policy forgets
that row only. Because episode e always starts from seed `seed_of(e)` with a freshly reset
policy row, per-episode results do not depend on the batch size, on sync or async workers, on
whether slots are refilled, or on an episode having been re-run after a crash. How the rounds
of several groups are ordered is `schedules`'.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import TaskSpec
from lerobot.envs.commands import ChunkResult, StepResult
from lerobot.envs.gym_vector import has_slot_control
from lerobot.envs.slots import SlotEnv, SlotFailure, SplitSlotEnv
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.rollout.actions import PolicyCalls, failed_rows, first_non_finite, non_finite_rows
from lerobot.evaluation.run.rollout.episode import RunningEpisode
from lerobot.evaluation.run.rollout.rounds import Planning, Round, Work, answer_planning, env_steps_taken
from lerobot.evaluation.run.rollout.settings import RolloutHooks, RolloutSettings, RolloutStoppedError
from lerobot.policies.pretrained import RowPolicy
from lerobot.utils.errors import HarnessError, PolicyError
from lerobot.utils.logging_utils import one_line

logger = logging.getLogger(__name__)


class RolloutLoop:
    """The episodes running in one group's slots, and the rounds that step them."""

    def __init__(
        self,
        env: SlotEnv,
        policy: RowPolicy,
        work: Work,
        settings: RolloutSettings,
        task: TaskSpec,
        hooks: RolloutHooks,
    ):
        self.env, self.policy, self.settings, self.task, self.hooks = env, policy, settings, task, hooks
        self.work = work
        self.videos_dir = settings.videos_dir_for(task)
        self.calls = PolicyCalls(policy, settings, (env.num_envs, *env.single_action_space.shape))
        self.slots: list[RunningEpisode | None] = [None] * env.num_envs
        self.observations: list[Any] = [None] * env.num_envs
        self.blind: list[bool] = [False] * env.num_envs
        """Slot i's observation has black images (a blind step): the policy must not read them."""
        self.cut_short: dict[int, str] = {}
        """Slot -> why its episode ends after its current chunk: the policy's next queued action
        is NaN or inf (the chunk was cut before it)."""
        self.sends_chunks = (
            settings.chunks_in_workers
            and env.runs_action_chunks
            and hooks.on_step is None  # a recording wants every observation
            and hasattr(policy, "take_queued_actions")
        )
        self.step_index = 0
        self.descriptions = [task.description] * env.num_envs
        self.env_tasks = [task.name] * env.num_envs
        self.refills_slots = settings.continuous_batching and has_slot_control(env)
        """A slot starts its next episode as soon as its episode ends; else episodes start in
        waves (`--eval.continuous_batching=false`, or a vector env stepped whole)."""
        self._split = env if isinstance(env, SplitSlotEnv) else None
        """The env as a split one, checked once: a Protocol isinstance costs tens of
        microseconds, and a schedule sends and gathers every round."""

    # -- what schedules call -----------------------------------------------------------------

    def stop_if_asked(self) -> None:
        """RolloutStoppedError when the caller's `should_stop` says so (asked before each round)."""
        if self.hooks.should_stop is not None and self.hooks.should_stop():
            raise RolloutStoppedError(
                f"{self.task.label}: stopped with {len(self.work.pending)} episodes pending"
            )

    def busy(self) -> bool:
        """Whether an episode is running in one of this loop's slots."""
        return any(slot is not None for slot in self.slots)

    def run(self) -> list[EpisodeResult]:
        """Every pending episode in lockstep: plan, step and reset, apply; round after round."""
        if not self.work.pending:
            return []
        # One inference-mode scope for the whole loop rather than one per step: entering it
        # costs microseconds, which count against a state-only step of under a millisecond.
        with torch.inference_mode():
            while self.work.pending or self.busy():
                self.stop_if_asked()
                planned = self.plan_round()
                if planned is not None:
                    # A slot whose episode just ended resets in the same round as the others
                    # step, so in worker processes its reset does not hold them up.
                    self.apply_round(planned, *self.env.step_and_reset_at(planned.slot_round))
        return self.work.sorted_results()

    def send_round(self, planned: Round) -> Round:
        """Send a planned round to the slots, which step while the caller goes on; its replies
        are gathered by `collect_round`. For groups of a split env (`SplitSlotEnv`)."""
        self.split_env().send_step_and_reset_at(planned.slot_round)
        return planned

    def collect_round(self, sent: Round) -> None:
        self.apply_round(sent, *self.split_env().gather_step_and_reset(sent.slot_round))

    def split_env(self) -> SplitSlotEnv:
        if self._split is None:
            raise TypeError(f"{type(self.env).__name__} cannot send a round apart from its gather")
        return self._split

    def plan_round(self) -> Round | None:
        """This round's actions for the running episodes and the resets of free slots; None
        when there is nothing to send (no episode to run, or the policy failed every row)."""
        return answer_planning(self.planning(), self.calls.compute)

    def planning(self) -> Planning:
        """`plan_round` as a generator that yields the policy's batch when the round needs the
        model and is sent its output (or thrown its HarnessError or PolicyError): so that the
        rows of several groups can share one model call (`schedules.run_as_ready`)."""
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
        episodes = [self.work.pending.popleft() for _ in starting]
        seeds = [self.settings.seed_of(e) for e in episodes]
        return Round(active, actions, chunks is not None, starting, episodes, seeds, recorded, blind)

    def apply_round(self, planned: Round, steps: Sequence[Any], resets: Sequence[Any]) -> None:
        """Record the round's steps, end or re-run episodes, and start the reset slots' ones."""
        for env_id, outcome in zip(planned.active, steps, strict=True):
            if isinstance(outcome, SlotFailure):
                self.cut_short.pop(env_id, None)
                self._handle_failure(env_id, outcome.describe("step"))
            elif isinstance(outcome, ChunkResult):
                self._apply_chunk(env_id, outcome)
            else:
                self._apply_step(env_id, outcome)
        self.step_index += planned.steps_advanced()
        if self.hooks.on_steps is not None:
            self.hooks.on_steps(env_steps_taken(steps))
        if planned.starting:
            self._start_episodes(planned.starting, planned.episodes, planned.seeds, resets)

    # -- planning --------------------------------------------------------------------------

    def _active_ids(self) -> list[int]:
        return [i for i, slot in enumerate(self.slots) if slot is not None]

    def _claim_free_slots(self) -> list[int]:
        """The free slots that start pending episodes this round (in slot order)."""
        if not self.work.pending:
            return []
        free = [i for i, slot in enumerate(self.slots) if slot is None]
        if not self.refills_slots and len(free) < len(self.slots):
            return []  # without refilling, a new wave starts only when the whole batch is idle
        return free[: len(self.work.pending)]

    def _take_queued_chunks(self, active: Sequence[int]) -> tuple[list[Any], list[int]] | None:
        """(each slot's rest of chunk, the slots that step it), or None when some row reads its
        next observation (the per-step path then runs). A chunk stops at the task's step
        limit; a chunk holding a NaN or inf action stops before it, and that episode ends
        there as the policy's (`cut_short`), as it would step by step."""
        chunks = self.calls.queued_chunks(len(self.observations), self.step_index)
        if chunks is None:
            return None
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
        first_bad = first_non_finite(chunk)
        if first_bad is None:
            return chunk
        if first_bad == 0:
            self._end_for_non_finite_action(env_id)
            return None
        self.cut_short[env_id] = self.calls.non_finite_reason(episode.n_steps + first_bad)
        return chunk[:first_bad]

    def _select_actions_or_fail(self, active: Sequence[int]) -> Planning:
        """The actions, or None when the policy raised for some rows: a harness failure (a lost
        policy server) re-runs their episodes like a crashed env; a policy error ends them."""
        try:
            return (
                yield from self.calls.select(self.observations, lambda: self._batch(active), self.step_index)
            )
        except HarnessError as exc:
            for env_id in failed_rows(exc.rows, active):
                self._handle_failure(env_id, str(exc), restart_env=False)
        except PolicyError as exc:
            reason = one_line(str(exc)) if str(exc) else type(exc).__name__
            for env_id in failed_rows(exc.rows, active):
                logger.warning("episode %d: %s", self.slots[env_id].index, reason)
                self._finish(env_id, self.slots[env_id].abandon(reason))
        return None

    def _batch(self, active: Sequence[int]) -> dict[str, Any]:
        return self.calls.batch(self.observations, active, self.blind, self.descriptions, self.env_tasks)

    def _end_non_finite_rows(self, active: Sequence[int], actions: np.ndarray) -> list[int]:
        """The active rows whose actions are finite. NaN or inf actions are the policy's output:
        that row's episode ends there, scored as the policy's (`policy_error`, unsuccessful from
        that step on), and the other rows step on; unless the row's images were not rendered,
        which the policy said it would not read: that is a bug of the policy (ValueError)."""
        bad = non_finite_rows(actions, active)
        if not bad:
            return list(active)
        unrendered = [i for i in bad if self.blind[i]]
        if unrendered:  # the policy broke its own contract: a bug, not an outcome
            raise ValueError(
                f"policy {self.policy.name!r} returned NaN or inf actions at step {self.step_index}; "
                f"rows {unrendered} had unrendered (NaN) images, which its rows_reading_images() "
                "said it would not read"
            )
        for env_id in bad:
            self._end_for_non_finite_action(env_id)
        return [i for i in active if i not in bad]

    def _report_steps(self, active: Sequence[int], actions: np.ndarray) -> None:
        if self.hooks.on_step is None:
            return
        for env_id in active:
            episode = self.slots[env_id]
            self.hooks.on_step(
                env_id, episode.index, self.observations[env_id], actions[env_id], episode.n_steps
            )

    def _slots_stepping_blind(self, active: Sequence[int], recorded: Sequence[int]) -> list[int]:
        """The active slots whose coming observation's images nobody will look at: the policy
        will not read them (`rows_reading_images`), no video records them, and no `on_step`
        hook (a recording of demonstrations) receives them. Those slots skip the render."""
        if self.hooks.on_step is not None:
            return []
        seen = set(self.policy.rows_reading_images(len(self.observations))) | set(recorded)
        return [i for i in active if i not in seen]

    # -- applying replies ------------------------------------------------------------------

    def _apply_chunk(self, env_id: int, chunk: ChunkResult) -> None:
        episode = self.slots[env_id]
        for step in chunk.steps[:-1]:
            episode.record(step)
        self._apply_step(env_id, chunk.last)
        reason = self.cut_short.pop(env_id, None)
        if reason is not None and self.slots[env_id] is episode:
            self._end_for_non_finite_action(env_id, reason)

    def _apply_step(self, env_id: int, step: StepResult) -> None:
        episode = self.slots[env_id]
        episode.record(step)
        self.observations[env_id] = step.observation
        self.blind[env_id] = not step.images
        # The task's step limit also ends episodes of envs that do not truncate by themselves.
        at_limit = self.task.max_steps is not None and episode.n_steps >= self.task.max_steps
        if step.terminated or step.truncated or at_limit:
            self._finish(env_id, episode.finish())

    def _start_episodes(
        self, starting: Sequence[int], episodes: Sequence[int], seeds: Sequence[int], resets: Sequence[Any]
    ) -> None:
        """Bind the reset slots to their episodes, fresh policy rows and (maybe) videos."""
        for env_id, episode, seed, outcome in zip(starting, episodes, seeds, resets, strict=True):
            self.slots[env_id] = RunningEpisode(
                index=episode, seed=seed, retries=self.work.retries.get(episode, 0)
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
            else:
                self.slots[env_id].start_video(self.videos_dir, self.task.fps, frame)

    # -- ending episodes -------------------------------------------------------------------

    def _end_for_non_finite_action(self, env_id: int, reason: str | None = None) -> None:
        """End a slot's episode, scored, at a NaN or inf action of the policy (never stepped)."""
        episode = self.slots[env_id]
        reason = reason or self.calls.non_finite_reason(episode.n_steps)
        logger.warning("episode %d: %s", episode.index, reason)
        episode.success_at_end = False
        self._finish(env_id, episode.finish(policy_error=reason))

    def _handle_failure(self, env_id: int, reason: str, restart_env: bool = True) -> None:
        """Replace the env (unless only the policy side failed); re-run its episode from the
        start (same seed) or give it up."""
        episode = self.slots[env_id]
        # A worker's failure carries its traceback: whole at DEBUG, its first line otherwise.
        shown = reason if logger.isEnabledFor(logging.DEBUG) else one_line(reason)
        logger.warning("episode %d: %s", episode.index, shown)
        if restart_env:
            self.env.restart([env_id])
        attempts = self.work.retries.get(episode.index, 0) + 1
        if attempts <= self.settings.max_episode_retries:
            episode.discard_video()
            self.work.retries[episode.index] = attempts
            self.work.pending.appendleft(episode.index)
            self.slots[env_id] = None
        else:
            self._finish(env_id, episode.abandon(reason))

    def _finish(self, env_id: int, result: EpisodeResult) -> None:
        self.work.results.append(result)
        self.slots[env_id] = None
        if self.hooks.on_episode_end is not None:
            self.hooks.on_episode_end(result)
