"""ManiSkill3 through `lerobot-eval` against ManiSkill's own loop, batch 1 and 2 (PickCube-v1).

For each case and batch size N, each side a fresh process (as `harness_ceiling.py` does for
Meta-World, whose helpers this reuses):
  (a) raw: N forked processes, each `gym.make(task, **ManiskillEnv(...).make_kwargs())`, the
      scene, controller, cameras and step limit ours builds, stepping its share of the episodes
      with actions drawn from the action space: ManiSkill alone, no harness, no policy;
  (b) ours: `lerobot-eval --policy.type=random --env.type=maniskill` on the same episodes and
      seeds, batch N as lerobot-eval builds it (N=1 in-process; N=2 with async workers), no
      videos, over eval_info.json's eval_s.
Both include building the scenes, not importing ManiSkill (~10 s on a 2-core VM): the raw
clock starts once every process has imported it, as eval_s starts after lerobot-eval's imports
(a batch-2 worker's own import, where it overlaps nothing, is in ours). Cases: `state` (--env.obs_type=state,
nothing rendered) and `camera` (the task's base_camera at `--image-size`, rendered every step
by lavapipe where there is no GPU). Goals: ours / raw >= 0.9 at batch 1, >= 0.8 at batch 2.

    python benchmarks/maniskill_speed.py --cases state,camera --batches 1,2
"""

from __future__ import annotations

import sys

import raw_loop_ratio  # benchmarks/, next to this script


def import_maniskill() -> None:
    import mani_skill.envs  # noqa: F401  (registers the tasks)


def raw_episodes(settings: dict, seeds: list[int]) -> int:
    """ManiSkill's own loop: `gym.make(task, **ManiskillEnv(...).make_kwargs())`, random actions."""
    import gymnasium as gym

    from lerobot.envs.maniskill import ManiskillEnvConfig
    from lerobot.envs.maniskill.env import ManiskillEnv

    cfg = ManiskillEnvConfig(**settings)
    kwargs = ManiskillEnv(**cfg.env_kwargs(settings["task"])).make_kwargs()
    env = gym.make(settings["task"], **kwargs)
    env.action_space.seed(seeds[0] if seeds else 0)
    steps = 0
    for seed in seeds:
        env.reset(seed=seed)
        for _ in range(settings["episode_length"]):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if bool(terminated) or bool(truncated):
                break
    env.close()
    return steps


BENCHMARK = raw_loop_ratio.Benchmark(
    env_type="maniskill",
    task="PickCube-v1",
    cases=("state", "camera"),
    episodes="state=200,camera=24",
    episode_length=50,
    image_size=128,
    fixed_settings={"sim_backend": "physx_cpu"},
    import_simulator=import_maniskill,
    raw_episodes=raw_episodes,
)

if __name__ == "__main__":
    sys.exit(raw_loop_ratio.main(BENCHMARK, __doc__))
