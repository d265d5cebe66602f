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
    """Row i acts with the scripted policy of row i's task; the experts are stateless.

    With `action_noise`, row i also keeps a noise generator seeded with its episode's seed, so
    episode 7 gets the same noise alone or beside six others, as the random policy does.
    """

    config_class = MetaworldExpertConfig
    name = "metaworld_expert"

    def __init__(self, config: MetaworldExpertConfig):
        super().__init__(config)
        self._experts: dict[str, object] = {}
        self._noise_rngs: dict[int, np.random.Generator] = {}

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """The experts forget nothing (each action depends on the current state only); the
        noise generators of `env_ids` restart from their episodes' seeds."""
        if env_ids is None:
            self._noise_rngs.clear()
            return
        seeds = seeds if seeds is not None else [None] * len(env_ids)
        for env_id, seed in zip(env_ids, seeds, strict=True):
            self._noise_rngs[env_id] = np.random.default_rng(seed)

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        return [self._noise_rngs.get(row) for row in rows]

    def restore_rows(self, states: Sequence[Any]) -> None:
        self._noise_rngs = {row: rng for row, rng in enumerate(states) if rng is not None}

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
        actions = np.stack(actions)
        if self.config.action_noise > 0:
            actions = actions + self._noise(actions.shape)
        return torch.from_numpy(np.clip(actions, -1.0, 1.0).astype(np.float32))

    def _noise(self, shape: tuple[int, ...]) -> np.ndarray:
        """One Gaussian draw per action dimension, from each row's own generator."""
        rngs = [self._noise_rngs.setdefault(row, np.random.default_rng()) for row in range(shape[0])]
        return np.stack([rng.normal(0.0, self.config.action_noise, shape[1:]) for rng in rngs])

    def _expert(self, task: str):
        if task not in self._experts:
            if task not in load_task_table()["tasks"]:
                raise ValueError(f"metaworld_expert: no scripted policy for task {task!r}")
            import metaworld.policies

            self._experts[task] = getattr(metaworld.policies, expert_policy_name(task))()
        return self._experts[task]
