"""`--dataset.repo_id`: a LeRobot dataset on the hub, read from the hub cache (fetched first when online)."""

from __future__ import annotations

from pathlib import Path

from lerobot.configs.checkpoint import REPO_ID, hub_cache_dir, hub_offline
from lerobot.utils.errors import ConfigError


def resolve_dataset_repo(repo_id: str, revision: str | None = None) -> Path:
    """The local snapshot directory of dataset `repo_id`; one-line ConfigError when unavailable."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if not REPO_ID.match(repo_id):
        raise ConfigError(f"--dataset.repo_id={repo_id}: not a hub repo id like 'user/dataset'")
    offline = hub_offline()
    try:
        return Path(
            snapshot_download(
                repo_id,
                repo_type="dataset",
                revision=revision,
                cache_dir=hub_cache_dir(),
                local_files_only=offline,
            )
        )
    except LocalEntryNotFoundError:
        reason = "HF_HUB_OFFLINE is set" if offline else "the hub cannot be reached"
        raise ConfigError(
            f"--dataset.repo_id={repo_id}: {reason} and the dataset is not in the local cache "
            f"({hub_cache_dir()}); download it once online or pass --dataset.root=<dir>"
        ) from None
    except (HfHubHTTPError, OSError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"--dataset.repo_id={repo_id}: download failed: {first_line}") from None
