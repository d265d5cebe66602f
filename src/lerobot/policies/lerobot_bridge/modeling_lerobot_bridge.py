"""Any LeRobot policy type as a harness policy: LeRobot runs it in a child process.

Row i of the batch is env slot i, as for every policy. Each request carries the rows whose
episodes restarted (with their seeds) and the observations of the rows that will read them;
the child answers one action per row and, for policies that replay chunks, how many actions
each row still has queued, so rows with a queue step without rendering their cameras. A child
that dies or hangs is a failure of the harness, not of the policy: the interrupted episodes
re-run from their seeds on a fresh child.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import EnvConfig
from lerobot.policies.action_queue import batch_size
from lerobot.policies.lerobot_bridge.configuration_lerobot_bridge import (
    LeRobotBridgeConfig,
    probe_lerobot,
    python_flag,
)
from lerobot.policies.lerobot_bridge.process import (
    ChildFailedError,
    ChildGoneError,
    ChildProcess,
    ChildSettings,
)
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import TASK
from lerobot.utils.errors import ConfigError, HarnessError, PolicyError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SavedRow:
    """A row's state, kept in the child under `handle`; `queued`: its queued actions (None:
    a policy that reads every observation)."""

    handle: int
    queued: int | None


class LeRobotBridgePolicy(PreTrainedPolicy):
    """The harness's side of the bridge; starts the child when built, so a bad checkpoint or
    interpreter fails at once, in one line."""

    config_class = LeRobotBridgeConfig
    name = "lerobot_bridge"

    @classmethod
    def for_env(cls, config: LeRobotBridgeConfig, env_cfg: EnvConfig | None) -> LeRobotBridgePolicy:
        """The child applies the env type's processors, as LeRobot's lerobot-eval does."""
        return cls(config, env_cfg)

    def __init__(self, config: LeRobotBridgeConfig, env_cfg: EnvConfig | None = None):
        super().__init__(config)
        # Batches are assembled on the CPU and sent as bytes; the child puts them on its device.
        self.register_buffer("_host", torch.zeros(0), persistent=False)
        if config.pretrained_path is None:
            raise ConfigError(
                "--policy.type=lerobot_bridge: needs --policy.path=<checkpoint dir or hub repo id>"
            )
        if config.lerobot_version is None:
            config.lerobot_version = probe_lerobot(config.python)
        self.env_cfg = env_cfg
        self.settings = ChildSettings(
            python=str(config.python),
            checkpoint=str(config.pretrained_path),
            device=config.device,
            use_amp=config.use_amp,
            env_type=env_cfg.format_type if env_cfg is not None else None,
        )
        self._child: ChildProcess | None = None
        self._queued: list[int] | None = None
        self._resets: dict[int, int | None] = {}
        self._dropped: list[int] = []
        self.hello = self._start()

    def __deepcopy__(self, memo: dict) -> LeRobotBridgePolicy:
        """Another bridge with its own child: a copy for another task thread
        (`--env.max_parallel_tasks`), whose requests must not interleave with this one's."""
        return type(self)(self.config, self.env_cfg)

    # -- RowPolicy -------------------------------------------------------------------------

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        if env_ids is None:
            self._queued = None
            self._resets = {}
            return
        seeds = list(seeds) if seeds is not None else [None] * len(env_ids)
        for row, seed in zip(env_ids, seeds, strict=True):
            self._resets[int(row)] = None if seed is None else int(seed)

    def select_action(self, batch: dict[str, Any]) -> torch.Tensor:
        n_rows = batch_size(batch)
        observed = self.rows_reading_images(n_rows)
        return self._act(n_rows, observed, _rows_of(batch, observed))

    def actions_without_observation(self, n_rows: int) -> torch.Tensor | None:
        """Every row has queued actions in the child: ask for them without an observation."""
        if self.rows_reading_images(n_rows):
            return None
        return self._act(n_rows, [], ({}, None))

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """Rows with no queued action (or a new episode) in the child; all rows when the child
        does not say (policies that read every observation)."""
        if self._queued is None or len(self._queued) != n_rows:
            return list(range(n_rows))
        return [row for row in range(n_rows) if self._queued[row] == 0 or row in self._resets]

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        """The rows' states stay in the child, set aside under handles (a policy server
        moves rows between batches); a handle whose row never comes back is dropped there."""
        reply, _ = self._request({"op": "save", "rows": [int(row) for row in rows]})
        queued = reply["queued"] if reply["queued"] is not None else [None] * len(reply["handles"])
        saved = [SavedRow(handle, count) for handle, count in zip(reply["handles"], queued, strict=True)]
        for row in saved:
            weakref.finalize(row, self._dropped.append, row.handle)
        return saved

    def restore_rows(self, states: Sequence[Any]) -> None:
        handles = [state.handle if state is not None else None for state in states]
        dropped, self._dropped[:] = [h for h in self._dropped if h not in handles], []
        self._request({"op": "restore", "handles": handles, "dropped": dropped})
        self._resets = {}
        counts = [state.queued if state is not None else 0 for state in states]
        self._queued = None if any(count is None for count in counts) else counts

    def close(self) -> None:
        if self._child is not None:
            self._child.close()
            self._child = None

    # -- the child -------------------------------------------------------------------------

    def _start(self) -> dict[str, Any]:
        try:
            self._child = ChildProcess(
                self.settings, self.config.startup_timeout_s, self.config.request_timeout_s
            )
        except (ChildFailedError, ChildGoneError) as exc:
            raise ConfigError(f"--policy.path={self.config.pretrained_path}: {exc}") from None
        hello = self._child.hello
        self._check_hello(hello)
        logger.info(
            "LeRobot %s at %s runs the %s checkpoint on %s (pid %d)",
            hello["lerobot_version"],
            hello["python"],
            hello["policy_type"],
            hello["device"],
            self._child.pid,
        )
        self._queued = None
        return hello

    def _check_hello(self, hello: dict[str, Any]) -> None:
        wanted = self.env_cfg.action_dim() if self.env_cfg is not None else None
        given = hello.get("action_dim")
        if wanted is not None and given is not None and wanted != given:
            self.close()
            raise ConfigError(
                f"--policy.path={self.config.pretrained_path}: the checkpoint returns {given}-d actions, "
                f"--env.type={self.env_cfg.type} takes {wanted}-d ones"
            )

    def _act(
        self, n_rows: int, observed: list[int], observation: tuple[dict[str, np.ndarray], list[str] | None]
    ) -> torch.Tensor:
        arrays, task = observation
        header = {
            "op": "act",
            "n_rows": n_rows,
            "observed": observed,
            "resets": [[row, seed] for row, seed in sorted(self._resets.items())],
            "task": task,
        }
        reply, reply_arrays = self._request(header, arrays)
        self._resets = {}
        self._queued = reply.get("queued")
        return torch.from_numpy(np.array(reply_arrays["action"], dtype=np.float32))

    def _request(
        self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The child's answer; its failures as the rollout's errors: LeRobot raising is the
        policy's failure, a child gone is ours (a fresh one starts on the next request)."""
        if self._child is None:
            self._restart()
        try:
            return self._child.request(header, arrays or {})
        except ChildFailedError as exc:
            raise PolicyError(f"LeRobot's {self.hello['policy_type']} policy failed: {exc}", None) from None
        except ChildGoneError as exc:
            self._child.close()
            self._child = None
            raise HarnessError(f"{python_flag(self.config.python)}: {exc}", None) from None

    def _restart(self) -> None:
        """A fresh child after one died: every row starts over (its episode re-runs)."""
        logger.warning("restarting the LeRobot bridge process")
        self.hello = self._start()


def _rows_of(batch: dict[str, Any], rows: list[int]) -> tuple[dict[str, np.ndarray], list[str] | None]:
    """The observation of `rows` as arrays: camera images back to uint8 (exactly: they were
    uint8 / 255), vectors as float32; the task descriptions."""
    arrays: dict[str, np.ndarray] = {}
    index = torch.as_tensor(rows, dtype=torch.long)
    for key, value in batch.items():
        if not isinstance(value, torch.Tensor) or not key.startswith("observation."):
            continue
        picked = value.index_select(0, index.to(value.device)).to("cpu")
        if picked.ndim == 4 and picked.is_floating_point():
            picked = picked.mul(255).round_().to(torch.uint8)
        arrays[key] = picked.numpy()
    tasks = batch.get(TASK)
    task = [str(tasks[row]) for row in rows] if isinstance(tasks, list | tuple) else None
    return arrays, task
