"""Conversions between what a pipeline is called with (a training or evaluation batch, a policy
action, an observation) and the transition its steps read, with LeRobot's names and rules: a
batch's `observation.*` keys form the observation, `action` the action, and padding flags,
instructions and indices the complementary data; the way back flattens them again.

Beyond LeRobot's complementary keys, the batch's `env_task` (the benchmark's task name per row,
which scripted experts read) travels as complementary data too, so that a batch keeps it
through the preprocessor.
"""

from __future__ import annotations

from typing import Any

import torch

from lerobot.processor.core import EnvTransition, PolicyAction, RobotAction, RobotObservation, TransitionKey
from lerobot.utils.constants import ACTION, ENV_TASK, OBS_PREFIX
from lerobot.utils.not_in_this_build import refused_names

REWARD = "next.reward"
DONE = "next.done"
TRUNCATED = "next.truncated"
INFO = "info"
TRANSITION_FIELDS = (ACTION, REWARD, DONE, TRUNCATED, INFO)
"""The keys `transition_to_batch` always writes besides the observation and complementary data:
in an evaluation batch they hold nothing the policy reads (no action yet, no reward)."""
COMPLEMENTARY_KEYS = (
    "task",
    "index",
    "task_index",
    "episode_index",
    "timestamp",
    "language_persistent",
    "language_events",
    "messages",
    "message_streams",
    "target_message_indices",
    ENV_TASK,
)
"""Batch keys that are neither observation nor action but go with the transition (padding flags,
any key holding `_is_pad`, too)."""


def create_transition(
    observation: RobotObservation | None = None,
    action: PolicyAction | RobotAction | None = None,
    reward: float = 0.0,
    done: bool = False,
    truncated: bool = False,
    info: dict[str, Any] | None = None,
    complementary_data: dict[str, Any] | None = None,
) -> EnvTransition:
    """A transition with every part present (empty dicts for info and complementary data)."""
    return {
        TransitionKey.OBSERVATION: observation,
        TransitionKey.ACTION: action,
        TransitionKey.REWARD: reward,
        TransitionKey.DONE: done,
        TransitionKey.TRUNCATED: truncated,
        TransitionKey.INFO: info if info is not None else {},
        TransitionKey.COMPLEMENTARY_DATA: complementary_data if complementary_data is not None else {},
    }


def batch_to_transition(batch: dict[str, Any]) -> EnvTransition:
    """A training or evaluation batch as a transition."""
    if not isinstance(batch, dict):
        raise ValueError(f"a batch to turn into a transition must be a dict, not {type(batch).__name__}")
    action = batch.get(ACTION)
    if action is not None and not isinstance(action, torch.Tensor):
        raise ValueError(f"the batch's action must be a tensor, not {type(action).__name__}")
    observation = {k: v for k, v in batch.items() if k.startswith(OBS_PREFIX)}
    complementary = _complementary_data(batch)
    return create_transition(
        observation=observation or None,
        action=action,
        reward=batch.get(REWARD, 0.0),
        done=batch.get(DONE, False),
        truncated=batch.get(TRUNCATED, False),
        info=batch.get(INFO, {}),
        complementary_data=complementary or None,
    )


def transition_to_batch(transition: EnvTransition) -> dict[str, Any]:
    """The flat batch of a transition (the inverse of `batch_to_transition`)."""
    _check_is_transition(transition)
    batch = {
        ACTION: transition.get(TransitionKey.ACTION),
        REWARD: transition.get(TransitionKey.REWARD, 0.0),
        DONE: transition.get(TransitionKey.DONE, False),
        TRUNCATED: transition.get(TransitionKey.TRUNCATED, False),
        INFO: transition.get(TransitionKey.INFO, {}),
    }
    batch.update(transition.get(TransitionKey.COMPLEMENTARY_DATA) or {})
    observation = transition.get(TransitionKey.OBSERVATION)
    if isinstance(observation, dict):
        batch.update(observation)
    return batch


def policy_action_to_transition(action: PolicyAction) -> EnvTransition:
    """A policy's action tensor as a transition holding only it (postprocessors start here)."""
    if not isinstance(action, torch.Tensor):
        raise ValueError(f"a policy action must be a tensor, not {type(action).__name__}")
    return create_transition(action=action)


def transition_to_policy_action(transition: EnvTransition) -> PolicyAction:
    _check_is_transition(transition)
    action = transition.get(TransitionKey.ACTION)
    if not isinstance(action, torch.Tensor):
        raise ValueError(f"the transition's action must be a tensor, not {type(action).__name__}")
    return action


def observation_to_transition(observation: RobotObservation) -> EnvTransition:
    return create_transition(observation=observation)


def transition_to_observation(transition: EnvTransition) -> RobotObservation:
    _check_is_transition(transition)
    observation = transition.get(TransitionKey.OBSERVATION)
    if not isinstance(observation, dict):
        raise ValueError(f"the transition's observation must be a dict, not {type(observation).__name__}")
    return observation


def identity_transition(transition: EnvTransition) -> EnvTransition:
    return transition


def from_tensor_to_numpy(x: Any) -> Any:
    """A tensor as a numpy array (a one-element tensor as a Python number); anything else as is."""
    if isinstance(x, torch.Tensor):
        return x.item() if x.numel() == 1 else x.detach().cpu().numpy()
    return x


def _complementary_data(batch: dict[str, Any]) -> dict[str, Any]:
    pads = {k: v for k, v in batch.items() if "_is_pad" in k}
    return {**pads, **{k: batch[k] for k in COMPLEMENTARY_KEYS if k in batch}}


def _check_is_transition(transition: Any) -> None:
    if not isinstance(transition, dict):
        raise ValueError(f"a transition is a dict, not {type(transition).__name__}")


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
