"""What one sub-env does for one command, wherever it lives (this process or a worker).

The rollout loop speaks to its env slots in a few commands: reset, step (one action), steps
(an action chunk), render and call. `run_command` executes one on a gymnasium env; the
in-process slots and the worker processes share it, so a sub-env answers alike in both.
"""

from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np


@dataclass(frozen=True)
class StepResult:
    """What one sub-env returned for one step (and its frame when one was asked for)."""

    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict
    frame: np.ndarray | None = None
    images: bool = True
    """False: the observation's camera images were not rendered and are black, because the
    caller said nobody would look at them (`step_at`'s `blind_ids`)."""


@dataclass(frozen=True)
class ChunkResult:
    """What one sub-env returned for a chunk of actions stepped in its worker (`step_and_reset_at`
    given a 2-d action): one StepResult per step taken, in order. The chunk stops early at
    termination or truncation. Only the last step carries its observation (None before it): the
    policy reads none of the others, and they are never sent back."""

    steps: tuple[StepResult, ...]

    @property
    def last(self) -> StepResult:
        return self.steps[-1]


def run_command(env: gym.Env, command: str, payload: Any) -> Any:
    """Execute one command on a sub-env; shared by the in-process and worker backends.

    An env may offer `step_without_images(action)`: `step` with the observation's camera
    images left black instead of rendered. A step asked to be blind uses it when it exists.
    """
    if command == "reset":
        seed, options = payload
        return env.reset(seed=seed, options=options)
    if command == "step":
        return _step_env(env, *payload)
    if command == "steps":
        return _step_chunk(env, *payload)
    if command == "render":
        return env.render()
    if command == "call":
        name, args, kwargs = payload
        attr = getattr(env, name)
        return attr(*args, **kwargs) if callable(attr) else attr
    raise ValueError(f"unknown env command {command!r}")


def _step_env(env: gym.Env, action: np.ndarray, want_frame: bool, want_images: bool) -> StepResult:
    blind = not (want_images or want_frame) and hasattr(env, "step_without_images")
    step = env.step_without_images if blind else env.step
    obs, reward, terminated, truncated, info = step(action)
    frame = env.render() if want_frame else None
    return StepResult(obs, float(reward), bool(terminated), bool(truncated), info, frame, not blind)


def _step_chunk(env: gym.Env, actions: np.ndarray, want_frames: bool) -> ChunkResult:
    """Step `actions` in order until the episode ends. Only the last step renders the
    observation's images (the policy reads the observation after its chunk, none inside it);
    every step renders a frame when a video wants them. Observations before the last are
    dropped here rather than sent back."""
    steps = []
    for k, action in enumerate(actions):
        last = k == len(actions) - 1
        step = _step_env(env, action, want_frames, want_images=last)
        if step.terminated or step.truncated or last:
            steps.append(step)
            break
        steps.append(dataclasses.replace(step, observation=None))
    return ChunkResult(tuple(steps))


def error_reply(exc: Exception) -> tuple[str, str]:
    """The reply of a command that raised, alike in this process and in a worker: the error's
    first line, then its traceback (shown whole at DEBUG by the rollout loop)."""
    return ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
