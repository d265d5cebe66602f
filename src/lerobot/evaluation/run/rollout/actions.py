"""The policy's side of a round: the batch it reads, its actions as the envs take them.

A round asks the policy once for every row of its group (rows of idle slots are computed and
ignored), builds the batch only when the policy reads it, and brings the actions to the host
once, through the postprocessor. Actions the policy made NaN or inf end that row's episode as
the policy's; a row whose images were not rendered (a blind step) gets NaN images, so a policy
that reads them against its word returns NaN and is caught rather than scored on black frames.
Several groups' batches can be stacked into one model call (`stack_batches`), and a failure of
that call split back into each group's rows (`errors_by_group`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from lerobot.envs.vector import stack_observations
from lerobot.evaluation.run.rollout.rounds import Planning
from lerobot.evaluation.run.rollout.settings import RolloutSettings
from lerobot.policies.pretrained import RowPolicy
from lerobot.processor.observation import observation_to_batch
from lerobot.utils.constants import ENV_TASK, TASK
from lerobot.utils.device_utils import policy_device
from lerobot.utils.errors import HarnessError, PolicyError

SelectAction = Callable[[dict[str, Any]], Any]


class PolicyCalls:
    """One slot group's calls into the policy: its batches in, its actions out on the host."""

    def __init__(self, policy: RowPolicy, settings: RolloutSettings, action_shape: tuple[int, ...]):
        self.policy, self.settings, self.action_shape = policy, settings, action_shape
        self.device = policy_device(policy)

    def select(
        self, observations: Sequence[Any], batch_of: Callable[[], dict[str, Any]], step: int
    ) -> Planning:
        """The actions of every row, as a float32 array on the host. The batch (`batch_of`) is
        built only when the policy reads it (`actions_without_observation`): most steps of a
        chunking policy pop queued actions, and converting the frames for them would be wasted
        work. The model's call itself is the caller's: this yields the batch and is sent back
        the model's output."""
        actions = self.policy.actions_without_observation(len(observations))
        if actions is None:
            actions = yield batch_of()
        actions = self.on_host(actions)
        self.check_shape(actions.shape, self.action_shape, step)
        return actions

    def compute(self, batch: dict[str, Any], select_action: SelectAction | None = None) -> Any:
        """The policy's actions for a batch, after the preprocessor and under autocast when
        asked; `select_action`: another call than this group's policy's (one over the rows of
        several groups, `schedules.compute_together`)."""
        if self.settings.preprocessor is not None:
            batch = self.settings.preprocessor(batch)
        with self.autocast():
            return (select_action or self.policy.select_action)(batch)

    def autocast(self) -> Any:
        return torch.autocast(self.device.type) if self.settings.use_amp else nullcontext()

    def on_host(self, actions: torch.Tensor) -> np.ndarray:
        """The policy's actions through the postprocessor (under autocast when asked), as a
        float32 array: the one device-to-host copy per step, or per chunk."""
        if self.settings.postprocessor is not None:
            with self.autocast():
                actions = self.settings.postprocessor(actions)
        if actions.device.type != "cpu" or actions.dtype != torch.float32:
            actions = actions.to("cpu", torch.float32)
        return actions.numpy()

    def queued_chunks(self, n_rows: int, step: int) -> list[np.ndarray] | None:
        """Each row's rest of chunk as a (steps, action_dim) array on the host, or None when some
        row reads its next observation. The rows' actions go through the postprocessor
        together, one action per row of its input, as a step's batch of actions does."""
        rest = self.policy.take_queued_actions(n_rows)
        if rest is None:
            return None
        lengths = [len(chunk) for chunk in rest]
        flat = self.on_host(torch.cat(list(rest)))
        self.check_shape(flat.shape[1:], self.action_shape[1:], step, "queued actions")
        return np.split(flat, np.cumsum(lengths)[:-1])

    def batch(
        self,
        observations: Sequence[Any],
        active: Sequence[int],
        blind: Sequence[bool],
        task: Any,
        env_task: Any,
    ) -> dict[str, Any]:
        """Every slot's observation as the policy's batch (idle slots repeat an active one's),
        before the preprocessor (`compute`); `task` and `env_task`: one per row."""
        if len(active) == len(observations):
            stacked = stack_observations(observations)
        else:
            filler = observations[active[0]]
            stacked = stack_observations([obs if obs is not None else filler for obs in observations])
        batch: dict[str, Any] = observation_to_batch(stacked, self.device, self.settings.rename_map)
        poison_images(batch, [i for i, is_blind in enumerate(blind) if is_blind])
        batch[TASK] = task
        batch[ENV_TASK] = env_task
        return batch

    def check_shape(
        self, shape: tuple[int, ...], expected: tuple[int, ...], step: int, what: str = "actions"
    ) -> None:
        if tuple(shape) != tuple(expected):
            raise ValueError(
                f"policy {self.policy.name!r} returned {what} of shape {tuple(shape)} at step {step}; "
                f"expected {tuple(expected)}"
            )

    def non_finite_reason(self, step: int) -> str:
        return f"policy {self.policy.name!r} returned NaN or inf actions at step {step} of the episode"


def poison_images(batch: dict[str, Any], rows: Sequence[int]) -> None:
    """NaN for the images of `rows` (whose render was skipped): a policy that reads one after
    its `rows_reading_images` left it out returns NaN actions, which stop the run, instead of
    acting on a black frame and being scored on it."""
    if not rows:
        return
    for value in batch.values():
        if isinstance(value, torch.Tensor) and value.ndim >= 4 and value.is_floating_point():
            value[list(rows)] = math.nan


def first_non_finite(chunk: np.ndarray) -> int | None:
    """The index of a chunk's first action holding NaN or inf; None when all are finite."""
    finite = np.isfinite(chunk).all(axis=1)
    return None if finite.all() else int(np.argmin(finite))


def non_finite_rows(actions: np.ndarray, rows: Sequence[int]) -> list[int]:
    """The rows among `rows` whose action holds NaN or inf."""
    if np.isfinite(actions).all():  # the common case, without indexing the rows
        return []
    return [i for i in rows if not np.isfinite(actions[i]).all()]


def failed_rows(rows: Sequence[int] | None, active: Sequence[int]) -> list[int]:
    """The running slots among the rows a policy failed on (None: all of them)."""
    return list(active) if rows is None else [row for row in rows if row in active]


def errors_by_group(error: HarnessError | PolicyError, sizes: Sequence[int]) -> list[Exception]:
    """A failure of a stacked call as each group sees it: the failed rows that are its own,
    numbered within the group (None, every row, stays so)."""
    errors = []
    start = 0
    for size in sizes:
        own = copy.copy(error)
        if error.rows is not None:
            own.rows = tuple(row - start for row in error.rows if start <= row < start + size)
        errors.append(own)
        start += size
    return errors


def stack_batches(batches: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The batches' rows one batch after the other; None where they do not stack (different
    keys, or tensors of different shapes past the rows)."""
    keys = batches[0].keys()
    if any(batch.keys() != keys for batch in batches):
        return None
    stacked: dict[str, Any] = {}
    for key in keys:
        values = [batch[key] for batch in batches]
        if all(isinstance(v, torch.Tensor) for v in values):
            first = values[0]
            if first.ndim == 0 or any(
                v.shape[1:] != first.shape[1:] or v.dtype != first.dtype or v.device != first.device
                for v in values
            ):
                return None
            stacked[key] = torch.cat(values)
        elif all(isinstance(v, list) for v in values):
            stacked[key] = [item for v in values for item in v]
        else:
            return None
    return stacked
