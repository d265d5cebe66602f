"""Our robomimic env against robosuite's own `suite.make` loop, step by step.

A module of its own because the test suite runs it twice: in the test process for the tasks
the suite's robosuite (1.4.0, LIBERO's) has, and as a script under robosuite 1.4.1
(`PYTHONPATH=.venv/robosuite-1.4.1`) for TwoArmTransport and ToolHang, which only that release
has: `python tests/envs/robomimic_fidelity.py transport tool_hang` prints one JSON line.
"""

from __future__ import annotations

import json
import sys

import numpy as np

FIDELITY_STEPS = 30
SEED = 11
CAMERA_SIZE = 32


def check_fidelity(task: str, steps: int = FIDELITY_STEPS) -> dict:
    """Same seed, same fixed actions, ours and robosuite's loop with our `make_kwargs`: the same
    proprioception, object state, images (robomimic's row flip of robosuite's), rewards and
    success, step by step. Returns what was compared, for the caller to assert on."""
    from lerobot.envs.robomimic import RobomimicEnvConfig
    from lerobot.envs.robomimic.env import RobomimicEnv, upright
    from lerobot.envs.robomimic.tasks import TASKS
    from lerobot.envs.robosuite_support import import_robosuite

    cfg = RobomimicEnvConfig(  # the shaped reward, where there is one, says more than 30 zeros
        task=task,
        observation_height=CAMERA_SIZE,
        observation_width=CAMERA_SIZE,
        reward_shaping=TASKS[task].shaped_reward,
    )
    ours = RobomimicEnv(**cfg.env_kwargs(task))
    robosuite = import_robosuite()
    theirs = robosuite.make(TASKS[task].env_name, **ours.make_kwargs())
    ours.action_space.seed(5)
    actions = [ours.action_space.sample() for _ in range(steps)]
    rewards, successes = [], []

    def assert_same(obs: dict, raw: dict, t: int) -> None:
        state = np.concatenate([raw[key] for key in TASKS[task].proprio_keys]).astype(np.float32)
        np.testing.assert_array_equal(obs["agent_pos"], state, err_msg=f"step {t}")
        np.testing.assert_array_equal(obs["environment_state"], raw["object-state"].astype(np.float32))
        for camera, image in obs["pixels"].items():
            np.testing.assert_array_equal(image, upright(raw[f"{camera}_image"]), err_msg=f"{camera} {t}")

    try:
        obs, _ = ours.reset(seed=SEED)
        np.random.seed(SEED)
        raw = theirs.reset()
        assert_same(obs, raw, -1)
        for t, action in enumerate(actions):
            obs, reward, terminated, truncated, info = ours.step(action)
            raw, raw_reward, _, _ = theirs.step(action)
            assert_same(obs, raw, t)
            assert reward == raw_reward, t
            assert info["is_success"] == bool(theirs._check_success()), t
            rewards.append(reward)
            successes.append(info["is_success"])
        images = {camera: float(image.std()) for camera, image in obs["pixels"].items()}
    finally:
        ours.close()
        theirs.close()
    return {
        "task": task,
        "steps": len(rewards),
        "rewards": rewards,
        "successes": successes,
        "image_std": images,
        "state_size": int(obs["agent_pos"].shape[0]),
        "object_size": int(obs["environment_state"].shape[0]),
        "robosuite": robosuite.__version__,
    }


if __name__ == "__main__":
    print(json.dumps([check_fidelity(task) for task in sys.argv[1:]]))
