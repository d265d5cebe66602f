"""`lerobot-train`: train ACT, Diffusion Policy or SmolVLA on a recorded dataset, evaluating as it goes.

    lerobot-train --policy.type=act --dataset.root=data/reach_expert \\
        --env.type=metaworld --env.task=reach-v3 --steps=2000 --batch_size=16 \\
        --eval_freq=500 --save_freq=500 --eval.n_episodes=10 --output_dir=outputs/train/reach_act

Checkpoints (<output_dir>/checkpoints/<step>/pretrained_model) load with
`lerobot-eval --policy.path=...`; in-loop results land in <output_dir>/eval/step_<N>/.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.parser import USAGE_EXIT_CODE
from lerobot.configs.train import TrainPipelineConfig
from lerobot.scripts.cli import prepare_simulators, start_cli
from lerobot.utils.errors import EXIT_INCOMPLETE, ConfigError, ResultsWriteError
from lerobot.utils.io import make_output_dir
from lerobot.utils.signals import Interrupted, interrupts_as_exceptions

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    processes = os.environ.get("WORLD_SIZE", "1")
    if processes != "1":
        # `accelerate launch --num_processes=1` (LeRobot's CI) only starts this script; more
        # processes would each train the whole run into the same output directory.
        sys.stderr.write(
            f"WORLD_SIZE={processes}: lerobot-train trains in one process; launch it with "
            "--num_processes=1 (or without accelerate/torchrun)\n"
        )
        return USAGE_EXIT_CODE
    cfg = start_cli(TrainPipelineConfig, argv, prog="lerobot-train", description=__doc__)
    if isinstance(cfg, int):
        return cfg
    try:
        make_output_dir(cfg.output_dir, "--output_dir")  # before minutes of training, not at the first save
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    # Imported once the config is known to be good: they load torch and the dataset readers.
    prepare_simulators(cfg)
    from lerobot.datasets.reader import DatasetError
    from lerobot.training.train import train

    try:
        with interrupts_as_exceptions():
            result = train(cfg)
    except (ConfigError, DatasetError, ResultsWriteError) as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    except Interrupted as stop:  # the loop saved its last whole step first
        sys.stderr.write(
            f"lerobot-train: stopped by {stop.signal_name}; --resume=true with --output_dir={cfg.output_dir} continues\n"
        )
        return stop.exit_code
    logger.info(
        "done at step %d (loss %.4f); outputs in %s",
        result.last_step,
        result.last_loss or 0.0,
        cfg.output_dir,
    )
    if result.incomplete_evals:
        sys.stderr.write(
            f"in-training evaluations at steps {result.incomplete_evals} are incomplete: episodes failed "
            f"for the harness (see {cfg.output_dir}/eval/step_<N>/episodes.jsonl)\n"
        )
        return EXIT_INCOMPLETE
    return 0


if __name__ == "__main__":
    sys.exit(main())
