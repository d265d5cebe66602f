"""`--dataset.repo_id`: a LeRobot dataset on the hub, read from the hub cache (fetched first when online)."""

from __future__ import annotations

from pathlib import Path

from lerobot.configs.hub import REPO_ID, snapshot
from lerobot.utils.errors import ConfigError


def resolve_dataset_repo(repo_id: str, revision: str | None = None) -> Path:
    """The local snapshot directory of dataset `repo_id`; one-line ConfigError when unavailable."""
    if not REPO_ID.match(repo_id):
        raise ConfigError(f"--dataset.repo_id={repo_id}: not a hub repo id like 'user/dataset'")
    return snapshot(
        repo_id,
        flag="--dataset.repo_id",
        what="dataset",
        local_hint="pass --dataset.root=<dir>",
        revision=revision,
        repo_type="dataset",
    )
