"""Tiny in-memory episodes and policy flags shared by the training tests."""

from pathlib import Path

import numpy as np
import pytest

from lerobot.datasets.reader import EpisodeFrames
from lerobot.datasets.recorder import DatasetRecorder

IMAGE_SIZE = 64
# The env flags under which these episodes' features exist in Meta-World.
ENV_FLAGS = (f"--env.observation_height={IMAGE_SIZE}", f"--env.observation_width={IMAGE_SIZE}")
TINY_ACT = (
    "--policy.type=act",
    "--policy.dim_model=16",
    "--policy.n_heads=2",
    "--policy.dim_feedforward=32",
    "--policy.n_encoder_layers=1",
    "--policy.n_vae_encoder_layers=1",
    "--policy.chunk_size=4",
    "--policy.n_action_steps=4",
    "--policy.latent_dim=4",
    "--policy.device=cpu",
)


def make_frames(lengths=(6, 4), seed: int = 0) -> EpisodeFrames:
    """Episodes with Meta-World's feature shapes: a camera, 4-d state, 39-d env state, 4-d actions."""
    rng = np.random.default_rng(seed)
    n = sum(lengths)
    return EpisodeFrames(
        info={"fps": 10},
        vectors={
            "observation.state": rng.normal(size=(n, 4)).astype(np.float32),
            "observation.environment_state": rng.normal(size=(n, 39)).astype(np.float32),
            "action": np.arange(n * 4, dtype=np.float32).reshape(n, 4),
        },
        images={"observation.image": rng.integers(0, 255, (n, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)},
        episode_starts=np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64),
        episode_lengths=np.asarray(lengths, dtype=np.int64),
        episode_indices=np.arange(len(lengths)),
    )


def write_dataset(root: Path, nan_at: tuple[int, int] | None = None) -> Path:
    """make_frames' episodes written as a v3 dataset at `root` (without the env state);
    `nan_at=(episode, step)` puts a NaN in that frame's state."""
    frames = make_frames()
    if nan_at is not None:
        episode, step = nan_at
        frames.vectors["observation.state"][frames.episode_starts[episode] + step, 1] = np.nan
    recorder = DatasetRecorder(root, fps=10, task="reach")
    for episode, (start, length) in enumerate(
        zip(frames.episode_starts, frames.episode_lengths, strict=True)
    ):
        for step in range(length):
            row = start + step
            observation = {
                "pixels": frames.images["observation.image"][row],
                "agent_pos": frames.vectors["observation.state"][row],
                "environment_state": frames.vectors["observation.environment_state"][row],
            }
            recorder.add_step(episode, observation, frames.vectors["action"][row], step)
        recorder.end_episode(episode, keep=True)
    return recorder.finish()


@pytest.fixture
def frames() -> EpisodeFrames:
    return make_frames()


@pytest.fixture(autouse=True)
def _single_torch_thread(one_torch_thread):
    """Every test here runs tiny models: see `one_torch_thread` in tests/conftest.py."""
