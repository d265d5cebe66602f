"""Find the files of SmolVLA's VLM (`vlm_model_name`): its config, tokenizer and, on request, weights.

LeRobot reads them with `from_pretrained(vlm_model_name)`, which downloads what is missing.
Here a local directory is used as it is; a hub repo id is read from the hub cache, and fetched
first when online. Only configs and tokenizer files are fetched for evaluation: a checkpoint's
model.safetensors already holds every VLM weight it uses.
"""

from __future__ import annotations

import functools
from pathlib import Path

from lerobot.configs.checkpoint import CheckpointError
from lerobot.configs.hub import REPO_ID, hub_cache_dir, hub_offline, snapshot

CONFIG_PATTERNS = ["*.json", "*.txt", "*.jinja", "*.model"]
WEIGHT_PATTERNS = ["*.safetensors"]
FLAG = "--policy.vlm_model_name"


def resolve_vlm_dir(name: str, with_weights: bool = False) -> Path:
    """The local directory holding the VLM's config.json and tokenizer (and weights if asked)."""
    local = Path(name).expanduser()
    if local.is_dir():
        _check_has_config(local, name)
        return local.resolve()
    if not REPO_ID.match(name) or name.startswith((".", "~", "/")):
        raise CheckpointError(f"{FLAG}={name}: no such directory (and not a hub repo id like 'user/model')")
    patterns = CONFIG_PATTERNS + (WEIGHT_PATTERNS if with_weights else [])
    directory = _snapshot(name, tuple(patterns), hub_offline(), hub_cache_dir())
    _check_has_config(directory, name)
    return directory


@functools.lru_cache(maxsize=8)
def _snapshot(repo_id: str, patterns: tuple[str, ...], offline: bool, cache_dir: str) -> Path:
    """Cached per repo, file patterns and hub settings: several loads in one process ask once."""
    return snapshot(
        repo_id,
        flag=FLAG,
        what="VLM repo",
        local_hint=f"point {FLAG} at a local directory (`hf download {repo_id}` fetches it)",
        patterns=patterns,
        error=CheckpointError,
    )


def _check_has_config(directory: Path, name: str) -> None:
    if not (directory / "config.json").is_file():
        raise CheckpointError(f"{FLAG}={name}: no config.json in {directory}; is this a SmolVLM directory?")
