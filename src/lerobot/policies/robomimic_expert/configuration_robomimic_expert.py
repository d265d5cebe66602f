from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lerobot.configs.env import EnvConfig
from lerobot.configs.policies import PreTrainedConfig
from lerobot.utils.errors import ConfigError

SCRIPTED_TASKS = ("lift", "can")
"""The robomimic tasks with a script (`tasks.TASKS`, which needs NumPy, has one each), named here
so that a run is checked while its command line is parsed, before NumPy or torch loads."""


@PreTrainedConfig.register_subclass("robomimic_expert")
@dataclass
class RobomimicExpertConfig(PreTrainedConfig):
    """Scripted experts for robomimic's Lift and Can (robosuite's `Lift`, `PickPlaceCan`): the
    embedded default that needs no download.

    Closed-loop state machines read each row's end-effector pose and fingers
    (`observation.state`), robosuite's object state (`observation.environment_state`) and the
    task name (`env_task`), all of which the env gives with every obs_type, and steer the
    gripper with OSC_POSE deltas, the controller of robomimic's datasets. Over seeds 0-19 within
    robomimic's 400-step horizon both solve 20 of 20 episodes (`--env.obs_type=state` and the
    default cameras alike); see `lerobot.policies.robomimic_expert.scripts` for how.
    """

    extra: ClassVar[str] = "robomimic"
    # The scripts themselves are NumPy; they act only in robosuite's scenes, which the extra brings.
    extra_modules: ClassVar[tuple[str, ...]] = ("robosuite",)

    device: str | None = "cpu"

    def check_env(self, env: EnvConfig) -> None:
        """A one-line error for a run the scripts cannot act in: another benchmark, or a task
        without a script (naming the scripted ones)."""
        if env.type != "robomimic":
            raise ConfigError(
                f"--policy.type=robomimic_expert: scripts robomimic's tasks only, not --env.type={env.type}; "
                "use --env.type=robomimic"
            )
        unscripted = [task.name for task in env.tasks() if task.name not in SCRIPTED_TASKS]
        if unscripted:
            raise ConfigError(
                f"--env.task={unscripted[0]}: --policy.type=robomimic_expert has no script for it; "
                f"scripted tasks: {', '.join(SCRIPTED_TASKS)}"
            )
