"""Installed-looking third-party packages, written into a folder that goes on sys.path.

`lerobot_env_toy` is a plugin as LeRobot's docs describe one: an `EnvConfig` subclass that
names a gym id, its `gym_kwargs` and LeRobot's `features` / `features_map`, nothing else. The
gym id belongs to `gym_toy`, a small real gymnasium env (a point that moves toward a goal).
`lerobot_policy_broken` fails to import, as a plugin written for a newer LeRobot might.

`lerobot_env_echo` is a multi-task benchmark written for LeRobot 0.6.1 that builds its own vector
envs (`create_envs`: gymnasium's SyncVectorEnv, or AsyncVectorEnv when asked for async envs)
and has env processors (`get_env_processors`) whose effects show in every result: the policy
sees the state shifted by +10, the env receives the action shifted by +100, and the reward of
a step is the action's first component.
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

LEROBOT_ENV_ECHO = """
import functools
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig


class EchoEnv(gym.Env):
    \"\"\"A point that stays at (start, 0); a step's reward is its action's first component.\"\"\"

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, start, episode_length):
        self.start, self._max_episode_steps = start, episode_length
        self.task = f"echo-{start:g}"
        self.task_description = f"echo the action from {start:g}"
        box = spaces.Box(-100, 100, (2,), np.float32)
        self.observation_space = spaces.Dict({"agent_pos": box, "environment_state": box})
        self.action_space = spaces.Box(-1, 1, (2,), np.float32)
        self.n_steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.n_steps = 0
        return self._observation(), {}

    def step(self, action):
        self.n_steps += 1
        truncated = self.n_steps >= self._max_episode_steps
        return self._observation(), float(np.asarray(action)[0]), False, truncated, {"is_success": False}

    def _observation(self):
        position = np.array([self.start, 0.0], np.float32)
        return {"agent_pos": position, "environment_state": position.copy()}

    def render(self):
        return np.zeros((8, 8, 3), np.uint8)


class AddToState:
    \"\"\"Env preprocessor step: the policy sees the state shifted by `offset`.\"\"\"

    def __init__(self, offset):
        self.offset = offset

    def __call__(self, batch):
        return {**batch, "observation.state": batch["observation.state"] + self.offset}


class AddToAction:
    \"\"\"Env postprocessor step: the env receives the action shifted by `offset`.\"\"\"

    def __init__(self, offset):
        self.offset = offset

    def __call__(self, transition):
        return {**transition, "action": transition["action"] + self.offset}


@EnvConfig.register_subclass("echo")
@dataclass
class EchoSuiteEnv(EnvConfig):
    task: str = "echo"
    fps: int = 10
    episode_length: int = 3
    n_tasks: int = 2
    features: dict[str, PolicyFeature] = field(
        default_factory=lambda: {
            "action": PolicyFeature(type=FeatureType.ACTION, shape=(2,)),
            "agent_pos": PolicyFeature(type=FeatureType.STATE, shape=(2,)),
            "environment_state": PolicyFeature(type=FeatureType.ENV, shape=(2,)),
        }
    )
    features_map: dict[str, str] = field(
        default_factory=lambda: {
            "action": "action",
            "agent_pos": "observation.state",
            "environment_state": "observation.environment_state",
        }
    )

    @property
    def gym_kwargs(self) -> dict:
        return {}

    def create_envs(self, n_envs, use_async_envs=False):
        env_cls = gym.vector.AsyncVectorEnv if use_async_envs and n_envs > 1 else gym.vector.SyncVectorEnv
        return {
            "echo": {
                task_id: env_cls([functools.partial(EchoEnv, float(task_id), self.episode_length)] * n_envs)
                for task_id in range(self.n_tasks)
            }
        }

    def get_env_processors(self):
        return AddToState(10.0), AddToAction(100.0)
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


def write_echo_plugin(site: Path) -> Path:
    """The echo benchmark plugin (it builds its own envs), alone under `site`."""
    write_package(site, "lerobot_env_echo", LEROBOT_ENV_ECHO)
    return site
