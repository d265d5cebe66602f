"""Run stacked requests of many clients through one policy, each client row keeping its state.

The policy's per-row state (action queues, temporal ensembles, observation history, noise
generators) belongs to one episode of one client. Between calls it is kept aside per
(connection, row) and the rows of the next call are put back in (`save_rows`/`restore_rows`),
so a row continues exactly as it would in a local evaluation, whatever other rows share its
batch. A state is stored only after a successful call, which lets a failed batch be re-run
request by request to find out whose request failed.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lerobot.policies.pretrained import MAX_QUEUED_STEPS, PreTrainedPolicy, pop_queued_actions
from lerobot.processor.observation import images_to_tensor
from lerobot.serving.requests import InferenceRequest
from lerobot.utils.device_utils import policy_device
from lerobot.utils.logging_utils import one_line

logger = logging.getLogger(__name__)

RowKey = tuple[int, int]
"""(connection, the client's row id)."""


@dataclass(frozen=True)
class Outcome:
    """A request's actions (rows, action_dim), or the one-line error its client gets."""

    actions: np.ndarray | None = None
    error: str | None = None
    chunks: list[np.ndarray] | None = None
    """With `max_actions` other than 1: each row's (steps, action_dim) actions, its first one
    (`actions[row]`) and those queued after it that the row was given too."""


class PolicyRunner:
    """Owns the policy; called from the single inference thread only."""

    def __init__(
        self,
        policy: PreTrainedPolicy,
        preprocessor: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        postprocessor: Callable[[torch.Tensor], torch.Tensor] | None = None,
        use_amp: bool = False,
    ):
        self.policy, self.preprocessor, self.postprocessor = policy, preprocessor, postprocessor
        self.device = policy_device(policy)
        self.use_amp = use_amp
        self.states: dict[RowKey, Any] = {}
        self.n_batches = 0
        self.n_requests = 0
        self.most_clients = 0
        """The most connections whose requests shared one batch: what batching across clients
        (Ray workers, shards) achieved; the server logs it when it stops."""

    def run(self, requests: Sequence[InferenceRequest]) -> list[Outcome]:
        """One policy call for all `requests`; if it fails, one call per request."""
        self.n_batches += 1
        self.n_requests += len(requests)
        self.most_clients = max(self.most_clients, len({request.session for request in requests}))
        return self._run(requests)

    def _run(self, requests: Sequence[InferenceRequest]) -> list[Outcome]:
        try:
            return self._call(requests)
        except Exception as exc:
            if len(requests) == 1:
                return [Outcome(error=_log_failure(exc))]
        logger.warning("a batch of %d requests failed; running them one by one", len(requests))
        return [self._run([request])[0] for request in requests]

    def forget(self, session: int) -> None:
        """Drop the rows of a closed connection."""
        for key in [key for key in self.states if key[0] == session]:
            del self.states[key]

    def _call(self, requests: Sequence[InferenceRequest]) -> list[Outcome]:
        keys = [(request.session, row) for request in requests for row in request.rows]
        starts = {
            index: request.resets[row]
            for index, (request, row) in enumerate((r, row) for r in requests for row in r.rows)
            if row in request.resets
        }
        self.policy.restore_rows(
            [None if i in starts else self.states.get(key) for i, key in enumerate(keys)]
        )
        if starts:
            self.policy.reset(env_ids=list(starts), seeds=list(starts.values()))
        actions = self._select(stack_batch(requests, self.device))
        reading = set(self.policy.rows_reading_images(len(keys)))
        limits = [request.max_actions for request in requests for _ in request.rows]
        extra = [0 if i in reading else _extra_actions(limit) for i, limit in enumerate(limits)]
        states = self.policy.save_rows(range(len(keys)))
        queued = self._take_queued(states, extra)
        self.states.update(zip(keys, states, strict=True))
        bounds = np.cumsum([0] + [len(request.rows) for request in requests])
        chunks = [
            actions[i : i + 1] if rest is None else np.concatenate([actions[i : i + 1], rest])
            for i, rest in enumerate(queued)
        ]
        outcomes = []
        for request, start, stop in zip(requests, bounds[:-1], bounds[1:], strict=True):
            given = chunks[start:stop] if request.max_actions != 1 else None
            outcomes.append(Outcome(actions[start:stop], chunks=given))
        return outcomes

    def _take_queued(self, states: list[Any], extra: Sequence[int]) -> list[np.ndarray | None]:
        """For each row, up to `extra[row]` more actions that it takes without reading another
        observation, as its next calls would take them (a queued chunk's rest; None: none).
        `states` are updated: the actions given are taken."""
        taken: list[np.ndarray | None] = [None] * len(states)
        for row, wanted in enumerate(extra):
            if wanted == 0:
                continue
            self.policy.restore_rows([states[row]])
            with torch.inference_mode():
                popped = pop_queued_actions(self.policy, 1, wanted)
            [states[row]] = self.policy.save_rows([0])
            if popped:
                taken[row] = self._postprocess(torch.cat(popped))
        return taken

    def _select(self, batch: dict[str, Any]) -> np.ndarray:
        with torch.inference_mode():
            if self.preprocessor is not None:
                batch = self.preprocessor(batch)
            amp = torch.autocast(self.device.type) if self.use_amp else nullcontext()
            with amp:
                actions = self.policy.select_action(batch)
        return self._postprocess(actions)

    def _postprocess(self, actions: torch.Tensor) -> np.ndarray:
        """Policy outputs (rows, action_dim) -> the env's actions on the host, float32."""
        with torch.inference_mode():
            amp = torch.autocast(self.device.type) if self.use_amp else nullcontext()
            with amp:
                if self.postprocessor is not None:
                    actions = self.postprocessor(actions)
        return actions.to("cpu", torch.float32).numpy()


def _extra_actions(max_actions: int | None) -> int:
    """How many actions after its first a row may be given (None: its whole queued chunk)."""
    return MAX_QUEUED_STEPS if max_actions is None else max_actions - 1


def stack_batch(requests: Sequence[InferenceRequest], device: torch.device) -> dict[str, Any]:
    """The policy batch of all requests' rows, in order: images as float (B, 3, H, W) in [0, 1]."""
    batch: dict[str, Any] = {}
    for key in requests[0].arrays:
        stacked = np.concatenate([request.arrays[key] for request in requests])
        if _is_image(stacked):
            batch[key] = images_to_tensor(stacked)
        else:
            batch[key] = torch.from_numpy(stacked)
    if device.type != "cpu":
        batch = {key: value.to(device, non_blocking=True) for key, value in batch.items()}
    for key in requests[0].texts:
        batch[key] = [text for request in requests for text in request.texts[key]]
    return batch


def _is_image(array: np.ndarray) -> bool:
    return array.dtype == np.uint8 and array.ndim == 4 and array.shape[-1] == 3


def _log_failure(exc: Exception) -> str:
    """Log the traceback here, on the server; the client gets one line."""
    logger.error("inference failed:\n%s", "".join(traceback.format_exception(exc)).rstrip())
    text = one_line(str(exc).strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
