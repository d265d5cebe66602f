"""Meta-World's scripted experts behind the batched policy interface."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from lerobot.envs.metaworld.tasks import expert_policy_name, load_task_table
from lerobot.policies.metaworld_expert.configuration_metaworld_expert import MetaworldExpertConfig
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import ENV_TASK, OBS_ENV_STATE


class MetaworldExpertPolicy(PreTrainedPolicy):
    """Row i acts with the scripted policy of row i's task; the experts are stateless."""

    config_class = MetaworldExpertConfig
    name = "metaworld_expert"

    def __init__(self, config: MetaworldExpertConfig):
        super().__init__(config)
        self._experts: dict[str, object] = {}

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Nothing to forget: each action depends on the current state only."""

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        return [None] * len(rows)

    def restore_rows(self, states: Sequence[Any]) -> None:
        """Stateless: any rows continue as they are."""

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """None: the script reads the simulator's state, never a camera."""
        return []

    def select_action(self, batch) -> torch.Tensor:
        if OBS_ENV_STATE not in batch or ENV_TASK not in batch:
            raise ValueError(
                f"metaworld_expert needs {OBS_ENV_STATE!r} and {ENV_TASK!r} in the batch; "
                "use it with --env.type=metaworld"
            )
        states = batch[OBS_ENV_STATE].detach().cpu().numpy().astype(np.float64)
        with warnings.catch_warnings():
            # Meta-World warns when its gains exceed [-1, 1]; we clip below, as the env does.
            warnings.filterwarnings("ignore", message=r"Constant\(s\) may be too high")
            actions = [self._expert(t).get_action(s) for t, s in zip(batch[ENV_TASK], states, strict=True)]
        return torch.from_numpy(np.clip(np.stack(actions), -1.0, 1.0).astype(np.float32))

    def _expert(self, task: str):
        if task not in self._experts:
            if task not in load_task_table()["tasks"]:
                raise ValueError(f"metaworld_expert: no scripted policy for task {task!r}")
            import metaworld.policies

            self._experts[task] = getattr(metaworld.policies, expert_policy_name(task))()
        return self._experts[task]
