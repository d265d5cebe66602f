"""Summarise a `lerobot-eval` run's eval_info.json into metrics.json (CI helper).

Standard library only: it runs on the bare CI runner, outside the benchmark image.

    python3 scripts/ci/parse_eval_metrics.py --artifacts-dir artifacts \\
        --env metaworld --task push-v3 --policy metaworld_expert

Reads <artifacts-dir>/eval_info.json in either shape: the multi-task one, whose totals are under
`overall`, or LeRobot's single-task one, whose totals are under `aggregated` (and which has no
`n_episodes`; it is counted from `per_episode`). Our files carry both blocks; `overall` wins.
Writes <artifacts-dir>/metrics.json:

    {"env": ..., "task": ..., "policy": ..., "pc_success": ..., "n_episodes": ...,
     "avg_sum_reward": ..., "eval_s": ..., "task_descriptions": {...}}

with `task_descriptions` from <artifacts-dir>/task_descriptions.json, or `{}` when that file is
missing or unreadable (as LeRobot's script writes it: CI dashboards index into it). NaN,
infinities (also as strings such as "NaN") and missing values become null. A missing or
unreadable eval_info.json is a warning, not a failure: the job still gets a metrics.json (all
metrics null) to upload, and the eval step's own exit code decides whether CI fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

EVAL_INFO_FILENAME = "eval_info.json"
TASK_DESCRIPTIONS_FILENAME = "task_descriptions.json"
METRICS_FILENAME = "metrics.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts-dir", required=True, type=Path, help="folder with eval_info.json")
    parser.add_argument("--env", help="benchmark, as in --env.type (copied into metrics.json)")
    parser.add_argument("--task", help="task spec, as in --env.task (copied into metrics.json)")
    parser.add_argument("--policy", help="policy type or checkpoint (copied into metrics.json)")
    return parser.parse_args(argv)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def read_json(path: Path, consequence: str = "metrics will be null") -> Any:
    """The parsed file, with NaN/Infinity literals read as None; None when missing or corrupt."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        warn(f"{path} not found; {consequence}")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        warn(f"cannot read {path}: {exc}; {consequence}")
        return None
    try:
        # Python's json accepts the non-standard NaN, Infinity and -Infinity by default.
        return json.loads(text, parse_constant=lambda _name: None)
    except json.JSONDecodeError as exc:
        warn(f"{path} is not valid JSON ({exc}); {consequence}")
        return None


def totals_block(info: Any) -> dict[str, Any]:
    """The run's totals: `overall` (multi-task) or `aggregated` (single-task)."""
    if not isinstance(info, dict):
        if info is not None:
            warn(f"{EVAL_INFO_FILENAME} holds a {type(info).__name__}, not an object; metrics will be null")
        return {}
    for key in ("overall", "aggregated"):
        if isinstance(info.get(key), dict):
            return info[key]
    warn(f"{EVAL_INFO_FILENAME} has neither 'overall' nor 'aggregated'; metrics will be null")
    return {}


def finite_float(value: Any) -> float | None:
    """`value` as a finite float; None for NaN, infinities, non-numbers and missing values."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # also numeric strings, e.g. "NaN" or "87.5"
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def episode_count(info: Any, totals: dict[str, Any]) -> int | None:
    """`n_episodes` from the totals, else the length of `per_episode` (LeRobot's single-task shape)."""
    count = finite_float(totals.get("n_episodes"))
    if count is not None:
        return int(count)
    episodes = info.get("per_episode") if isinstance(info, dict) else None
    return len(episodes) if isinstance(episodes, list) else None


def read_task_descriptions(artifacts_dir: Path) -> dict[str, str]:
    """The descriptions file's {key: instruction} entries; {} when it is missing or unreadable."""
    path = artifacts_dir / TASK_DESCRIPTIONS_FILENAME
    if not path.exists():
        return {}
    descriptions = read_json(path, "task_descriptions will be {}")
    if not isinstance(descriptions, dict):
        if descriptions is not None:
            warn(f"{path} is not a JSON object; task_descriptions will be {{}}")
        return {}
    return {str(key): text for key, text in descriptions.items() if isinstance(text, str)}


def build_metrics(args: argparse.Namespace) -> dict[str, Any]:
    info = read_json(args.artifacts_dir / EVAL_INFO_FILENAME)
    totals = totals_block(info)
    return {
        "env": args.env,
        "task": args.task,
        "policy": args.policy,
        "pc_success": finite_float(totals.get("pc_success")),
        "n_episodes": episode_count(info, totals),
        "avg_sum_reward": finite_float(totals.get("avg_sum_reward")),
        "eval_s": finite_float(totals.get("eval_s")),
        "task_descriptions": read_task_descriptions(args.artifacts_dir),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    metrics = build_metrics(args)
    args.artifacts_dir.mkdir(parents=True, exist_ok=True)
    path = args.artifacts_dir / METRICS_FILENAME
    path.write_text(json.dumps(metrics, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    print(
        f"{path}: pc_success={metrics['pc_success']} n_episodes={metrics['n_episodes']} "
        f"avg_sum_reward={metrics['avg_sum_reward']} eval_s={metrics['eval_s']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
