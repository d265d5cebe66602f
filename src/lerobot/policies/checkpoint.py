"""Load a checkpoint's model.safetensors into a policy, with strict parameter names.

Finding the checkpoint and reading its config.json is `lerobot.configs.checkpoint`'s job (no
torch there); this module only maps the weights onto a built policy.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from lerobot.configs.checkpoint import LEGACY_NORM_PREFIXES, WEIGHTS_FILE, CheckpointError


def load_weights(policy: torch.nn.Module, directory: Path) -> None:
    """Load model.safetensors into `policy` with strict keys (legacy statistics set aside)."""
    path = directory / WEIGHTS_FILE
    try:
        state = load_file(path)
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"--policy.path={directory}: cannot read {WEIGHTS_FILE}: {exc}") from None
    state = {k: v for k, v in state.items() if not k.startswith(LEGACY_NORM_PREFIXES)}
    expected = policy.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"--policy.path={directory}: {WEIGHTS_FILE} does not fit the config: "
            + _key_report(missing, unexpected)
        )
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
