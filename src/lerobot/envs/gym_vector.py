"""Vector envs built elsewhere (gymnasium's SyncVectorEnv or AsyncVectorEnv, LeRobot's lazy
async envs), made steppable by the rollout loop.

The rollout loop steps and resets chosen slots (`LazyVectorEnv.step_and_reset_at`). Where a
vector env gives access to its sub-envs (a SyncVectorEnv), each sub-env becomes a slot of its
own and every episode keeps its seed, exactly as in `lerobot-eval`. Where it does not (an
AsyncVectorEnv), `WholeBatchEnv` steps the whole batch on every call, as LeRobot's rollout does:
episodes then run in waves of `num_envs` (the loop must not refill slots), a finished sub-env is
stepped with a filler action until its wave ends, and a crash fails the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from lerobot.configs.env import TaskSpec
from lerobot.configs.gym_env import vector_env_info
from lerobot.envs.commands import StepResult
from lerobot.envs.slots import DEFAULT_FPS, SlotFailure, SlotRound
from lerobot.envs.vector import LazyVectorEnv


def slot_env(env: Any, task: TaskSpec | None = None) -> LazyVectorEnv | WholeBatchEnv:
    """`env` as the rollout loop steps it: ours as it is, a SyncVectorEnv slot by slot, any other
    vector env whole-batch."""
    if isinstance(env, LazyVectorEnv):
        return env
    task = task or describe_task(env)
    if isinstance(env, gym.vector.SyncVectorEnv):
        return LazyVectorEnv.adopt(env, task)
    return WholeBatchEnv(env, task)


def has_slot_control(env: Any) -> bool:
    """Whether the loop may step and reset slots one by one (else: whole waves)."""
    return not isinstance(env, WholeBatchEnv)


def describe_task(env: Any, group: str = "", task_id: int = 0) -> TaskSpec:
    """The task a foreign vector env runs: name, instruction, video fps and step limit, read
    from its metadata and its first sub-env's attributes (`task`, `task_description`,
    `_max_episode_steps` or the registered spec's limit), as LeRobot reads them."""
    info = vector_env_info(env)
    return TaskSpec(
        group=group,
        task_id=task_id,
        name=info.name,
        description=info.task_description,
        fps=info.render_fps or DEFAULT_FPS,
        max_steps=info.max_episode_steps,
    )


class WholeBatchEnv:
    """A vector env without per-slot control, stepped as a whole in waves of episodes."""

    def __init__(self, env: Any, task: TaskSpec):
        self.env, self.task = env, task
        self.num_envs = env.num_envs
        self.single_action_space = env.single_action_space
        self.metadata = dict(getattr(env, "metadata", None) or {})
        self.n_steps = [0] * self.num_envs
        self.runs_action_chunks = False
        """Every step is one call of the whole vector env: no chunk travels as one message."""

    def step_and_reset_at(self, round_: SlotRound) -> tuple[list[StepResult], list[tuple[Any, dict]]]:
        """`blind_ids` is ignored: a vector env built elsewhere renders what it renders."""
        if round_.reset_ids and round_.step_ids:
            raise RuntimeError(
                "a vector env without per-slot control cannot reset some envs while others step; "
                "run it with continuous batching off"
            )
        if round_.reset_ids:
            return [], self._reset_wave(round_.reset_ids, round_.seeds)
        return self._step(round_.step_ids, round_.actions, round_.render_ids), []

    def _reset_wave(self, reset_ids: Sequence[int], seeds: Sequence[int | None]) -> list[tuple[Any, dict]]:
        """Reset every sub-env; those beyond this wave's episodes get the following seeds."""
        by_slot = dict(zip(reset_ids, seeds, strict=True))
        last = max((s for s in seeds if s is not None), default=None)
        padding = iter(range(last + 1, last + 1 + self.num_envs)) if last is not None else iter(())
        all_seeds = [by_slot[i] if i in by_slot else next(padding, None) for i in range(self.num_envs)]
        observation, info = self.env.reset(seed=all_seeds if last is not None else None)
        self.n_steps = [0] * self.num_envs
        return [(observation_at(observation, i), info_at(info, i)) for i in reset_ids]

    def _step(
        self, step_ids: Sequence[int], actions: Sequence[np.ndarray], render_ids: Sequence[int]
    ) -> list[StepResult]:
        given = dict(zip(step_ids, actions, strict=True))
        filler = np.asarray(actions[0])
        batch = np.stack([np.asarray(given.get(i, filler)) for i in range(self.num_envs)])
        observation, reward, terminated, truncated, info = self.env.step(batch)
        frames = self.render_at(render_ids) if render_ids else []
        frame_of = dict(zip(render_ids, frames, strict=True))
        results = []
        for i in step_ids:
            self.n_steps[i] += 1
            over_limit = self.task.max_steps is not None and self.n_steps[i] >= self.task.max_steps
            results.append(
                StepResult(
                    observation_at(observation, i),
                    float(reward[i]),
                    bool(terminated[i]),
                    bool(truncated[i]) or over_limit,
                    info_at(info, i),
                    frame_of.get(i),
                )
            )
        return results

    def render_at(
        self, env_ids: Sequence[int], tolerate_failures: bool = False
    ) -> list[np.ndarray | SlotFailure]:
        frames = self.env.call("render")
        return [np.asarray(frames[i]) for i in env_ids]

    def restart(self, env_ids: Sequence[int]) -> None:
        """Nothing to restart: a failure of a whole-batch env fails the call that met it."""

    def close(self) -> None:
        self.env.close()


def observation_at(observation: Any, index: int) -> Any:
    """Sub-env `index`'s part of a batched observation (arrays or nested dicts of arrays)."""
    if isinstance(observation, Mapping):
        return {key: observation_at(value, index) for key, value in observation.items()}
    return observation[index]


def info_at(info: Mapping[str, Any], index: int) -> dict[str, Any]:
    """Sub-env `index`'s entries of a gymnasium vector info dict (`key` with its `_key` mask),
    with the final info of an env that just ended (gymnasium's same-step autoreset) on top."""
    entry = {
        key: value[index]
        for key, value in info.items()
        if not key.startswith("_") and key != "final_info" and _present(info, key, index)
    }
    final = info.get("final_info")
    if isinstance(final, Mapping) and _present(info, "final_info", index):
        entry.update(info_at(final, index))
    return entry


def _present(info: Mapping[str, Any], key: str, index: int) -> bool:
    mask = info.get(f"_{key}")
    return bool(mask[index]) if mask is not None else True
