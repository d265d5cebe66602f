"""SmolVLA fixtures as lerobot-eval and lerobot-train meet them: checkpoint directories, a
hub cache holding them under the seeds' repo ids, and a small LIBERO-shaped dataset.

tests/fixtures/policies/smolvla*/ hold what LeRobot 0.6.1 saved and computed
(scripts/make_smolvla_fixtures.py), with the tiny VLM named by its repository-relative path;
`materialize` writes a copy whose config and tokenizer step name the VLM's absolute path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"
VLM_DIR = FIXTURES / "smolvla_vlm"
VLM_PLACEHOLDER = "tests/fixtures/policies/smolvla_vlm"
NAMES = ("smolvla", "smolvla_variant")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LIBERO_CAMERAS = {"agentview_image": "camera1", "robot0_eye_in_hand_image": "camera2"}


def materialize(name: str, destination: Path, placeholders: dict[str, Path] | None = None) -> Path:
    """Fixture `name` as a checkpoint directory whose VLM (or tokenizer: `placeholders`) paths
    are absolute."""
    placeholders = placeholders if placeholders is not None else {VLM_PLACEHOLDER: VLM_DIR}
    destination.mkdir(parents=True, exist_ok=True)
    for path in (FIXTURES / name).iterdir():
        if path.name == "expected.safetensors":
            continue
        if path.suffix == ".json":
            text = path.read_text()
            for placeholder, directory in placeholders.items():
                text = text.replace(placeholder, str(directory))
            (destination / path.name).write_text(text)
        else:
            shutil.copy(path, destination / path.name)
    return destination


def expected(name: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(LeRobot's recorded tensors, the recording's metadata: tasks, step count, ...)."""
    path = FIXTURES / name / "expected.safetensors"
    with safe_open(path, framework="pt") as f:
        meta = json.loads(f.metadata()["info"])
    return load_file(path), meta


def raw_step(recorded: dict, meta: dict, step: int, rows: slice = slice(None)) -> dict[str, Any]:
    """Step `step` of the recorded env-side batch as the rollout sends it: pixels in [0, 1]
    and one instruction per row."""
    prefix = f"raw.{step}."
    batch: dict[str, Any] = {
        key.removeprefix(prefix): (v.float().div(255.0) if v.dtype == torch.uint8 else v)[rows]
        for key, v in recorded.items()
        if key.startswith(prefix)
    }
    batch["task"] = meta["tasks"][rows]
    return batch


def populate_hub_cache(cache: Path, repo_id: str, source: Path, repo_type: str = "model") -> Path:
    """The layout huggingface_hub writes (blobs by hash, a snapshot of symlinks, refs/main),
    for a directory tree; returns the snapshot directory."""
    repo = cache / f"{repo_type}s--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT)
    for path in sorted(source.rglob("*")):
        if not path.is_file() or ".cache" in path.parts:
            continue
        blob = repo / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
        shutil.copy(path, blob)
        link = snapshot / path.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot


def write_libero_dataset(root: Path, n_episodes: int = 2, length: int = 12, size: int = 32) -> Path:
    """A LeRobot v3 dataset with the keys of LeRobot's LIBERO datasets (cameras `image` and
    `image2`, 8-d state, 7-d actions) and one instruction per episode."""
    from lerobot.datasets.recorder import DatasetRecorder

    rng = np.random.default_rng(0)
    recorder = DatasetRecorder(root, fps=10, task="put the bowl on the plate")
    for episode in range(n_episodes):
        for step in range(length):
            observation = {
                "pixels": {
                    "image": rng.integers(0, 255, (size, size, 3), dtype=np.uint8),
                    "image2": rng.integers(0, 255, (size, size, 3), dtype=np.uint8),
                },
                "agent_pos": rng.normal(size=8).astype(np.float32),
            }
            recorder.add_step(episode, observation, rng.uniform(-1, 1, 7).astype(np.float32), step)
        recorder.end_episode(episode, keep=True, task=f"task number {episode}: put the bowl on the plate")
    return recorder.finish()
