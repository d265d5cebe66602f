"""How often the scripted ManiSkill expert succeeds: seeds 0..N-1 of each scripted task.

Each episode runs in its own env (physx_cpu, obs_mode state_dict, the expert's control mode,
ManiSkill's registered step limit) and ends at the first step that reports success; the table
gives the successes and the mean episode length (failed episodes count their full length).

    python benchmarks/maniskill_expert_rates.py --episodes 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from lerobot.envs.maniskill.observation import flat_vector
from lerobot.policies.maniskill_expert.configuration_maniskill_expert import ManiskillExpertConfig
from lerobot.policies.maniskill_expert.modeling_maniskill_expert import ManiskillExpertPolicy
from lerobot.policies.maniskill_expert.tasks import EXPERT_CONTROL_MODES


def run_episode(env, policy: ManiskillExpertPolicy, task: str, seed: int, max_steps: int) -> tuple[bool, int]:
    """(success, steps) of one episode from `seed`."""
    obs, _ = env.reset(seed=seed)
    policy.reset()
    for step in range(1, max_steps + 1):
        batch = {
            "observation.state": torch.from_numpy(flat_vector(obs["agent"]))[None],
            "observation.environment_state": torch.from_numpy(flat_vector(obs["extra"]))[None],
            "env_task": [task],
        }
        obs, _, terminated, truncated, info = env.step(policy.select_action(batch)[0].numpy())
        if bool(info["success"][0]):
            return True, step
        if bool(terminated[0]) or bool(truncated[0]):
            break
    return False, step


def measure(task: str, episodes: int, max_steps: int | None) -> tuple[int, float, float]:
    """(successes, mean steps, seconds) over seeds 0..episodes-1."""
    import gymnasium as gym
    import mani_skill.envs  # noqa: F401  (registers the tasks)
    from mani_skill.utils.registration import REGISTERED_ENVS

    limit = max_steps or REGISTERED_ENVS[task].max_episode_steps
    env = gym.make(
        task,
        obs_mode="state_dict",
        sim_backend="physx_cpu",
        render_backend="cpu",
        control_mode=EXPERT_CONTROL_MODES[task],
        max_episode_steps=limit,
    )
    policy = ManiskillExpertPolicy(ManiskillExpertConfig())
    start = time.perf_counter()
    try:
        results = [run_episode(env, policy, task, seed, limit) for seed in range(episodes)]
    finally:
        env.close()
    return sum(ok for ok, _ in results), float(np.mean([n for _, n in results])), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--tasks", nargs="*", default=list(EXPERT_CONTROL_MODES))
    parser.add_argument("--max-steps", type=int, default=None, help="default: ManiSkill's registered limit")
    args = parser.parse_args()
    print(f"{'task':<20} {'control mode':<28} {'successes':>10} {'mean steps':>11} {'seconds':>8}")
    for task in args.tasks:
        successes, mean_steps, seconds = measure(task, args.episodes, args.max_steps)
        print(
            f"{task:<20} {EXPERT_CONTROL_MODES[task]:<28} {successes:>4}/{args.episodes:<5} "
            f"{mean_steps:>11.1f} {seconds:>8.1f}"
        )


if __name__ == "__main__":
    main()
