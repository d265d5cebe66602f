"""`lerobot-record-sim`: record simulator rollouts as a LeRobot dataset (format v3).

    lerobot-record-sim --env.type=metaworld --env.task=reach-v3 --policy.type=metaworld_expert \\
        --n_episodes=20 --only_successful=true --root=data/reach_expert

The dataset is what `lerobot-train --dataset.root=` reads.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.parser import USAGE_EXIT_CODE
from lerobot.configs.record import RecordSimConfig
from lerobot.scripts.cli import prepare_simulators, start_cli
from lerobot.utils.errors import EXIT_INCOMPLETE, ConfigError, HarnessOutageError

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    cfg = start_cli(RecordSimConfig, argv, prog="lerobot-record-sim", description=__doc__)
    if isinstance(cfg, int):
        return cfg
    prepare_simulators(cfg)
    from lerobot.evaluation.adapters.record_sim import record_sim  # loads torch: only once the config is good

    try:
        root = record_sim(cfg)
    except (ConfigError, ValueError) as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    except HarnessOutageError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_INCOMPLETE
    logger.info("dataset written to %s", root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
