"""ManiSkill's batched scene (`--env.batched`, one process for the whole batch) against ManiSkill's own
batched loop, on a GPU: env steps per second at batch 32, 128 and 512, with state observations
and with one 128x128 camera.

The raw loop is what ManiSkill's own examples do: one `gym.make(..., num_envs=N)` scene, a batch
of random actions per step, observations left on the device. Ours is `BatchedScene` as the
rollout drives it: every slot steps each round with its own action, its observation comes back
as NumPy in LeRobot's layout, and finished slots reset one by one with their episode's seed.
The ratio ours/raw is the cost of the harness (the per-slot copies and resets) at each size.

    python benchmarks/maniskill_batched.py                      # GPU: physx_cuda
    python benchmarks/maniskill_batched.py --smoke              # CPU here: physx_cpu, batch 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np

TASK = "PickCube-v1"


def make_config(obs: str, backend: str):
    from lerobot.envs.maniskill import ManiskillEnvConfig

    camera = {"observation_height": 128, "observation_width": 128} if obs == "camera" else {}
    return ManiskillEnvConfig(
        task=TASK,
        obs_type="pixels_agent_pos" if obs == "camera" else "state",
        sim_backend=backend,
        batched=True,
        render_size=64,
        **camera,
    )


def raw_steps_per_s(cfg, batch: int, steps: int) -> float:
    """ManiSkill's own loop: one scene, a batch of random actions per step."""
    import gymnasium as gym
    import mani_skill.envs  # noqa: F401
    import torch

    from lerobot.envs.maniskill.env import ManiskillEnv

    kwargs = {**ManiskillEnv(**cfg.env_kwargs(TASK)).make_kwargs(), "num_envs": batch}
    env = gym.make(TASK, **kwargs)
    try:
        env.reset(seed=0)
        low = torch.as_tensor(env.action_space.low, device=env.unwrapped.device)
        high = torch.as_tensor(env.action_space.high, device=env.unwrapped.device)

        def actions():
            return low + (high - low) * torch.rand(low.shape, device=low.device)

        for _ in range(5):  # warm-up: shaders, kernels
            env.step(actions())
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(steps):
            env.step(actions())
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return batch * steps / (time.perf_counter() - started)
    finally:
        env.close()


def ours_steps_per_s(cfg, batch: int, steps: int) -> float:
    """`BatchedScene` driven as the rollout drives it: all slots step each round, finished ones
    reset with their next seed."""
    from lerobot.envs.maniskill.env import BatchedScene
    from lerobot.envs.slots import SlotRound

    task = cfg.tasks()[0]
    scene = BatchedScene(cfg.env_kwargs(TASK), batch, task)
    space = scene.single_action_space
    rng = np.random.default_rng(0)
    slots = list(range(batch))
    try:
        scene.step_and_reset_at(SlotRound(reset_ids=slots, seeds=slots))
        next_seed = batch

        def one_round(k: int) -> None:
            nonlocal next_seed
            actions = [rng.uniform(space.low, space.high).astype(np.float32) for _ in slots]
            steps_done, _ = scene.step_and_reset_at(SlotRound(step_ids=slots, actions=actions))
            ended = [slot for slot, r in zip(slots, steps_done, strict=True) if r.terminated or r.truncated]
            if ended:
                seeds = list(range(next_seed, next_seed + len(ended)))
                next_seed += len(ended)
                scene.step_and_reset_at(SlotRound(reset_ids=ended, seeds=seeds))

        for k in range(5):
            one_round(k)
        started = time.perf_counter()
        for k in range(steps):
            one_round(k)
        return batch * steps / (time.perf_counter() - started)
    finally:
        scene.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--obs", nargs="+", default=["state", "camera"], choices=["state", "camera"])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--smoke", action="store_true", help="physx_cpu, batch 1, 10 steps (no GPU)")
    args = parser.parse_args()
    backend = "physx_cpu" if args.smoke else "physx_cuda"
    batches, steps = ([1], 10) if args.smoke else (args.batches, args.steps)
    print(f"{'obs':<7} {'batch':>6} {'raw steps/s':>12} {'ours steps/s':>13} {'ours/raw':>9}", flush=True)
    for obs in args.obs:
        cfg = make_config(obs, backend)
        for batch in batches:
            raw = raw_steps_per_s(cfg, batch, steps)
            ours = ours_steps_per_s(cfg, batch, steps)
            print(f"{obs:<7} {batch:>6} {raw:>12.0f} {ours:>13.0f} {ours / raw:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
