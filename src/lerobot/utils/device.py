"""Pick the torch device once, the same way everywhere."""

import torch


def auto_device() -> str:
    """cuda when available, else mps, else cpu."""
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def resolve_device(requested: str | None) -> torch.device:
    """Turn `--policy.device` (None means auto) into a torch device."""
    return torch.device(requested or auto_device())


def policy_device(policy: torch.nn.Module) -> torch.device:
    """Where a policy computes: its parameters' or buffers' device, else its configured one."""
    for tensor in (*policy.parameters(), *policy.buffers()):
        return tensor.device
    return resolve_device(getattr(getattr(policy, "config", None), "device", None))
