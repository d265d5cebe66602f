"""Write src/lerobot/envs/maniskill/spaces.json: each offline ManiSkill task's sizes, read from
ManiSkill itself (physx_cpu, no camera rendered).

The config must know an env's spaces without building a simulator (a command line is checked
before anything loads, and a Vulkan context made before the workers fork would be theirs too),
so what ManiSkill only says once a scene is built is written down here, per control mode:
the action size and bounds (per agent for two arms) and the proprioception size (target controllers add their targets to it), and
the extra state's size and layout. tests/envs/test_maniskill.py rebuilds it and compares.

Run: PYTHONPATH=src .venv/bin/python scripts/make_maniskill_tasks.py
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import mani_skill.envs  # noqa: F401  (registers the tasks)
import numpy as np

from lerobot.envs.maniskill.observation import leaf_names
from lerobot.envs.maniskill.tasks import TASKS

OUT = Path(__file__).resolve().parents[1] / "src/lerobot/envs/maniskill/spaces.json"


def boxes(space) -> list[tuple[str, gym.spaces.Box]]:
    """The action space's boxes: one, or one per agent (in ManiSkill's agent order)."""
    if isinstance(space, gym.spaces.Dict):
        return list(space.spaces.items())
    return [("", space)]


def action_entry(space) -> dict:
    parts = boxes(space)
    low = np.concatenate([box.low.reshape(-1) for _, box in parts])
    high = np.concatenate([box.high.reshape(-1) for _, box in parts])
    entry = {"action": int(low.size), "low": low.tolist(), "high": high.tolist()}
    if len(parts) > 1:
        entry["agents"] = [[uid, int(box.low.size)] for uid, box in parts]
    return entry


def task_sizes(name: str) -> dict:
    modes = {}
    extra = None
    for mode in TASKS[name].control_modes:
        env = gym.make(
            name, obs_mode="state_dict", sim_backend="physx_cpu", render_backend="cpu", control_mode=mode
        )
        try:
            obs, _ = env.reset(seed=0)
            state = sum(n for _, n in leaf_names(obs["agent"]))
            modes[mode] = {**action_entry(env.action_space), "state": state}
            extra = leaf_names(obs["extra"])
            cameras = {c.uid: [c.height, c.width] for c in env.unwrapped._sensor_configs.values()}
            reward_modes = list(env.unwrapped.SUPPORTED_REWARD_MODES)
        finally:
            env.close()
    return {"control_modes": modes, "extra": extra, "cameras": cameras, "reward_modes": reward_modes}


def main() -> None:
    table = {name: task_sizes(name) for name in TASKS}
    lines = [f"  {json.dumps(name)}: {json.dumps(sizes)}" for name, sizes in table.items()]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
