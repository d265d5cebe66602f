"""What an ALOHA step costs: gym-aloha's own env against ours, same seed and actions, one process.

gym-aloha renders three 480x640 cameras (top, angle, front_close) at every step; ours renders
the top one only, or none with `--env.obs_type=state`. Each variant steps `--steps` times from
the same seed with the start pose as the action, after one untimed reset (which builds the
simulator and its GL context); the best of `--repeats` alternating runs is kept.

    python benchmarks/aloha_render.py --steps 40 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

from lerobot.envs.aloha.env import AlohaEnv  # noqa: E402

TASK = "AlohaTransferCube-v0"


def gym_aloha_env():
    import gym_aloha  # noqa: F401  (registers its envs)
    import gymnasium as gym

    return gym.make(f"gym_aloha/{TASK}", obs_type="pixels_agent_pos", disable_env_checker=True).unwrapped


VARIANTS = {
    "gym-aloha (3 cameras, 480x640)": gym_aloha_env,
    "ours, pixels_agent_pos (top camera, 480x640)": lambda: AlohaEnv(TASK),
    "ours, state (no camera)": lambda: AlohaEnv(TASK, obs_type="state"),
}


def seconds_per_step(env, steps: int) -> float:
    obs, _ = env.reset(seed=0)
    hold = np.asarray(obs["agent_pos"], dtype=np.float32)
    started = time.perf_counter()
    for _ in range(steps):
        env.step(hold)
    return (time.perf_counter() - started) / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    envs = {name: make() for name, make in VARIANTS.items()}
    for env in envs.values():
        env.reset(seed=0)  # untimed: builds the simulator and its GL context
    best = {name: float("inf") for name in envs}
    for _ in range(args.repeats):
        for name, env in envs.items():
            best[name] = min(best[name], seconds_per_step(env, args.steps))
    baseline = best[next(iter(best))]
    for name, seconds in best.items():
        print(
            f"{name:>46}: {1000 * seconds:7.1f} ms/step  {1 / seconds:7.1f} steps/s  x{baseline / seconds:.1f}"
        )
    for env in envs.values():
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
