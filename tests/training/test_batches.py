"""Training batches: windows (offsets, clamping at episode ends, the padding mask), LeRobot's
data order, and worker processes that read the same batches."""

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.policies import PreTrainedConfig
from lerobot.datasets.reader import EpisodeFrames
from lerobot.training.batches import (
    EpochOrder,
    LoaderSettings,
    StepBatches,
    Windows,
    compute_stats,
    dataset_features,
    make_loader,
    window_offsets,
)
from tests.training.conftest import make_frames

ACTION_DIM = 4
BATCH_ORDER = Path(__file__).parents[1] / "fixtures" / "training" / "batch_order.json"
CPU = torch.device("cpu")


def sampler(frames, obs_offsets, action_offsets) -> Windows:
    return Windows(frames, ["observation.state", "observation.image"], obs_offsets, action_offsets)


def first_action_values(batch) -> list[list[int]]:
    """Row index of each action in the window (the fake actions are 4 * row + column)."""
    return (batch["action"][..., 0] / ACTION_DIM).int().tolist()


def test_action_chunks_stop_at_the_episode_end_and_are_marked_padded(frames):
    batch = sampler(frames, [0], range(4)).batch(np.array([4, 6]), CPU)

    # Episode 0 has rows 0..5: from row 4 the chunk repeats row 5; row 6 starts episode 1.
    assert first_action_values(batch) == [[4, 5, 5, 5], [6, 7, 8, 9]]
    assert batch["action_is_pad"].tolist() == [[False, False, True, True], [False] * 4]
    assert batch["observation.image"].shape == (2, 3, 64, 64)
    assert batch["observation.state"].shape == (2, 4)


def test_observation_history_repeats_the_first_frame(frames):
    batch = sampler(frames, [-1, 0], range(-1, 3)).batch(np.array([6]), CPU)

    np.testing.assert_array_equal(batch["observation.state"][0, 0], batch["observation.state"][0, 1])
    assert batch["observation.image"].shape == (1, 2, 3, 64, 64)
    assert batch["action_is_pad"].tolist() == [[True, False, False, False]]


# LeRobot 0.6.1's delta indices at these settings (its configs' observation_, action_ and
# reward_delta_indices): None observations is the current frame without a time axis, as [0] is here.
LEROBOT_WINDOWS = {
    ("act", (("chunk_size", 3), ("n_action_steps", 3))): (None, [0, 1, 2]),
    ("diffusion", (("n_obs_steps", 3), ("horizon", 8))): ([-2, -1, 0], [-2, -1, 0, 1, 2, 3, 4, 5]),
    ("smolvla", (("chunk_size", 4), ("n_action_steps", 4))): ([0], [0, 1, 2, 3]),
    ("pi0", (("chunk_size", 2), ("n_action_steps", 2))): (None, [0, 1]),
    ("pi05", (("chunk_size", 5), ("n_action_steps", 5))): (None, [0, 1, 2, 3, 4]),
}


@pytest.mark.parametrize(("policy", "lerobot"), LEROBOT_WINDOWS.items(), ids=[t for t, _ in LEROBOT_WINDOWS])
def test_each_policy_trains_on_lerobots_windows(policy, lerobot):
    policy_type, settings = policy
    cfg = PreTrainedConfig.get_choice_class(policy_type)(**dict(settings))
    observations, actions = lerobot

    assert (cfg.observation_delta_indices, cfg.action_delta_indices) == lerobot
    assert cfg.reward_delta_indices is None
    assert window_offsets(cfg) == (observations or [0], actions)


def test_features_and_statistics_describe_the_dataset(frames):
    inputs, outputs = dataset_features(frames)
    stats = compute_stats(frames)

    assert inputs["observation.image"].shape == (3, 64, 64)
    assert outputs["action"].shape == (4,)
    assert stats["observation.image"]["mean"].shape == (3, 1, 1)
    torch.testing.assert_close(stats["action"]["max"], torch.tensor([36.0, 37.0, 38.0, 39.0]))


def test_camera_frames_travel_as_bytes_and_become_floats_on_the_device(frames):
    windows = sampler(frames, [0], range(4))
    raw = windows[np.array([1, 7])]
    assert raw["observation.image"].dtype == torch.uint8
    moved = windows.on_device(raw, CPU)
    expected = torch.from_numpy(frames.images["observation.image"][[1, 7]]).permute(0, 3, 1, 2) / 255.0
    torch.testing.assert_close(moved["observation.image"], expected, rtol=0, atol=0)


