"""Groups of envs taking turns (`--eval.row_groups`), or rows advancing independently
(`--eval.independent_rows`, the grouping `ready`): does the policy's time hide behind the
simulation's? (issue 29)

Three cases, each run a fresh process, groupings alternating, the best of `--repeats` kept:

(a) `sleepy`: a policy standing in for a model on a GPU. Each call holds the GIL-free wait of
    `--policy-ms` (as CUDA inference releases the GIL) and returns random actions; Meta-World
    push-v3 with state observations, `--batch` envs in worker processes, run through
    `run_episodes` as lerobot-eval runs it. In lockstep a step costs policy + simulation; in
    groups, the policy computes one group's actions while the others step.
(a') `expert`: the same, with Meta-World's scripted expert waiting `--policy-ms` per call: it
    succeeds after a different number of steps in every episode, so episodes end and reset
    at different times, where in lockstep every reset holds up the whole batch.
(b) `served`: the tests' ACT (LeRobot 0.6.1's save; 96x96 image + 4-d state) served by
    `lerobot-serve-policy` in its own process, on this machine's CPU, and `lerobot-eval
    --policy.type=websocket` against it: the server computes one group's actions while the
    other group's envs step. The server hands each row the rest of its chunk with its action;
    `served-per-step` asks for one action per request instead (`--policy.replan_steps=1`, as
    every client did before), one request and one render per step.

    python benchmarks/row_groups.py --groups 1,2,4 --batch 4
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import harness_ceiling
import throughput_act

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/: the ACT checkpoint and the server starter

SLEEPY_CHILD = """
import json, sys, time
from lerobot.utils.import_order import import_before_torch
import_before_torch(("mujoco",))
import numpy as np
from lerobot.envs.factory import make_env_config, make_task_env
from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.policies.random.modeling_random import RandomPolicy

args = json.loads(sys.argv[1])

from lerobot.policies.metaworld_expert.configuration_metaworld_expert import MetaworldExpertConfig
from lerobot.policies.metaworld_expert.modeling_metaworld_expert import MetaworldExpertPolicy

class SleepyPolicy(RandomPolicy):
    name = "sleepy"

    def select_action(self, batch):
        time.sleep(args["policy_ms"] / 1000)  # the GIL is free meanwhile, as during CUDA inference
        return super().select_action(batch)

class SleepyExpert(MetaworldExpertPolicy):
    def select_action(self, batch):
        time.sleep(args["policy_ms"] / 1000)
        return super().select_action(batch)

cfg = make_env_config("metaworld", task="push-v3", obs_type="state", episode_length=args["length"])
[task] = cfg.tasks()
env = make_task_env(cfg, task, args["batch"], use_async_envs=True)
if args["expert"]:
    policy = SleepyExpert(MetaworldExpertConfig(device="cpu"))
else:
    policy = SleepyPolicy(RandomConfig(device="cpu"), -np.ones(4), np.ones(4))
ready = args["groups"] == "ready"
settings = RolloutSettings(start_seed=1000, row_groups=1 if ready else args["groups"], independent_rows=ready)
run_episodes(env, policy, range(args["batch"]), settings)  # start the workers, build the envs
started = time.perf_counter()
results = run_episodes(env, policy, range(args["episodes"]), settings)
seconds = time.perf_counter() - started
env.close()
print(json.dumps({"env_steps": sum(r.n_steps for r in results), "seconds": seconds}))
"""


def run_sleepy(args: argparse.Namespace, groups: int | str, expert: bool = False) -> dict:
    settings = {
        "expert": expert,
        "policy_ms": args.policy_ms,
        "batch": args.batch,
        "groups": groups,
        "episodes": args.episodes,
        "length": args.episode_length,
    }
    done = subprocess.run(
        [sys.executable, "-c", SLEEPY_CHILD, json.dumps(settings)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if done.returncode != 0:
        raise RuntimeError(f"sleepy run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def served_act(tmp: Path):
    """lerobot-serve-policy with the tests' ACT on this machine's CPU; yields its port."""
    from tests.policies.checkpoints import materialize
    from tests.remote import free_port, serving_process

    port = free_port()
    with serving_process(materialize("act", tmp / "act"), port):
        yield port


def run_served(args: argparse.Namespace, port: int, groups: int | str, out: Path, per_step: bool) -> dict:
    flags = [
        *(["--policy.replan_steps=1"] if per_step else []),
        "--policy.type=websocket",
        f"--policy.port={port}",
        "--env.type=metaworld",
        "--env.task=push-v3",
        "--env.observation_height=96",
        "--env.observation_width=96",
        f"--env.episode_length={args.episode_length}",
        f"--eval.n_episodes={args.episodes}",
        f"--eval.batch_size={args.batch}",
        *harness_ceiling.grouping_flags(groups),
        "--eval.max_episodes_rendered=0",
        f"--output_dir={out}",
    ]
    result = throughput_act.run_cli(sys.executable, "lerobot.scripts.lerobot_eval", flags, out, 0)
    return {**result, "env_steps": throughput_act.episode_steps(out)}


def rate(result: dict) -> float:
    return result["env_steps"] / result["seconds"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default="sleepy,served")
    parser.add_argument(
        "--groups",
        default="1,2",
        help="values of --eval.row_groups, comma-separated ('ready': --eval.independent_rows=true)",
    )
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--episode-length", type=int, default=200)
    parser.add_argument("--policy-ms", type=float, default=2.0, help="each call of the sleepy policy")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    groupings = harness_ceiling.parse_groupings(args.groups)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            runs: dict[int | str, list[dict]] = {g: [] for g in groupings}
            served = case.startswith("served")
            with served_act(Path(tmp)) if served else contextlib.nullcontext() as port:
                for repeat in range(args.repeats):
                    for groups in groupings:
                        if case in ("sleepy", "expert"):
                            runs[groups].append(run_sleepy(args, groups, expert=case == "expert"))
                        else:
                            out = Path(tmp) / f"{case}-g{groups}-{repeat}"
                            runs[groups].append(
                                run_served(args, port, groups, out, case == "served-per-step")
                            )
            lockstep = max(rate(r) for r in runs[groupings[0]])
            for groups, results in runs.items():
                best = max(rate(r) for r in results)
                rows.append({"case": case, "batch": args.batch, "row_groups": groups, "steps_per_s": best})
                print(
                    f"{case:>15} batch {args.batch} row_groups {groups}: {best:8.1f} env-steps/s "
                    f"({best / lockstep:.2f}x of row_groups {groupings[0]})",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
