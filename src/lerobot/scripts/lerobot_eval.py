"""`lerobot-eval`: evaluate a policy on a simulation benchmark.

    lerobot-eval --policy.type=metaworld_expert --env.type=metaworld --env.task=push-v3 \\
        --eval.n_episodes=10

Writes eval_info.json (per episode, task, group and overall, with 95% intervals and provenance),
report.html, summary.md and mp4 videos to --output_dir. `--log_level=DEBUG` for more detail.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs import parser
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import USAGE_EXIT_CODE
from lerobot.scripts.cli import prepare_simulators, start_cli
from lerobot.utils.errors import EXIT_INCOMPLETE, ConfigError, HarnessOutageError, ResultsWriteError
from lerobot.utils.not_in_this_build import refused_attribute

if TYPE_CHECKING:
    from lerobot.evaluation.adapters.lerobot_compat import eval_policy, eval_policy_all, rollout
    from lerobot.evaluation.results import RunResult

__all__ = ["eval_main", "eval_policy", "eval_policy_all", "main", "rollout"]

logger = logging.getLogger(__name__)

# For code written against LeRobot this module also offers `eval_main(cfg)` and LeRobot's
# `eval_policy`, `eval_policy_all` and `rollout` (from lerobot.evaluation.adapters.lerobot_compat). Those
# are imported on first use: importing this module, parsing and checking a command line load
# neither torch nor a simulator, so bad input is answered in a fraction of a second.
_LEROBOT_FUNCTIONS = ("eval_policy", "eval_policy_all", "rollout")


def main(argv: Sequence[str] | None = None) -> int:
    cfg = start_cli(EvalPipelineConfig, argv, prog="lerobot-eval", description=__doc__)
    if isinstance(cfg, int):
        return cfg
    from lerobot.utils.signals import Interrupted

    try:
        from lerobot.evaluation.store.output_dir import RunOutput, check_output_dir  # no torch

        check_output_dir(RunOutput.of(cfg))
        run = evaluate_with_clean_stop(cfg)
    except (ConfigError, ResultsWriteError) as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    except HarnessOutageError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_INCOMPLETE
    except Interrupted as exc:
        logger.error("stopped by %s; finished episodes are in %s", exc.signal_name, cfg.output_dir)
        return exc.exit_code
    if run.n_episodes_failed:
        logger.error(
            "%d episodes failed for good because of the harness, not the policy; they are left out "
            "of the rates: re-run them with the same command plus --eval.resume=true",
            run.n_episodes_failed,
        )
        return EXIT_INCOMPLETE
    return 0


@parser.wrap()
def eval_main(cfg: EvalPipelineConfig) -> RunResult:
    """LeRobot's entry point: evaluate `cfg` (or the command line's config) and write the results."""
    return evaluate_with_clean_stop(cfg)


def evaluate_with_clean_stop(cfg: EvalPipelineConfig) -> RunResult:
    """Evaluate, with Ctrl-C and SIGTERM turned into a clean stop; the run's result."""
    prepare_simulators(cfg)
    from lerobot.evaluation.evaluate import evaluate
    from lerobot.utils.signals import interrupts_as_exceptions

    # Signal handlers can only be set from the main thread (eval_main may be called elsewhere).
    in_main_thread = threading.current_thread() is threading.main_thread()
    with interrupts_as_exceptions() if in_main_thread else contextlib.nullcontext():
        run = evaluate(cfg)
    if run.overall.n_episodes:
        logger.info(
            "overall success %.1f%% over %d episodes in %.1fs; results in %s",
            100 * run.overall.success_rate,
            run.overall.n_episodes,
            run.overall.eval_s,
            cfg.output_dir,
        )
    elif run.overall.n_episodes_failed:
        logger.warning(
            "no episodes ran to their end: all %d failed for the harness (see failure_reason in "
            "episodes.jsonl); results in %s",
            run.overall.n_episodes_failed,
            cfg.output_dir,
        )
    else:
        logger.warning(
            "no episodes ran to their end (check --eval.shard and --eval.n_episodes); results in %s",
            cfg.output_dir,
        )
    return run


def __getattr__(name: str) -> Any:
    """`eval_policy`, `eval_policy_all` and `rollout`, imported (with torch) on first use."""
    if name in _LEROBOT_FUNCTIONS:
        from lerobot.evaluation.adapters import lerobot_compat

        return getattr(lerobot_compat, name)
    return refused_attribute(__name__, name)


if __name__ == "__main__":
    sys.exit(main())