@pytest.mark.parametrize("case", json.loads(BATCH_ORDER.read_text()), ids=["all-episodes", "subset-dropped"])
def test_batches_read_lerobots_frames_in_lerobots_order(case):
    """LeRobot 0.6.1's sampler, recorded: the same frames, epoch after epoch, for the same seed."""
    frames = make_frames(case["lengths"])
    absolute = np.arange(frames.n_frames)
    if case["episodes"] is not None:
        frames = frames.select(case["episodes"])
        absolute = absolute[
            np.isin(np.repeat(np.arange(len(case["lengths"])), case["lengths"]), case["episodes"])
        ]
    order = EpochOrder(frames, case["seed"], case["drop_n_last_frames"])
    for epoch, expected in enumerate(case["epochs"]):
        assert absolute[order.epoch(epoch)].tolist() == expected
    batch_size = 8
    per_epoch = -(-len(case["epochs"][0]) // batch_size)
    drawn = [order.batch_rows(i, batch_size) for i in range(2 * per_epoch)]
    assert [len(rows) for rows in drawn[:per_epoch]][-1] == len(case["epochs"][0]) - batch_size * (
        per_epoch - 1
    )
    assert absolute[np.concatenate(drawn)].tolist() == case["epochs"][0] + case["epochs"][1]


def test_a_run_from_step_n_reads_the_batches_an_uninterrupted_run_reads_there(frames):
    order = EpochOrder(frames, seed=7)
    whole = list(StepBatches(order, 3, 0, 9))
    resumed = list(StepBatches(EpochOrder(frames, seed=7), 3, 5, 9))
    for a, b in zip(whole[5:], resumed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_worker_processes_read_the_same_batches_from_the_memory_mapped_cache(tmp_path):
    frames = make_frames((6, 4, 5))
    cache = tmp_path / "frames.npy"
    np.save(cache, frames.images["observation.image"])
    frames.images["observation.image"] = np.load(cache, mmap_mode="r")
    # A worker gets the cache's file name, not a copy of every frame.
    assert len(pickle.dumps(frames)) < frames.images["observation.image"].nbytes // 4
    windows = sampler(frames, [-1, 0], range(-1, 3))
    batches = StepBatches(EpochOrder(frames, seed=1), 4, 0, 6)
    in_process = list(make_loader(windows, batches, LoaderSettings(num_workers=0)))
    in_workers = list(make_loader(windows, batches, LoaderSettings(num_workers=2, prefetch_factor=2)))
    assert len(in_workers) == len(in_process) == 6
    for a, b in zip(in_process, in_workers, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


def test_making_a_loader_leaves_torchs_random_state_alone(frames):
    before = torch.get_rng_state()
    loader = make_loader(
        sampler(frames, [0], range(4)), StepBatches(EpochOrder(frames, 0), 2, 0, 3), LoaderSettings()
    )
    list(loader)
    assert torch.equal(torch.get_rng_state(), before)


def test_selecting_episodes_keeps_their_frames(frames: EpisodeFrames):
    second = frames.select([1])
    assert second.n_frames == 4 and second.episode_starts.tolist() == [0]
    np.testing.assert_array_equal(second.vectors["action"], frames.vectors["action"][6:])
    np.testing.assert_array_equal(
        second.camera_frames("observation.image", np.arange(4)), frames.images["observation.image"][6:]
    )


def test_statistics_are_the_whole_datasets_even_for_some_episodes(tmp_path):
    """LeRobot normalises with meta/stats.json, whichever episodes it trains on."""
    from lerobot.datasets.reader import load_episodes
    from tests.training.conftest import write_dataset

    root = write_dataset(tmp_path / "dataset")
    whole = load_episodes(root)
    stats = compute_stats(load_episodes(root, episodes=[1]))
    action = whole.vectors["action"].astype(np.float64)
    torch.testing.assert_close(stats["action"]["mean"], torch.from_numpy(action.mean(0)).float())
    torch.testing.assert_close(stats["action"]["min"], torch.tensor([0.0, 1.0, 2.0, 3.0]))
    assert stats["observation.image"]["mean"].shape == (3, 1, 1)
    assert set(stats["observation.state"]) >= {"mean", "std", "min", "max", "q01", "q99"}
