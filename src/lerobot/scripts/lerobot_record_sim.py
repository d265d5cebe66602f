"""`lerobot-record-sim`: record simulator rollouts as a LeRobot dataset (format v3).

    lerobot-record-sim --env.type=metaworld --env.task=reach-v3 --policy.type=metaworld_expert \\
        --n_episodes=20 --only_successful=true --root=data/reach_expert

The dataset is what `lerobot-train --dataset.root=` reads. Each episode is in it as soon as it
ends: Ctrl-C or SIGTERM drops only the episode under way, and the same command with
--resume=true records the rest.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.parser import USAGE_EXIT_CODE
from lerobot.configs.record import RecordSimConfig
from lerobot.scripts.cli import prepare_simulators, start_cli
from lerobot.utils.errors import EXIT_INCOMPLETE, ConfigError, HarnessOutageError
from lerobot.utils.signals import Interrupted, interrupts_as_exceptions

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    cfg = start_cli(RecordSimConfig, argv, prog="lerobot-record-sim", description=__doc__)
    if isinstance(cfg, int):
        return cfg
    try:
        with interrupts_as_exceptions():
            root = check_and_record(cfg)
    except (ConfigError, ValueError) as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    except HarnessOutageError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_INCOMPLETE
    except Interrupted as stop:
        sys.stderr.write(f"lerobot-record-sim: stopped by {stop.signal_name}; {kept_summary(cfg.root)}\n")
        return stop.exit_code
    logger.info("dataset written to %s", root)
    return 0


def check_and_record(cfg: RecordSimConfig) -> Path:
    """Refuse a resume that cannot continue --root before torch or a simulator loads, then record."""
    if cfg.resume:
        from lerobot.evaluation.adapters.record_sim_resume import check_resumable  # no torch

        check_resumable(cfg)
    prepare_simulators(cfg)
    from lerobot.evaluation.adapters.record_sim import record_sim  # loads torch: only once the config is good

    return record_sim(cfg)


def kept_summary(root: Path) -> str:
    """What an interrupted recording left, read from the dataset itself."""
    from lerobot.datasets.layout import INFO_PATH
    from lerobot.datasets.reader import read_info

    if not (root / INFO_PATH).is_file():
        return f"no episode was kept, nothing is left in {root}"
    n_episodes = read_info(root)["total_episodes"]
    return f"kept {n_episodes} episodes in {root}; the same command with --resume=true continues it"


if __name__ == "__main__":
    sys.exit(main())
