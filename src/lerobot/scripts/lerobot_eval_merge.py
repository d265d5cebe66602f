"""`lerobot-eval-merge`: join sharded `lerobot-eval` runs into one eval_info.json.

lerobot-eval-merge outputs/shard0 outputs/shard1 --output_dir=outputs/merged
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import lerobot.envs  # noqa: F401  (registers --env.type values, needed to read run configs)
from lerobot.configs.parser import USAGE_EXIT_CODE
from lerobot.evaluation.store.merge import merge_runs
from lerobot.utils.errors import EXIT_INCOMPLETE, ConfigError, ResultsWriteError
from lerobot.utils.logging_utils import init_logging

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    init_logging()
    args = argument_parser().parse_args(argv)
    try:
        run = merge_runs(args.run_dirs, args.output_dir, overwrite=args.overwrite)
    except (ConfigError, ResultsWriteError) as exc:
        sys.stderr.write(f"lerobot-eval-merge: {exc}\n")
        return USAGE_EXIT_CODE
    missing = run.missing_episodes
    logger.info(
        "merged %d episodes: %.1f%% success%s",
        run.overall.n_episodes,
        run.overall.pc_success or 0.0,
        f"; {len(missing)} episodes missing (see missing_episodes)" if missing else "",
    )
    if missing:
        return 1
    return EXIT_INCOMPLETE if run.n_episodes_failed else 0


def argument_parser() -> argparse.ArgumentParser:
    """The command line of `lerobot-eval-merge` (tests parse documented commands with it)."""
    parser = argparse.ArgumentParser(prog="lerobot-eval-merge", description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, help="output directories of the shards")
    parser.add_argument("--output_dir", type=Path, required=True, help="where the merged results go")
    parser.add_argument(
        "--overwrite",
        type=_boolean,
        default=False,
        metavar="{true,false}",
        help="replace the results an existing --output_dir holds (default: refuse)",
    )
    return parser


def _boolean(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"{value!r}: true or false")
    return value.lower() == "true"


if __name__ == "__main__":
    sys.exit(main())
