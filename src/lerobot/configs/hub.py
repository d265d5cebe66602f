"""Files from the Hugging Face hub, read from its local cache (fetched first when online).

Checkpoints (`--policy.path`), a VLM's config and tokenizer (`--policy.vlm_model_name`) and
datasets (`--dataset.repo_id`) are all snapshots of a hub repo. `snapshot` fetches one the same
way for each and turns every way it can fail into one line naming the flag: offline and not
cached, no such repo or revision, a gated repo, the hub out of reach.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lerobot.utils.errors import ConfigError

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
"""What a hub repo id looks like: `name` or `owner/name`."""
TRUTHY = {"1", "on", "yes", "true"}


def hub_offline() -> bool:
    """HF_HUB_OFFLINE as set now (huggingface_hub reads it once, at import)."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE")
    return value.strip().lower() in TRUTHY if value is not None else bool(constants.HF_HUB_OFFLINE)


def hub_cache_dir() -> str:
    """HF_HUB_CACHE, else HF_HOME/hub, as set now; else huggingface_hub's default."""
    from huggingface_hub import constants

    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return str(constants.HF_HUB_CACHE)


@dataclass(frozen=True)
class HubOptions:
    """How to fetch from the hub, as the arguments of LeRobot's `from_pretrained` say it (LeRobot's
    `proxies` and `resume_download` are accepted there and have no effect: huggingface_hub 1.x
    reads proxies from the environment and always resumes)."""

    cache_dir: str | Path | None = None
    """The hub cache to use; default HF_HUB_CACHE (or HF_HOME/hub), as set now."""
    force_download: bool = False
    token: str | bool | None = None
    local_files_only: bool = False
    """The local cache only, as with HF_HUB_OFFLINE=1."""


DEFAULT_HUB = HubOptions()


def snapshot(
    repo_id: str,
    *,
    flag: str,
    what: str,
    local_hint: str,
    revision: str | None = None,
    repo_type: str | None = None,
    patterns: Sequence[str] | None = None,
    error: type[ConfigError] = ConfigError,
    hub: HubOptions = DEFAULT_HUB,
) -> Path:
    """The local snapshot directory of `repo_id`, or a one-line `error` naming `flag`.

    `what` names the repo in messages ("checkpoint", "dataset"), `local_hint` says what to pass
    instead when the hub cannot help ("pass a local directory").
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    offline = hub_offline() or hub.local_files_only
    cache_dir = str(hub.cache_dir) if hub.cache_dir is not None else hub_cache_dir()
    where = f"{repo_id}@{revision}" if revision else repo_id
    try:
        directory = snapshot_download(
            repo_id,
            repo_type=repo_type,
            revision=revision,
            cache_dir=cache_dir,
            allow_patterns=list(patterns) if patterns else None,
            local_files_only=offline,
            force_download=hub.force_download,
            token=hub.token,
        )
    except RevisionNotFoundError:
        raise error(f"{flag}={where}: no such revision of {repo_id} on the hub") from None
    except GatedRepoError:
        raise error(f"{flag}={repo_id}: the hub repo is gated; log in with `hf auth login`") from None
    except RepositoryNotFoundError:
        raise error(
            f"{flag}={repo_id}: no such local directory, and the hub has no accessible {what} of that name"
        ) from None
    except LocalEntryNotFoundError:
        if hub_offline():
            reason = "HF_HUB_OFFLINE is set"
        else:
            reason = "local_files_only is set" if hub.local_files_only else "the hub cannot be reached"
        raise error(
            f"{flag}={where}: {reason} and the {what} is not in the local cache ({cache_dir}); "
            f"download it once online or {local_hint}"
        ) from None
    except (HfHubHTTPError, OSError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise error(f"{flag}={where}: download failed: {first_line}") from None
    return Path(directory)
