"""The measured auto batch size against the core-count rule (issue 29: "measure it, do not guess").

For each case this runs, each in a fresh process and with its own empty LEROBOT_CACHE_DIR:
  (a) `lerobot-eval --eval.measure_batch_size=true` on the case's workload, which measures
      env-steps/s at the candidate batch sizes and runs the episodes at the fastest;
  (b) the same episodes with `--eval.batch_size=0` and nothing measured: the core-count rule
      (`auto_batch_size`);
and prints the rates the measurement saw ("8/2": batch 8 in 2 row groups, "8/ind": with rows
advancing independently), the size each side ran at and each run's env-steps/s
over eval_info.json's eval_s (which leaves out the measurement itself: it is paid once per
workload and machine). Cases as in harness_ceiling.py: `random-state`, `act-pixels` (a random
ACT in LeRobot's format, chunk 10, one image + 4-d state), `act-state`.

    python benchmarks/measure_batch.py --cases random-state --episodes 32 --episode-length 200
    python benchmarks/measure_batch.py --device cuda --image-size 480 --cases act-pixels,random-state  # GPU box
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import harness_ceiling  # benchmarks/, next to this script
import throughput_act

from lerobot.evaluation.run.batching.layout import auto_batch_size

CASES = ("random-state", "act-pixels", "act-state")


def run_eval(args: argparse.Namespace, case: str, checkpoints: Path, out: Path, measure: bool) -> dict:
    """harness_ceiling's lerobot-eval run of `case` at the auto batch size and row groups (0),
    measured first or not; with the batch size and row groups it ran at."""
    args.eval_flag = [f"--eval.measure_batch_size={str(measure).lower()}"]
    result = harness_ceiling.run_ours(args, case, 0, checkpoints, out, row_groups=0)
    config = json.loads((out / "run_config.json").read_text())
    return {
        **result,
        "batch_size": config["eval"]["batch_size"] or auto_batch_size(args.episodes),
        "row_groups": config["eval"]["row_groups"] or 1,
        "independent_rows": bool(config["eval"]["independent_rows"]),
    }


def measured_rates(cache_dir: Path) -> dict[str, float]:
    """{"8": env-steps/s, "8/2" (batch 8 in 2 row groups), "8/ind" (independent rows): ...}, in
    the order measured."""
    [entry] = json.loads((cache_dir / "eval_batch_sizes.json").read_text())
    return {
        arrangement(r["batch_size"], r["row_groups"], r["independent_rows"]): r["env_steps_per_s"]
        for r in entry["measured"]
    }


def arrangement(batch_size: int, row_groups: int, independent_rows: bool) -> str:
    if independent_rows:
        return f"{batch_size}/ind"
    return f"{batch_size}" + (f"/{row_groups}" if row_groups > 1 else "")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default="random-state")
    parser.add_argument("--task", default="push-v3")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--episode-length", type=int, default=200)
    parser.add_argument("--image-size", type=int, default=64, help="camera height and width")
    parser.add_argument("--n-action-steps", type=int, default=10, help="ACT's chunk and n_action_steps")
    parser.add_argument("--device", default="cpu", help="where the policy runs (cuda on a GPU box)")
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)}; choose from {', '.join(CASES)}")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed environment runs
    print(f"machine: {os.cpu_count()} cores, device {args.device}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            checkpoints = Path(tmp) / f"{case}-act"  # harness_ceiling.run_ours's layout
            if case.startswith("act"):
                throughput_act.build_checkpoint(
                    checkpoints / ("state" if case == "act-state" else "pixels"),
                    args.n_action_steps,
                    args.n_action_steps,
                    small=True,
                    image_size=args.image_size,
                    state_dim=harness_ceiling.FULL_STATE_DIM if case == "act-state" else 0,
                )
            sides = {}
            for side, measure in (("measured", True), ("rule", False)):
                os.environ["LEROBOT_CACHE_DIR"] = str(Path(tmp) / f"{case}-{side}-cache")
                sides[side] = run_eval(args, case, checkpoints, Path(tmp) / f"{case}-{side}", measure)
            rates = measured_rates(Path(tmp) / f"{case}-measured-cache")
            row = {
                "case": case,
                "measured_env_steps_per_s": rates,
                **{f"{side}_batch": r["batch_size"] for side, r in sides.items()},
                "measured_row_groups": sides["measured"]["row_groups"],
                "measured_independent_rows": sides["measured"]["independent_rows"],
                **{f"{side}_env_steps_per_s": round(harness_ceiling.rate(r), 1) for side, r in sides.items()},
            }
            rows.append(row)
            shown = ", ".join(f"{batch}: {rate:,.0f}" for batch, rate in rates.items())
            ran = arrangement(
                row["measured_batch"], row["measured_row_groups"], row["measured_independent_rows"]
            )
            print(
                f"{case}: measured {{{shown}}} -> {ran} ran "
                f"{row['measured_env_steps_per_s']:,.0f} env-steps/s; the rule's batch "
                f"{row['rule_batch']} ran {row['rule_env_steps_per_s']:,.0f} "
                f"(x{row['measured_env_steps_per_s'] / row['rule_env_steps_per_s']:.2f})",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
