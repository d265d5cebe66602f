"""Find the files of a VLM (SmolVLA's `vlm_model_name`) and of a tokenizer (the one a saved
`tokenizer_processor` step names, as π0's google/paligemma-3b-pt-224).

LeRobot reads them with `from_pretrained(name)`, which downloads what is missing. Here a local
directory is used as it is; a hub repo id is read from the hub cache, and fetched first when
online. Only configs and tokenizer files are fetched for evaluation: a checkpoint's
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
TOKENIZER_FLAG = "tokenizer_processor.tokenizer_name"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


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


def resolve_tokenizer_dir(name: str) -> Path:
    """The local directory holding a tokenizer's files (a local directory, or a hub repo's
    snapshot; a gated repo as PaliGemma's needs its licence accepted and `hf auth login`)."""
    local = Path(name).expanduser()
    if local.is_dir():
        _check_has_tokenizer(local, name)
        return local.resolve()
    if not REPO_ID.match(name) or name.startswith((".", "~", "/")):
        raise CheckpointError(
            f"{TOKENIZER_FLAG}={name}: no such directory (and not a hub repo id like 'user/model')"
        )
    directory = _snapshot(name, tuple(CONFIG_PATTERNS), hub_offline(), hub_cache_dir(), TOKENIZER_FLAG)
    _check_has_tokenizer(directory, name)
    return directory


@functools.lru_cache(maxsize=8)
def _snapshot(
    repo_id: str, patterns: tuple[str, ...], offline: bool, cache_dir: str, flag: str = FLAG
) -> Path:
    """Cached per repo, file patterns, hub settings and flag: several loads in one process ask
    once."""
    return snapshot(
        repo_id,
        flag=flag,
        what="VLM repo" if flag == FLAG else "tokenizer repo",
        local_hint=f"point {flag} at a local directory (`hf download {repo_id}` fetches it)",
        patterns=patterns,
        error=CheckpointError,
    )


def _check_has_config(directory: Path, name: str) -> None:
    if not (directory / "config.json").is_file():
        raise CheckpointError(f"{FLAG}={name}: no config.json in {directory}; is this a SmolVLM directory?")


def _check_has_tokenizer(directory: Path, name: str) -> None:
    if not any((directory / file).is_file() for file in TOKENIZER_FILES):
        raise CheckpointError(
            f"{TOKENIZER_FLAG}={name}: no tokenizer files ({', '.join(TOKENIZER_FILES)}) in {directory}"
        )
