"""`lerobot-convert-robomimic`: a robomimic dataset (HDF5) as a LeRobot dataset (format v3).

    lerobot-convert-robomimic datasets/lift/ph/image_v141.hdf5 data/lift_ph_image --filter_key=train
    lerobot-train --dataset.root=data/lift_ph_image --policy.type=diffusion \\
        --env.type=robomimic --env.task=lift

The episodes hold what `--env.type=robomimic` gives a policy (state, object state, cameras,
actions, the task's instruction); see `lerobot.datasets.robomimic`. Bad input is one line on
stderr and exit code 2, before torch loads.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from lerobot.configs.parser import USAGE_EXIT_CODE, CliError, OneLineArgumentParser
from lerobot.datasets.robomimic import HDF5_ARG, OUT_DIR_ARG, convert, plan_conversion
from lerobot.utils.errors import ConfigError
from lerobot.utils.logging_utils import init_logging
from lerobot.utils.signals import Interrupted, interrupts_as_exceptions

PROG = "lerobot-convert-robomimic"
logger = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog=PROG,
        description="Convert a robomimic dataset (HDF5) into a LeRobot v3 dataset for lerobot-train.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "hdf5", type=Path, metavar=HDF5_ARG, help="robomimic's file (image.hdf5, low_dim.hdf5)"
    )
    parser.add_argument("out_dir", type=Path, metavar=OUT_DIR_ARG, help="a new directory for the dataset")
    parser.add_argument(
        "--filter_key",
        default=None,
        help="convert only the demos of this mask of the file (train, valid, 20_percent, ...; default: all)",
    )
    parser.add_argument(
        "--max_episodes", type=int, default=None, help="convert at most the first N demos (default: all)"
    )
    parser.add_argument(
        "--repo_id",
        default=None,
        help="the dataset's name, kept in meta/recording.json (default: robomimic/<task>_<file name>)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    init_logging()
    try:
        args = build_parser().parse_args(argv)
        conversion = plan_conversion(
            args.hdf5, args.out_dir, args.filter_key, args.max_episodes, args.repo_id
        )
    except (CliError, ConfigError) as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    try:
        with interrupts_as_exceptions():
            root = convert(conversion)
    except Interrupted as stop:
        sys.stderr.write(
            f"{PROG}: stopped by {stop.signal_name}; {args.out_dir} holds the demos converted so far: "
            "delete it and convert again\n"
        )
        return stop.exit_code
    logger.info("dataset written to %s; train on it with lerobot-train --dataset.root=%s", root, root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
