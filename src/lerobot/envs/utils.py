"""LeRobot's env helpers (`lerobot.envs.utils`): observations to policy batches, task strings,
policy features of an env config, camera lists, freezing finished sub-envs, closing nested
env dicts.

These serve code written against LeRobot that steps envs itself. `lerobot-eval` does the same
work inside its rollout loop (`lerobot.processor.observation.observation_to_batch`), in one
pass per step. torch is imported by `preprocess_observation` only, so that `close_envs` (which
`lerobot.envs.factory` offers too) stays usable where torch is not loaded.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lerobot.configs.env import EnvConfig
from lerobot.configs.gym_env import sub_env_attribute
from lerobot.configs.types import PolicyFeature
from lerobot.utils.constants import OBS_IMAGE, OBS_IMAGES, OBS_PREFIX, TASK

if TYPE_CHECKING:
    import torch

# LeRobot's finished-sub-env wrapper needs gymnasium: it lives in `freeze`, imported on first use.
_IN_FREEZE = ("FreezeAfterEpisodeEnd", "freeze_after_episode_end", "NEW_ROLLOUT_OPTION")

logger = logging.getLogger(__name__)


def preprocess_observation(observations: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """A (batched) gymnasium observation as policy inputs under LeRobot's keys.

    `pixels` (one camera, or a dict of cameras) become float32 channel-first images in [0, 1]
    under `observation.image` / `observation.images.<camera>`; `agent_pos` becomes
    `observation.state` and `environment_state` `observation.environment_state`; any other
    array `x` becomes `observation.x`, and a nested dict of arrays (LeRobot's LIBERO env's raw
    `robot_state`) `observation.x` as the same dict of tensors, for LeRobot's LIBERO processor step
    to convert. Unbatched observations (a single env's) get a batch axis.
    """
    import torch

    from lerobot.processor.observation import STATE_KEYS, images_to_tensor

    batch: dict[str, torch.Tensor] = {}
    pixels = observations.get("pixels")
    cameras = pixels.items() if isinstance(pixels, Mapping) else [] if pixels is None else [(None, pixels)]
    for camera, images in cameras:
        images = np.asarray(images)
        key = OBS_IMAGE if camera is None else f"{OBS_IMAGES}.{camera}"
        batch[key] = images_to_tensor(images[None] if images.ndim == 3 else images)
    for env_key, value in observations.items():
        if env_key == "pixels":
            continue
        if isinstance(value, Mapping):
            batch[f"{OBS_PREFIX}.{env_key}"] = _nested_tensors(value)
            continue
        policy_key = STATE_KEYS.get(env_key, f"{OBS_PREFIX}.{env_key}")
        tensor = torch.as_tensor(np.asarray(value), dtype=torch.float32)
        batch[policy_key] = tensor[None] if tensor.ndim == 1 else tensor
    return batch


def _nested_tensors(values: Mapping[str, Any]) -> dict[str, Any]:
    """A nested dict of arrays as the same dict of tensors (their own dtypes, as LeRobot keeps them)."""
    import torch

    return {
        key: _nested_tensors(value)
        if isinstance(value, Mapping)
        else torch.from_numpy(value)
        if isinstance(value, np.ndarray)
        else value
        for key, value in values.items()
    }


def add_envs_task(env: Any, observation: dict[str, Any]) -> dict[str, Any]:
    """Add `observation["task"]`: one instruction per sub-env (`task_description`, else `task`,
    else ""), as language-conditioned policies read it."""
    observation[TASK] = env_task_descriptions(env)
    return observation


def env_task_descriptions(env: Any) -> list[str]:
    """Each sub-env's instruction, asked of the env without stepping it.

    An env built by `lerobot.envs.factory` knows its task, so no worker is started to ask; any
    other vector env is asked through `call`, as LeRobot does.
    """
    task = getattr(env, "task", None)
    description = getattr(task, "description", None)
    if isinstance(description, str):
        return [description] * env.num_envs
    for attribute in ("task_description", "task"):
        values = sub_env_attribute(env, attribute)
        if values is not None and all(isinstance(value, str) for value in values):
            return values
    return [""] * env.num_envs


def close_envs(obj: Any) -> None:
    """Close an env, or every env of a (nested) dict or list of them, such as `make_env` returns.

    A failure to close one env is logged and the others are still closed.
    """
    if isinstance(obj, Mapping):
        for value in obj.values():
            close_envs(value)
    elif isinstance(obj, Sequence) and not isinstance(obj, str | bytes):
        for value in obj:
            close_envs(value)
    elif hasattr(obj, "close"):
        try:
            obj.close()
        except Exception:  # closing must go on for the other envs
            logger.exception("failed to close %r", obj)


def env_to_policy_features(env_cfg: EnvConfig) -> dict[str, PolicyFeature]:
    """What a policy receives and returns in `env_cfg`'s envs, under LeRobot's batch keys
    (images channel-first), `action` included, as LeRobot's function of this name gives it."""
    return dict(env_cfg.policy_features())


def parse_camera_names(camera_name: str | Sequence[str]) -> list[str]:
    """`"cam_a,cam_b"` or a sequence of names as a non-empty list, blanks dropped."""
    if isinstance(camera_name, str):
        names = camera_name.split(",")
    elif isinstance(camera_name, list | tuple):
        names = [str(name) for name in camera_name]
    else:
        raise TypeError(f"camera_name must be str or sequence[str], got {type(camera_name).__name__}")
    cameras = [name.strip() for name in names if name.strip()]
    if not cameras:
        raise ValueError("camera_name resolved to an empty list.")
    return cameras


def check_env_attributes_and_types(env: Any) -> None:
    """Warn once when the sub-envs lack `task_description` or `task`, which language-conditioned
    policies read."""
    if sub_env_attribute(env, "task_description") is None or sub_env_attribute(env, "task") is None:
        warnings.warn(
            "The environment does not have 'task_description' and 'task'. Some policies require these features.",
            UserWarning,
            stacklevel=2,
        )


def __getattr__(name: str) -> Any:
    if name in _IN_FREEZE:
        from lerobot.envs import freeze

        return getattr(freeze, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
