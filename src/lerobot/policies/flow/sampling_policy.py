"""What SmolVLA, π0 and π0.5 do between the rollout and their network, written once.

Each batch row keeps its own queue of actions and its own seeded noise; rows whose queue ran
out sample a chunk together, and while every row is inside a chunk the rollout need not build
a batch at all. A checkpoint is built on the meta device and streamed into storage on its
target device. Subclasses build the network (`build_network`, a `FlowMatchingNetwork`) and turn
a batch into its inputs (`prepare_images`, `prepare_state`); `forward` (the loss) is theirs.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from lerobot.configs.checkpoint import WEIGHTS_FILE, CheckpointError
from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.action_queue import RowActionQueue, batch_size, select_rows
from lerobot.policies.flow.matching import RowNoise
from lerobot.policies.flow.network import FlowMatchingNetwork, VLAInputs
from lerobot.policies.flow.streaming_weights import WeightsError, load_streaming, to_empty_keeping_ties
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import OBS_LANGUAGE_ATTENTION_MASK, OBS_LANGUAGE_TOKENS

RTC_KEYWORDS = frozenset({"inference_delay", "prev_chunk_left_over", "execution_horizon"})
"""LeRobot's real-time-chunking arguments. They steer sampling only with RTC enabled, which
this build refuses (`--policy.rtc_config.enabled`), so here, as in LeRobot with RTC off, they
change nothing."""


def refuse_unknown_keywords(method: str, given: Mapping[str, Any], accepted: Set[str]) -> None:
    """LeRobot's samplers pass **kwargs along and drop what they do not read, so a misspelt
    keyword goes unnoticed there; here it is an error that names the keywords that count."""
    unknown = sorted(set(given) - accepted)
    if unknown:
        raise TypeError(
            f"{method}() got unexpected keyword arguments: {', '.join(unknown)}; "
            f"it takes noise, {', '.join(sorted(accepted))}"
        )


class FlowSamplingPolicy(PreTrainedPolicy):
    model: FlowMatchingNetwork
    chunk_keywords: frozenset[str] = RTC_KEYWORDS
    """What `predict_action_chunk` takes besides `noise`: the keywords LeRobot's sampler of the
    type reads."""

    def __init__(self, config: PreTrainedConfig):
        super().__init__(config)
        config.add_empty_camera_features()
        self.model = self.build_network(config)
        self._queue = RowActionQueue()
        self._noise = RowNoise()

    @abc.abstractmethod
    def build_network(self, config: PreTrainedConfig) -> FlowMatchingNetwork:
        """The type's network, freshly initialised."""

    @abc.abstractmethod
    def prepare_images(self, batch: dict[str, Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """The cameras as the network reads them (in [-1, 1]), and which rows hold each."""

    @abc.abstractmethod
    def prepare_state(self, batch: dict[str, Tensor]) -> Tensor:
        """The state as the network reads it, zero-padded to max_state_dim."""

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def load_checkpoint(
        cls, directory: Path, config: PreTrainedConfig, device: torch.device, strict: bool
    ) -> FlowSamplingPolicy:
        """Built on `device` and filled tensor by tensor (every name must match, whatever
        `strict` says): host memory never holds a second copy of weights that run to
        gigabytes (π: 4.1 B parameters)."""
        with torch.device("meta"):
            policy = cls.for_checkpoint(config)
        to_empty_keeping_ties(policy, device)
        policy.restore_unsaved_buffers()
        try:
            load_streaming(policy, directory / WEIGHTS_FILE)
        except (WeightsError, OSError, json.JSONDecodeError) as exc:
            raise CheckpointError(f"--policy.path={directory}: {WEIGHTS_FILE} {exc}") from None
        policy.eval()
        return policy

    @classmethod
    def for_checkpoint(cls, config: PreTrainedConfig) -> FlowSamplingPolicy:
        """The policy whose every weight a checkpoint gives (built on the meta device)."""
        return cls(config)

    def restore_unsaved_buffers(self) -> None:
        """Set again the buffers a checkpoint does not hold, which `to_empty` left empty."""

    # -- the rows -----------------------------------------------------------------------------

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the queued actions of `env_ids` (all rows when None); reseed their noise."""
        self._queue.reset(env_ids)
        self._noise.reset(env_ids, seeds)

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        """Each row's queued chunk and noise generator."""
        return list(zip(self._queue.save(rows), self._noise.save(rows), strict=True))

    def restore_rows(self, states: Sequence[Any]) -> None:
        states = [state if state is not None else (None, None) for state in states]
        self._queue.restore([queued for queued, _ in states])
        self._noise.restore([generator for _, generator in states])

    def actions_without_observation(self, n_rows: int) -> Tensor | None:
        """The queued actions while every row is inside its chunk (the rollout then builds no
        batch: images and a prompt per row that select_action would not read)."""
        if self._queue.empty_rows(n_rows):
            return None
        return self._queue.pop()

    def take_queued_actions(self, n_rows: int) -> list[Tensor] | None:
        """Each row's rest of chunk."""
        return self._queue.take_rest(n_rows)

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """Rows at the end of their chunk: the others take queued actions."""
        return self._queue.empty_rows(n_rows)

    # -- sampling -----------------------------------------------------------------------------

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor], noise: Tensor | None = None, **kwargs: Any) -> Tensor:
        """The next action of every row; rows whose queue ran out sample a chunk together.

        `noise` (B, chunk_size, max_action_dim) fixes the sampling noise of those rows (each
        takes its own row of it). LeRobot's real-time-chunking keywords change nothing here,
        as in LeRobot's select_action.
        """
        refuse_unknown_keywords(f"{type(self).__name__}.select_action", kwargs, RTC_KEYWORDS)
        n_rows = batch_size(batch)
        rows = self._queue.empty_rows(n_rows)
        if rows:
            rows_noise = noise[rows] if noise is not None else self._draw_noise(rows, batch)
            chunk = self.predict_action_chunk(select_rows(batch, rows, n_rows), noise=rows_noise)
            self._queue.fill(rows, chunk[:, : self.config.n_action_steps], n_rows)
        return self._queue.pop()

    @torch.no_grad()
    def predict_action_chunk(
        self, batch: dict[str, Tensor], noise: Tensor | None = None, **kwargs: Any
    ) -> Tensor:
        """(B, chunk_size, action_dim) normalised actions from the initial sample `noise`
        (B, chunk_size, max_action_dim), drawn from torch's generator if None. π's `num_steps`
        sets this chunk's Euler steps (default: the config's), as its `sample_actions` does in
        LeRobot."""
        refuse_unknown_keywords(f"{type(self).__name__}.predict_action_chunk", kwargs, self.chunk_keywords)
        self.eval()
        actions = self.sample_chunk(self.prepare_inputs(batch), noise, kwargs.get("num_steps"))
        return self.adapt_actions(actions[:, :, : self.config.action_feature.shape[0]].float())

    def prepare_inputs(self, batch: dict[str, Tensor]) -> VLAInputs:
        """What the network reads of a preprocessed batch."""
        images, image_masks = self.prepare_images(batch)
        return VLAInputs(
            images,
            image_masks,
            batch[OBS_LANGUAGE_TOKENS],
            batch[OBS_LANGUAGE_ATTENTION_MASK],
            self.prepare_state(batch),
        )

    def sample_chunk(self, inputs: VLAInputs, noise: Tensor | None, num_steps: int | None = None) -> Tensor:
        """The network's `sample_actions`; a type may run it otherwise (compiled, autocast)."""
        return self.model.sample_actions(inputs, noise, num_steps)

    def adapt_actions(self, actions: Tensor) -> Tensor:
        """The actions in the env's conventions: as sampled, unless a type converts them."""
        return actions

    def _draw_noise(self, rows: Sequence[int], batch: dict[str, Tensor]) -> Tensor | None:
        """Rows' own seeded noise (None: no row is seeded, the network draws it)."""
        shape = (self.config.chunk_size, self.config.max_action_dim)
        return self._noise.draw(rows, shape, batch[OBS_LANGUAGE_TOKENS].device)
