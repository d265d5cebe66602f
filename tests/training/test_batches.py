"""Training windows: offsets, clamping at episode ends and the padding mask."""

import numpy as np
import torch

from lerobot.training.batches import WindowSampler, compute_stats, dataset_features

ACTION_DIM = 4


def sampler(frames, obs_offsets, action_offsets) -> WindowSampler:
    keys = ["observation.state", "observation.image"]
    return WindowSampler(frames, keys, obs_offsets, action_offsets, torch.Generator().manual_seed(0))


def first_action_values(batch) -> list[list[int]]:
    """Row index of each action in the window (the fake actions are 4 * row + column)."""
    return (batch["action"][..., 0] / ACTION_DIM).int().tolist()


def test_action_chunks_stop_at_the_episode_end_and_are_marked_padded(frames):
    batch = sampler(frames, [0], range(4)).gather(np.array([4, 6]), torch.device("cpu"))

    # Episode 0 has rows 0..5: from row 4 the chunk repeats row 5; row 6 starts episode 1.
    assert first_action_values(batch) == [[4, 5, 5, 5], [6, 7, 8, 9]]
    assert batch["action_is_pad"].tolist() == [[False, False, True, True], [False] * 4]
    assert batch["observation.image"].shape == (2, 3, 64, 64)
    assert batch["observation.state"].shape == (2, 4)


def test_observation_history_repeats_the_first_frame(frames):
    batch = sampler(frames, [-1, 0], range(-1, 3)).gather(np.array([6]), torch.device("cpu"))

    np.testing.assert_array_equal(batch["observation.state"][0, 0], batch["observation.state"][0, 1])
    assert batch["observation.image"].shape == (1, 2, 3, 64, 64)
    assert batch["action_is_pad"].tolist() == [[True, False, False, False]]


def test_features_and_statistics_describe_the_dataset(frames):
    inputs, outputs = dataset_features(frames)
    stats = compute_stats(frames)

    assert inputs["observation.image"].shape == (3, 64, 64)
    assert outputs["action"].shape == (4,)
    assert stats["observation.image"]["mean"].shape == (3, 1, 1)
    torch.testing.assert_close(stats["action"]["max"], torch.tensor([36.0, 37.0, 38.0, 39.0]))
