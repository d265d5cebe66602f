"""Write tests/fixtures/training/batch_order.json: the frames LeRobot 0.6.1's training draws, in order.

Run once, by hand, with LeRobot 0.6.1 in a scratch virtual environment outside this
repository (never a dependency of this project), as scripts/make_training_fixtures.py says:

    /tmp/lerobot-ref/bin/python scripts/make_batch_order_fixture.py

LeRobot's lerobot-train shuffles the dataset's frames once per epoch with its episode-aware
sampler, the order a function of (seed, epoch) only, and batches them in that order (the last
batch of an epoch short). For a few datasets (episode lengths, episodes used, frames dropped
from each episode's end, seed) this records the frame indices of the first epochs.
tests/training/test_batches.py checks that our batches take the same frames in the same order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "training" / "batch_order.json"
CASES = (
    {"lengths": [23, 17, 30], "episodes": None, "drop_n_last_frames": 0, "seed": 1000},
    {"lengths": [12, 9, 20, 15], "episodes": [0, 2, 3], "drop_n_last_frames": 7, "seed": 3},
)
EPOCHS = 3


def epochs_of(case: dict) -> list[list[int]]:
    from lerobot.datasets.sampler import EpisodeAwareSampler

    ends = np.cumsum(case["lengths"])
    starts = ends - np.asarray(case["lengths"])
    sampler = EpisodeAwareSampler(
        starts.tolist(),
        ends.tolist(),
        episode_indices_to_use=case["episodes"],
        drop_n_last_frames=case["drop_n_last_frames"],
        shuffle=True,
        seed=case["seed"],
    )
    return [list(iter(sampler)) for _ in range(EPOCHS)]


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    cases = [{**case, "epochs": epochs_of(case)} for case in CASES]
    OUT.write_text(json.dumps(cases) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
