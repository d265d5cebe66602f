"""A policy that lives in another process: observations out, action chunks back.

Row i of the batch is env slot i, as for every policy. Each row keeps the actions left of the
last chunk the server returned for it (at most `replan_steps` of them) and asks for a new chunk
when they run out, so rows whose episodes started at different steps replan at their own pace.
A lerobot-serve-policy hands each row its action and the rest of its queued chunk (what its
policy takes without a new observation): the rows then send an observation once per chunk,
and their chunks travel to the env workers whole, as with a local policy.
An episode start (`reset`) empties the row and is told to servers that keep per-row state
(lerobot-serve-policy), with the episode's seed, in the next request.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import EnvConfig
from lerobot.policies.action_queue import batch_size
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.websocket.configuration_websocket import WebsocketConfig
from lerobot.policies.websocket.connection import ServerConnection
from lerobot.policies.websocket.obs_formats import FORMATS, MAX_ROWS, RowRequest, holds_taken_actions
from lerobot.utils.errors import ConfigError, HarnessError, PolicyError
from lerobot.utils.logging_utils import one_line

logger = logging.getLogger(__name__)


class WebsocketPolicy(PreTrainedPolicy):
    """The client of a policy server; connects when built, so a wrong address fails at once."""

    config_class = WebsocketConfig
    name = "websocket"

    @classmethod
    def for_env(cls, config: WebsocketConfig, env_cfg: EnvConfig | None) -> WebsocketPolicy:
        """The request layout and the action size depend on the env's observations and actions."""
        return cls(config, env_cfg)

    def __init__(self, config: WebsocketConfig, env_cfg: EnvConfig | None = None):
        super().__init__(config)
        self.format = FORMATS[config.obs_format](config.resize_size)
        self.replan_steps = config.replan_steps or self.format.replan_steps
        self.env_cfg = env_cfg
        self.action_dim = env_cfg.action_dim() if env_cfg is not None else None
        self._connections: dict[int, ServerConnection] = {}
        self._plans: dict[int, deque[np.ndarray]] = {}
        self._resets: dict[int, int | None] = {}
        self._reset_every_row = False
        self._server_rows: dict[int, int] = {}
        """Batch row -> the row id the server keeps its state under, for rows brought back by
        `restore_rows`; any other row i is row i there."""
        self._next_server_row = 0
        metadata = self._connection(0).open()
        logger.info("policy server at %s: %s", config.uri, _describe_server(metadata))
        self._check_metadata(metadata)
        declared = metadata.get("input_features")
        if isinstance(declared, dict) and declared and hasattr(self.format, "inputs"):
            self.format.inputs = frozenset(str(key) for key in declared)

    def __deepcopy__(self, memo: dict) -> WebsocketPolicy:
        """A client of the same server with its own connections and no plans: a copy for
        another task thread (`--env.max_parallel_tasks`), whose requests must not interleave
        with this one's on a socket. It connects at once, as the original did."""
        return type(self)(self.config, self.env_cfg)

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        if env_ids is None:
            self._plans.clear()
            self._resets.clear()
            self._reset_every_row = True
            return
        seeds = list(seeds) if seeds is not None else [None] * len(env_ids)
        for row, seed in zip(env_ids, seeds, strict=True):
            self._plans.pop(row, None)
            self._resets[row] = seed

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        """Each row's plan, its pending episode start, and the id the server knows it by (a
        lerobot-serve-policy keeps the row's own state under that id, so nothing moves)."""
        return [
            (
                list(self._plans.get(row, ())),
                self._starts(row),
                self._resets.get(row),
                self._server_row(row),
            )
            for row in rows
        ]

    def restore_rows(self, states: Sequence[Any]) -> None:
        """Rows as `save_rows` gave them; a None row is new and gets an id no other row of
        this client uses now (the server forgets its old state at the episode start that a
        new row always sends first)."""
        self._plans, self._resets, self._server_rows = {}, {}, {}
        self._reset_every_row = False
        for row, state in enumerate(states):
            if state is None:
                self._server_rows[row] = self._new_server_row()
                continue
            plan, starts, seed, server_row = state
            self._plans[row] = deque(plan)
            if starts:
                self._resets[row] = seed
            self._server_rows[row] = server_row

    def _server_row(self, row: int) -> int:
        return self._server_rows.get(row, row)

    def _new_server_row(self) -> int:
        """Ids above any batch row, cycling within what the server accepts: a batch's rows
        and those of the few groups beside it never meet an id still in use."""
        server_row = MAX_ROWS // 2 + self._next_server_row
        self._next_server_row = (self._next_server_row + 1) % (MAX_ROWS // 2)
        return server_row

    def select_action(self, batch: dict[str, Any]) -> torch.Tensor:
        n_rows = batch_size(batch)
        empty = self.rows_reading_images(n_rows)
        if empty:
            self._replan(batch, empty)
        return self._pop_plans(n_rows)

    def actions_without_observation(self, n_rows: int) -> torch.Tensor | None:
        """The planned actions while every row has some left: no request, nothing to send."""
        if self.rows_reading_images(n_rows):
            return None
        return self._pop_plans(n_rows)

    def take_queued_actions(self, n_rows: int) -> list[torch.Tensor] | None:
        """Each row's rest of plan, while every row has some left."""
        if self.rows_reading_images(n_rows):
            return None
        rest = [torch.from_numpy(np.stack(self._plans[row])) for row in range(n_rows)]
        for row in range(n_rows):
            self._plans[row].clear()
        return rest

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """Rows whose plan ran out: only they send their observation to the server."""
        return [row for row in range(n_rows) if not self._plans.get(row)]

    def _pop_plans(self, n_rows: int) -> torch.Tensor:
        return torch.from_numpy(np.stack([self._plans[row].popleft() for row in range(n_rows)]))

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()

    def _replan(self, batch: dict[str, Any], rows: list[int]) -> None:
        """New chunks for `rows`; rows the server failed raise, the others keep their chunks."""
        request = RowRequest(
            tuple(rows),
            tuple((row, self._resets.get(row)) for row in rows if self._starts(row)),
            tuple(self._server_row(row) for row in rows),
            max_actions=self.config.replan_steps,  # unset: the rest of each row's chunk
        )
        messages = self.format.messages(batch, request)
        channels = [0] if self.format.batched else rows
        failures: dict[int, Exception] = {}
        for channel, message in zip(channels, messages, strict=True):
            try:
                self._connection(channel).send(message)
            except (HarnessError, PolicyError) as exc:
                failures[channel] = exc
        replies = {}
        for channel in channels:
            if channel not in failures:
                try:
                    replies[channel] = self._connection(channel).receive()
                except (HarnessError, PolicyError) as exc:
                    failures[channel] = exc
        if self.format.batched:
            self._fill(rows, replies, failures, request)
        else:
            for row in rows:
                self._fill([row], replies, failures, RowRequest((row,)), channel=row)
        self._raise_failures(rows, failures)
        self._reset_every_row = False

    def _fill(
        self,
        rows: list[int],
        replies: dict[int, dict[str, Any]],
        failures: dict[int, Exception],
        request: RowRequest,
        channel: int = 0,
    ) -> None:
        """Queue the chunks of `channel`'s reply for `rows`; a malformed reply is a failure."""
        if channel in failures:
            return
        try:
            chunks = self.format.chunks([replies[channel]], request)
        except ValueError as exc:
            failures[channel] = PolicyError(f"policy server reply: {exc}")
            return
        # One array per row: the server bounded them by max_actions and counts them as taken.
        counted = holds_taken_actions(replies[channel])
        for row, chunk in zip(rows, chunks, strict=True):
            self._check_chunk(chunk)
            self._plans[row] = deque(chunk if counted else chunk[: self.replan_steps])
            self._resets.pop(row, None)

    def _raise_failures(self, rows: list[int], failures: dict[int, Exception]) -> None:
        if not failures:
            return
        failed_rows = rows if self.format.batched else sorted(failures)
        errors = list(failures.values())
        # One lost connection means the server went away: every failed row re-runs.
        harness = [e for e in errors if isinstance(e, HarnessError)]
        if harness:
            raise HarnessError(str(harness[0]), failed_rows)
        raise PolicyError(str(errors[0]), failed_rows)

    def _starts(self, row: int) -> bool:
        return self._reset_every_row or row in self._resets

    def _check_chunk(self, chunk: np.ndarray) -> None:
        if len(chunk) == 0:
            raise PolicyError("policy server returned an empty action chunk")
        if self.action_dim is not None and chunk.shape[-1] != self.action_dim:
            raise ConfigError(
                f"--policy.host={self.config.uri}: the server returns {chunk.shape[-1]}-d actions, the env "
                f"takes {self.action_dim}-d ones; serve a policy trained for this env"
            )

    def _check_metadata(self, metadata: dict[str, Any]) -> None:
        served_dim = metadata.get("action_dim")
        if isinstance(served_dim, int) and self.action_dim is not None and served_dim != self.action_dim:
            raise ConfigError(
                f"--policy.host={self.config.uri}: the server's policy returns {served_dim}-d actions, the "
                f"env takes {self.action_dim}-d ones; serve a policy trained for this env"
            )

    def _connection(self, channel: int) -> ServerConnection:
        if channel not in self._connections:
            cfg = self.config
            self._connections[channel] = ServerConnection(
                cfg.uri, cfg.api_key, cfg.connect_timeout_s, cfg.request_timeout_s, cfg.reconnect_timeout_s
            )
        return self._connections[channel]


def _describe_server(metadata: dict[str, Any]) -> str:
    if not metadata:
        return "connected (no metadata)"
    # The server's strings are quoted, never trusted: one bounded line each, so a hostile
    # server cannot forge lines of our log ("100.0% success").
    shown = {one_line(str(k), 60): v for k, v in metadata.items() if isinstance(v, str | int | float | bool)}
    return "connected, " + ", ".join(f"{k}={one_line(str(v), 200)}" for k, v in sorted(shown.items()))
