"""robomimic's tasks through `lerobot-eval` against robosuite's own loop, batch 1 and 2 (Lift).

For each case and batch size N, each side a fresh process (`raw_loop_ratio.py`):
  (a) raw: N forked processes, each `robosuite.make(env_name, **RobomimicEnv(...).make_kwargs())`,
      the controller, cameras and settings ours builds, seeding NumPy and resetting as ours
      does, stepping its share of the episodes with uniform random actions in [-1, 1]:
      robosuite alone, no harness, no policy;
  (b) ours: `lerobot-eval --policy.type=random --env.type=robomimic` on the same episodes and
      seeds, batch N (N=1 in-process; N=2 with async workers), no videos, over eval_s.
Both include building the scenes (robosuite rebuilds its model at every reset, as robomimic
runs it), not importing robosuite. Cases: `state` (--env.obs_type=state, nothing rendered)
and `camera` (robomimic's two cameras, agentview and the wrist, at `--image-size`, rendered
every step; Mesa's llvmpipe where there is no GPU). Goals: ours / raw >= 0.9 at batch 1,
>= 0.8 at batch 2.

    python benchmarks/robomimic_speed.py --cases state,camera --batches 1,2
"""

from __future__ import annotations

import sys

import numpy as np
import raw_loop_ratio  # benchmarks/, next to this script


def import_robosuite() -> None:
    from lerobot.envs.robosuite_support import import_robosuite as load

    load()


def raw_episodes(settings: dict, seeds: list[int]) -> int:
    """robosuite's own loop, as robomimic's rollouts run it (no early end: random actions
    never succeed in a few steps)."""
    from lerobot.envs.robomimic import RobomimicEnvConfig
    from lerobot.envs.robomimic.env import RobomimicEnv
    from lerobot.envs.robomimic.tasks import TASKS
    from lerobot.envs.robosuite_support import import_robosuite as load

    cfg = RobomimicEnvConfig(**settings)
    task = cfg.task_names[0]
    kwargs = RobomimicEnv(**cfg.env_kwargs(task)).make_kwargs()
    env = load().make(TASKS[task].env_name, **kwargs)
    actions = np.random.default_rng(seeds[0] if seeds else 0)
    steps = 0
    for seed in seeds:
        np.random.seed(seed)
        env.reset()
        for _ in range(settings["episode_length"]):
            env.step(actions.uniform(-1.0, 1.0, TASKS[task].action))
            steps += 1
    env.close()
    return steps


BENCHMARK = raw_loop_ratio.Benchmark(
    env_type="robomimic",
    task="lift",
    cases=("state", "camera"),
    episodes="state=40,camera=8",
    episode_length=50,
    image_size=84,
    fixed_settings={},
    import_simulator=import_robosuite,
    raw_episodes=raw_episodes,
)

if __name__ == "__main__":
    sys.exit(raw_loop_ratio.main(BENCHMARK, __doc__))
