"""A policy's model.safetensors: read into a built policy with strict parameter names, and written.

Finding the checkpoint and reading its config.json is `lerobot.configs.checkpoint`'s job (no
torch there); this module only maps the weights onto a built policy and back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from lerobot.configs.checkpoint import LEGACY_NORM_PREFIXES, WEIGHTS_FILE, CheckpointError
from lerobot.utils.io import write_safetensors

logger = logging.getLogger(__name__)


def read_weights(directory: Path) -> dict[str, torch.Tensor]:
    """model.safetensors of a checkpoint directory (legacy statistics set aside)."""
    try:
        state = load_file(directory / WEIGHTS_FILE)
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"--policy.path={directory}: cannot read {WEIGHTS_FILE}: {exc}") from None
    return {k: v for k, v in state.items() if not k.startswith(LEGACY_NORM_PREFIXES)}


def load_weights(policy: torch.nn.Module, directory: Path, strict: bool = True) -> None:
    """Load model.safetensors into `policy`. A tensor the policy has and the file lacks is always
    an error (never a randomly initialised layer); one the file has and the policy lacks is an
    error when `strict`, else logged and left out (LeRobot's `from_pretrained` default)."""
    state = read_weights(directory)
    expected = policy.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or (unexpected and strict):
        raise CheckpointError(
            f"--policy.path={directory}: {WEIGHTS_FILE} does not fit the config: "
            + _key_report(missing, unexpected if strict else [])
        )
    if unexpected:
        logger.warning("%s: %s left out: %s", directory, WEIGHTS_FILE, _key_report([], unexpected))
        state = {k: v for k, v in state.items() if k in expected}
    wrong = [
        f"{k} {list(state[k].shape)} vs {list(v.shape)}"
        for k, v in sorted(expected.items())
        if state[k].shape != v.shape
    ]
    if wrong:
        raise CheckpointError(
            f"--policy.path={directory}: {len(wrong)} tensor(s) of {WEIGHTS_FILE} have other shapes than the config "
            f"implies, e.g. {wrong[0]}"
        )
    policy.load_state_dict(state, strict=True)


def _key_report(missing: list[str], unexpected: list[str], shown: int = 3) -> str:
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing key(s) (e.g. {', '.join(missing[:shown])})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected key(s) (e.g. {', '.join(unexpected[:shown])})")
    return "; ".join(parts)


def save_weights(
    policy: torch.nn.Module, directory: Path, state_dict: Mapping[str, torch.Tensor] | None = None
) -> Path:
    """Write model.safetensors: `state_dict` (default the policy's), each tied parameter under its
    first name only (safetensors refuses shared tensors; loaders accept any name of a tied group)."""
    state = dict(state_dict) if state_dict is not None else state_without_aliases(policy)
    path = Path(directory) / WEIGHTS_FILE
    write_safetensors({k: v.detach().cpu().contiguous() for k, v in state.items()}, path, {"format": "pt"})
    return path


def state_without_aliases(policy: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each tied parameter under its first name only."""
    seen: set[int] = set()
    dropped = set()
    for name, param in policy.named_parameters(remove_duplicate=False):
        if id(param) in seen:
            dropped.add(name)
        seen.add(id(param))
    return {k: v for k, v in policy.state_dict().items() if k not in dropped}
