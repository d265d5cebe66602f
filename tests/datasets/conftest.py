"""Tiny recorded datasets for the dataset tests: frames whose grey level encodes (episode, step)."""

import numpy as np

from lerobot.configs.record import FileLimits
from lerobot.datasets.recorder import DatasetRecorder

FPS = 10
CAMERA = "observation.image"


def observation(episode: int, step: int) -> dict:
    """A 16x16 frame whose grey level encodes (episode, step), and a 4-d state."""
    level = 40 * episode + 10 * step
    return {
        "pixels": np.full((16, 16, 3), level, dtype=np.uint8),
        "agent_pos": np.array([episode, step, 0, 1], dtype=np.float32),
    }


def grey_levels(episodes_and_lengths) -> list[int]:
    """The grey level of each frame of these (episode, length) pairs, in order."""
    return [40 * episode + 10 * step for episode, length in episodes_and_lengths for step in range(length)]


def record(
    root,
    lengths: dict[int, int],
    kept: set[int],
    tasks: dict[int, str] | None = None,
    limits: FileLimits | None = None,
) -> None:
    recorder = DatasetRecorder(root, fps=FPS, task="reach the goal", limits=limits)
    for episode, length in lengths.items():
        for step in range(length):
            action = np.array([step, -step, 0.5, episode], dtype=np.float32)
            recorder.add_step(episode, observation(episode, step), action, step)
        recorder.end_episode(episode, keep=episode in kept, task=(tasks or {}).get(episode))
    recorder.finish()


def add_episode(recorder: DatasetRecorder, episode: int, length: int, keep: bool = True) -> None:
    """Roll `observation(episode, step)` frames into the recorder and end the episode."""
    for step in range(length):
        action = np.array([step, -step, 0.5, episode], dtype=np.float32)
        recorder.add_step(episode, observation(episode, step), action, step)
    recorder.end_episode(episode, keep=keep, seed=100 + episode)


def dataset_files(root) -> dict[str, object]:
    """What a dataset holds, by file, in comparable form: parquet tables as rows, JSON as
    values, videos as their decoded frames. Scratch and cache folders are left out."""
    import json
    from pathlib import Path

    import pyarrow.parquet as pq

    from lerobot.datasets.video_files import iter_frames

    held = {}
    for path in sorted(Path(root).rglob("*")):
        relative = path.relative_to(root).as_posix()
        if not path.is_file() or relative.split("/")[0] not in ("data", "meta", "videos"):
            continue
        if path.suffix == ".parquet":
            held[relative] = pq.read_table(path).to_pylist()
        elif path.suffix == ".json":
            held[relative] = json.loads(path.read_text())
        else:
            held[relative] = np.stack(list(iter_frames(path))).tobytes()
    return held
