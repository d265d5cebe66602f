"""Every slot of a ManiSkill task in one batched scene: one process, `num_envs` = the batch.

On a GPU, ManiSkill simulates (`physx_cuda`) and renders many envs in one scene, so a batch of
64-1,024 envs costs one process instead of a worker each. This is that scene as a `SlotEnv` (the
slot API of `lerobot.envs.slots`): slot i is the scene's env i.

What the batch changes, and how each slot still runs its own episode:
- ManiSkill steps every env of the scene at once. A round's stepping slots get their actions;
  the others (finished, or about to reset) get zeros and their state is thrown away.
- Resets come after the round's step, one slot at a time, each with its episode's seed at the
  slot's index (ManiSkill draws a partial reset's randomisation from the first seed given, for
  every env reset together): slot i's episode starts as a one-env scene reset with that seed
  starts, whatever the other slots do.
- A failed scene fails every slot (they share it); `restart` builds a new scene.
With `physx_cpu` ManiSkill builds one env per scene, so on a CPU this holds one slot, which is
how it is tested without a GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from lerobot.configs.env import TaskSpec
from lerobot.envs.commands import StepResult
from lerobot.envs.maniskill.env import ManiskillEnv
from lerobot.envs.maniskill.observation import as_numpy
from lerobot.envs.slots import ResetOutcomes, SlotFailure, SlotRound, StepOutcomes

logger = logging.getLogger(__name__)


class BatchedScene:
    """`num_envs` slots of one task in one ManiSkill scene, built on first use."""

    runs_action_chunks = False

    def __init__(self, env_kwargs: dict[str, Any], num_envs: int, task: TaskSpec):
        self.formats = ManiskillEnv(**env_kwargs)  # spaces, gym.make arguments, row formats
        self.num_envs = num_envs
        self.task = task
        self.single_action_space = self.formats.action_space
        self.single_observation_space = self.formats.observation_space
        self.metadata = {"render_fps": task.fps, "task": task.name, "task_description": task.description}
        self._sim: Any = None
        self._steps = [0] * num_envs
        self._active: set[int] = set()

    @property
    def started(self) -> bool:
        return self._sim is not None

    def _scene(self) -> Any:
        if self._sim is None:
            import gymnasium as gym
            import mani_skill.envs  # noqa: F401  (registers the tasks)

            kwargs = {**self.formats.make_kwargs(), "num_envs": self.num_envs}
            self._sim = gym.make(self.formats.task, **kwargs).unwrapped
            logger.info("%s: %d envs in one %s scene", self.task.name, self.num_envs, kwargs["sim_backend"])
        return self._sim

    # --- the slot API -----------------------------------------------------------------------
    def step_and_reset_at(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        self._check_every_running_slot_steps(round_)
        try:
            steps = self._step(round_) if round_.step_ids else []
            resets = [
                self._reset(slot, seed) for slot, seed in zip(round_.reset_ids, round_.seeds, strict=True)
            ]
        except Exception as exc:  # the scene is shared: every slot of the round fails with it
            message = f"{type(exc).__name__}: {exc}"
            logger.debug("batched ManiSkill scene failed", exc_info=True)
            failure = [SlotFailure(slot, "error", message) for slot in (*round_.step_ids, *round_.reset_ids)]
            return failure[: len(round_.step_ids)], failure[len(round_.step_ids) :]
        return steps, resets

    def render_at(self, env_ids: Sequence[int], tolerate_failures: bool = False) -> list[Any]:
        try:
            frames = as_numpy(self._scene().render())
        except Exception as exc:
            if not tolerate_failures:
                raise
            return [SlotFailure(slot, "error", f"{type(exc).__name__}: {exc}") for slot in env_ids]
        return [np.ascontiguousarray(frames[slot, ..., :3], dtype=np.uint8) for slot in env_ids]

    def restart(self, env_ids: Sequence[int]) -> None:
        """A new scene: the slots share one, so none of the old one's episodes go on."""
        self.close()

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None
        self._active.clear()

    def call(self, name: str, *args, **kwargs) -> tuple[Any, ...]:
        """An attribute of the slots' env, once per slot (LeRobot's `env.call`)."""
        attr = getattr(self.formats, name)
        return tuple(attr(*args, **kwargs) if callable(attr) else attr for _ in range(self.num_envs))

    # --- a round ------------------------------------------------------------------------------
    def _check_every_running_slot_steps(self, round_: SlotRound) -> None:
        """The scene steps every env at once: a slot mid-episode left out of a round would be
        stepped with a zero action all the same."""
        left_out = self._active - set(round_.step_ids) - set(round_.reset_ids)
        if left_out:
            raise RuntimeError(
                f"slots {sorted(left_out)} are mid-episode but not in this round: a batched ManiSkill "
                "scene steps all its envs together"
            )

    def _step(self, round_: SlotRound) -> list[StepResult]:
        import torch

        sim = self._scene()
        actions = np.zeros((self.num_envs, self.formats.sizes.action), np.float32)
        actions[list(round_.step_ids)] = np.stack(round_.actions)
        blind = self.formats.wants_cameras and set(round_.step_ids) <= set(round_.blind_ids)
        if blind:  # nobody reads this step's images: ask ManiSkill for the state only
            sim._obs_mode = "state_dict"
        try:
            raw_obs, reward, _, _, raw_info = sim.step(
                self._sim_action(torch.from_numpy(actions).to(sim.device))
            )
        finally:
            if blind:
                sim._obs_mode = "rgb+state_dict"
        rewards = as_numpy(reward).reshape(-1)
        frames = as_numpy(sim.render()) if round_.render_ids else None
        results = []
        for slot in round_.step_ids:
            self._steps[slot] += 1
            info, terminated, truncated = self.formats.step_outcome(raw_info, self._steps[slot], slot)
            frame = (
                frames[slot, ..., :3].astype(np.uint8)
                if frames is not None and slot in round_.render_ids
                else None
            )
            observation = self.formats.format_observation(raw_obs, blind, slot)
            results.append(
                StepResult(observation, float(rewards[slot]), terminated, truncated, info, frame, not blind)
            )
            if terminated or truncated:
                self._active.discard(slot)
        return results

    def _sim_action(self, actions: Any) -> Any:
        """A two-arm task takes a dict of per-agent action batches."""
        if not self.formats.sizes.agents:
            return actions
        parts, start = {}, 0
        for uid, size in self.formats.sizes.agents:
            parts[uid], start = actions[:, start : start + size], start + size
        return parts

    def _reset(self, slot: int, seed: int | None) -> tuple[dict, dict]:
        import torch

        sim = self._scene()
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        # ManiSkill seeds a partial reset's draws with the first seed of the list and each env's
        # generator with its own entry: the episode's seed in every place makes env `slot` start
        # as a one-env scene reset with `seed` does.
        raw_obs, raw_info = sim.reset(
            seed=[seed] * self.num_envs, options={"env_idx": torch.tensor([slot], device=sim.device)}
        )
        self._steps[slot] = 0
        self._active.add(slot)
        return self.formats.format_observation(raw_obs, row=slot), self.formats.reset_info(raw_info, slot)
