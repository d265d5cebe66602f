"""`lerobot-eval`: evaluate a policy on a simulation benchmark.

    lerobot-eval --policy.type=metaworld_expert --env.type=metaworld --env.task=push-v3 \\
        --eval.n_episodes=10

Writes eval_info.json (per episode, task, group and overall, with 95% intervals and provenance),
report.html, summary.md and mp4 videos to --output_dir. `--log_level=DEBUG` for more detail.
`eval_policy` and `eval_policy_all` are re-exported here for code written against LeRobot.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import USAGE_EXIT_CODE
from lerobot.evaluation.evaluate import evaluate
from lerobot.evaluation.lerobot_compat import eval_policy, eval_policy_all
from lerobot.scripts.cli import start_cli
from lerobot.utils.errors import EXIT_INCOMPLETE, ConfigError, ResultsWriteError
from lerobot.utils.signals import Interrupted, interrupts_as_exceptions

__all__ = ["eval_policy", "eval_policy_all", "main"]

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    cfg = start_cli(EvalPipelineConfig, argv, prog="lerobot-eval")
    if cfg is None:
        return USAGE_EXIT_CODE
    try:
        with interrupts_as_exceptions():
            run = evaluate(cfg)
    except (ConfigError, ResultsWriteError) as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    except Interrupted as exc:
        logger.error("stopped by %s; finished episodes are in %s", exc.signal_name, cfg.output_dir)
        return exc.exit_code
    if run.overall.n_episodes:
        logger.info(
            "overall success %.1f%% over %d episodes in %.1fs; results in %s",
            100 * run.overall.success_rate,
            run.overall.n_episodes,
            run.overall.eval_s,
            cfg.output_dir,
        )
    else:
        logger.warning(
            "no episodes ran to their end (check --eval.shard and --eval.n_episodes); results in %s",
            cfg.output_dir,
        )
    if run.n_episodes_failed:
        logger.error(
            "%d episodes failed for good because of the harness, not the policy; they are left out "
            "of the rates: re-run them with the same command plus --eval.resume=true",
            run.n_episodes_failed,
        )
        return EXIT_INCOMPLETE
    return 0


if __name__ == "__main__":
    sys.exit(main())
