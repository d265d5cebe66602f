"""Write the instruction of every task an `--env.task` value selects, as JSON (CI helper).

Runs inside a benchmark image, where the project and that benchmark's extra are installed:

    python scripts/ci/extract_task_descriptions.py --env metaworld --task push-v3,easy \\
        --output /artifacts/task_descriptions.json

The output maps "<suite>_<task_id>" to the natural-language instruction, e.g.
{"push-v3_0": "Push the puck to a goal", "easy_0": "..."}. The ids are the `task_id`s that
`lerobot-eval` reports in eval_info.json and in its video folders, so CI can label both.
Descriptions come from the tables this package ships; no simulator starts.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

ENVS = ("aloha", "libero", "metaworld", "pusht")
USAGE_EXIT_CODE = 2


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, choices=ENVS, help="benchmark, as in --env.type")
    parser.add_argument("--task", required=True, help="task spec, as in --env.task (e.g. libero_10, easy)")
    parser.add_argument("--output", required=True, type=Path, help="JSON file to write")
    return parser.parse_args(argv)


def task_descriptions(env: str, task: str) -> dict[str, str]:
    """{"<suite>_<task_id>": instruction} for every task `--env.type=env --env.task=task` runs."""
    # The benchmark's module registers its config type; lerobot.envs may not import every one.
    importlib.import_module(f"lerobot.envs.{env}")
    from lerobot.envs.factory import make_env_config

    cfg = make_env_config(env, task=task)
    return {
        f"{group}_{task_id}": cfg.task_description(task_name)
        for group, tasks in indexed_tasks(cfg).items()
        for task_id, task_name in tasks.items()
    }


def indexed_tasks(cfg) -> dict[str, dict[int, str]]:
    """{group: {task_id: task name}}, with the ids eval_info.json reports.

    LIBERO's tasks keep their fixed ids in a subset (`--env.task_ids=[3]` reports task 3), so
    the config's own id map wins when it has one; otherwise an id is the position in the group.
    """
    id_map = getattr(cfg, "indexed_task_groups", None)
    if callable(id_map):
        return id_map()
    return {group: dict(enumerate(tasks)) for group, tasks in cfg.task_groups().items()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from lerobot.utils.errors import ConfigError

    try:
        descriptions = task_descriptions(args.env, args.task)
    except ConfigError as exc:  # an unknown task: the message names the flag and the choices
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_EXIT_CODE
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(descriptions, indent=2) + "\n")
    print(f"wrote {len(descriptions)} task descriptions to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
