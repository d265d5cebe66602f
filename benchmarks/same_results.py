"""Same results from two versions of the code: the proof a refactor owes.

Runs each case below with `lerobot-eval` twice, once from a reference source tree (an older
checkout, put first on PYTHONPATH) and once from this one, and compares what a user keeps:
eval_info.json (every episode, task, group and overall number) and episodes.jsonl (line by
line, in episode order). Wall times, provenance and the output folder in video paths differ
by nature and are left out; everything else must be equal.

    git worktree add /tmp/ref 37b8e3e
    .venv/bin/python benchmarks/same_results.py --ref-src /tmp/ref/src

Prints one row per case and exits 1 when any case differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SMALL_PIXELS = ["--env.observation_height=64", "--env.observation_width=64"]
STATE_IN_TWO_WORKERS = [
    "--policy.type=random",
    "--env.type=metaworld",
    "--env.task=reach-v3",
    "--env.obs_type=state",
    "--env.episode_length=25",
    "--eval.n_episodes=6",
    "--eval.batch_size=4",
    "--eval.envs_in_main_process=0",
]
"""Four envs in two worker processes: what row groups and independent rows need to group."""
CASES: dict[str, list[str]] = {
    "metaworld expert, 2 tasks, 2 async workers, videos": [
        "--policy.type=metaworld_expert",
        "--env.type=metaworld",
        "--env.task=push-v3,reach-v3",
        *SMALL_PIXELS,
        "--eval.n_episodes=4",
        "--eval.batch_size=2",
        "--eval.max_episodes_rendered=1",
    ],
    "metaworld random, state, 2 tasks at a time": [
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=push-v3,reach-v3",
        "--env.obs_type=state",
        "--env.episode_length=30",
        "--env.max_parallel_tasks=2",
        "--eval.n_episodes=3",
        "--eval.batch_size=2",
        "--eval.max_episodes_rendered=0",
    ],
    "metaworld random, shard 1/2": [
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=window-open-v3",
        "--env.obs_type=state",
        "--env.episode_length=20",
        "--eval.n_episodes=5",
        "--eval.shard=1/2",
        "--eval.max_episodes_rendered=0",
    ],
    "metaworld random, state, 2 row groups taking turns": [
        *STATE_IN_TWO_WORKERS,
        "--eval.row_groups=2",
        "--eval.max_episodes_rendered=0",
    ],
    "metaworld random, state, rows advancing independently": [
        *STATE_IN_TWO_WORKERS,
        "--eval.independent_rows=true",
        "--eval.max_episodes_rendered=0",
    ],
    "pusht random, in-process": [
        "--policy.type=random",
        "--env.type=pusht",
        "--env.episode_length=40",
        "--eval.n_episodes=3",
        "--eval.batch_size=1",
        "--eval.max_episodes_rendered=1",
    ],
    "aloha scripted, transfer cube, state": [
        "--policy.type=aloha_scripted",
        "--env.type=aloha",
        "--env.task=AlohaTransferCube-v0",
        "--env.obs_type=state",
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        "--eval.max_episodes_rendered=0",
    ],
    "libero random, one spatial task": [
        "--policy.type=random",
        "--env.type=libero",
        "--env.task=libero_spatial",
        "--env.task_ids=[0]",
        "--env.episode_length=5",
        *SMALL_PIXELS,
        "--eval.n_episodes=2",
        "--eval.batch_size=1",
        "--eval.max_episodes_rendered=0",
    ],
    "libero_pro random, a perturbed suite beside its base": [
        "--policy.type=random",
        "--env.type=libero_pro",
        "--env.task=libero_spatial_swap,libero_spatial",
        "--env.task_ids=[0]",
        "--env.episode_length=5",
        *SMALL_PIXELS,
        "--eval.n_episodes=2",
        "--eval.batch_size=1",
        "--eval.max_episodes_rendered=0",
    ],
}
VOLATILE = {"wall_s", "eval_s", "eval_ep_s", "provenance"}
"""Keys whose values are times or the run's own record, different in every run."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref-src", type=Path, required=True, help="the reference checkout's src/ folder")
    parser.add_argument("--new-src", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--cases", nargs="*", default=list(CASES), help="case names (default: all)")
    args = parser.parse_args()
    print("| case | episodes | reference s | this s | same |")
    print("| --- | --- | --- | --- | --- |")
    all_same = True
    with tempfile.TemporaryDirectory() as tmp:
        for index, name in enumerate(args.cases):
            ref_dir, new_dir = Path(tmp) / f"ref_{index}", Path(tmp) / f"new_{index}"
            ref_s = run_eval(args.ref_src, CASES[name], ref_dir)
            new_s = run_eval(args.new_src, CASES[name], new_dir)
            differences = compare(ref_dir, new_dir)
            n_episodes = len(read_journal(new_dir))
            all_same &= not differences
            print(
                f"| {name} | {n_episodes} | {ref_s:.1f} | {new_s:.1f} | {'yes' if not differences else 'NO'} |"
            )
            for line in differences[:10]:
                print(f"    {line}")
    return 0 if all_same else 1


def run_eval(src: Path, flags: list[str], output_dir: Path) -> float:
    """Run lerobot-eval from `src` (first on PYTHONPATH, for its workers too); its wall time."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src.resolve()), os.environ.get("PYTHONPATH", "")]),
    }
    command = [
        sys.executable,
        "-c",
        "import sys; from lerobot.scripts.lerobot_eval import main; sys.exit(main())",
    ]
    started = time.perf_counter()
    proc = subprocess.run(
        [*command, *flags, f"--output_dir={output_dir}"], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"lerobot-eval from {src} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return time.perf_counter() - started


def compare(ref_dir: Path, new_dir: Path) -> list[str]:
    """What differs between the two runs' eval_info.json and episodes.jsonl, one line each."""
    ref_info = comparable(json.loads((ref_dir / "eval_info.json").read_text()))
    new_info = comparable(json.loads((new_dir / "eval_info.json").read_text()))
    differences = list(diff(ref_info, new_info, "eval_info.json"))
    ref_lines, new_lines = read_journal(ref_dir), read_journal(new_dir)
    differences.extend(diff(ref_lines, new_lines, "episodes.jsonl"))
    return differences


def read_journal(run_dir: Path) -> list[Any]:
    lines = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    lines.sort(key=lambda r: (r["task_group"], r["task_id"], r["episode_index"]))
    return [comparable(line) for line in lines]


def comparable(value: Any) -> Any:
    """The value without times and provenance; video paths reduced to their file names."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, str) and value.endswith(".mp4"):
        return "/".join(Path(value).parts[-2:])
    return value


def diff(ref: Any, new: Any, where: str):
    if isinstance(ref, dict) and isinstance(new, dict):
        for key in sorted(set(ref) | set(new)):
            yield from diff(ref.get(key, "<missing>"), new.get(key, "<missing>"), f"{where}.{key}")
    elif isinstance(ref, list) and isinstance(new, list) and len(ref) == len(new):
        for i, (a, b) in enumerate(zip(ref, new, strict=True)):
            yield from diff(a, b, f"{where}[{i}]")
    elif ref != new:
        yield f"{where}: reference {ref!r}, this {new!r}"


if __name__ == "__main__":
    sys.exit(main())
