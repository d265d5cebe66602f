"""Installed-looking third-party packages, written into a folder that goes on sys.path.

`lerobot_env_toy` is a plugin as LeRobot's docs describe one: an `EnvConfig` subclass that
names a gym id, its `gym_kwargs` and LeRobot's `features` / `features_map`, nothing else. The
gym id belongs to `gym_toy`, a small real gymnasium env (a point that moves toward a goal).
`lerobot_policy_broken` fails to import, as a plugin written for a newer LeRobot might.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

GYM_TOY = '''
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ToyReachEnv(gym.Env):
    """A point in the plane moves by the action; success within 0.2 of a seeded goal."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
    task_description = "move the point to the goal"

    def __init__(self, render_mode="rgb_array"):
        self.render_mode = render_mode
        self.observation_space = spaces.Dict({"agent_pos": spaces.Box(-10, 10, (2,), np.float32)})
        self.action_space = spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = np.zeros(2, np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return {"agent_pos": self.pos.copy()}, {}

    def step(self, action):
        self.pos = self.pos + 0.5 * np.clip(np.asarray(action, np.float32), -1, 1)
        distance = float(np.linalg.norm(self.pos - self.goal))
        success = distance < 0.2
        return {"agent_pos": self.pos.copy()}, -distance, success, False, {"is_success": success}

    def render(self):
        return np.zeros((8, 8, 3), np.uint8)


gym.register(id="gym_toy/Reach-v0", entry_point="gym_toy:ToyReachEnv")
'''

LEROBOT_ENV_TOY = """
from dataclasses import dataclass, field

from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig


@EnvConfig.register_subclass("toy")
@dataclass
class ToyEnv(EnvConfig):
    task: str = "Reach-v0"
    fps: int = 10
    episode_length: int = 6
    features: dict[str, PolicyFeature] = field(
        default_factory=lambda: {
            "action": PolicyFeature(type=FeatureType.ACTION, shape=(2,)),
            "agent_pos": PolicyFeature(type=FeatureType.STATE, shape=(2,)),
        }
    )
    features_map: dict[str, str] = field(
        default_factory=lambda: {"action": "action", "agent_pos": "observation.state"}
    )

    @property
    def gym_kwargs(self) -> dict:
        return {"max_episode_steps": self.episode_length}
"""

BROKEN_POLICY = """raise ImportError("No module named 'lerobot.optim'")
"""


def write_package(site: Path, name: str, code: str, distribution: bool = True) -> None:
    (site / name).mkdir(parents=True, exist_ok=True)
    (site / name / "__init__.py").write_text(textwrap.dedent(code))
    if distribution:  # what pip leaves next to an installed package
        info = site / f"{name}-0.1.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n"
        )


def write_plugins(site: Path) -> Path:
    """The toy env plugin, its gym package and a broken policy plugin, under `site`."""
    write_package(site, "gym_toy", GYM_TOY, distribution=False)
    write_package(site, "lerobot_env_toy", LEROBOT_ENV_TOY)
    write_package(site, "lerobot_policy_broken", BROKEN_POLICY)
    return site
