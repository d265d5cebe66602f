"""Pick the torch device once, the same way everywhere."""

import torch

from lerobot.utils.errors import ConfigError


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


def check_device_available(requested: str | None) -> None:
    """Refuse, in one line, a `--policy.device` this machine does not have.

    Without this check torch fails on the first tensor moved there, with a traceback, after the
    simulator workers have started.
    """
    if requested is None or requested == "cpu":
        return
    kind, _, index = requested.partition(":")
    available = _available_devices()
    if kind not in available:
        raise ConfigError(
            f"--policy.device={requested}: {kind} is not available on this machine "
            f"(available: {', '.join(available)}); choose one of them or leave the flag unset"
        )
    if index and int(index) >= available[kind]:
        raise ConfigError(
            f"--policy.device={requested}: this machine has {available[kind]} {kind} device(s), "
            f"indices 0..{available[kind] - 1}"
        )


def _available_devices() -> dict[str, int]:
    """{device kind: how many} for the kinds this torch build and machine offer."""
    available = {"cpu": 1}
    if torch.cuda.is_available():
        available["cuda"] = torch.cuda.device_count()
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        available["mps"] = 1
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        available["xpu"] = xpu.device_count()
    return available


def policy_device(policy: torch.nn.Module) -> torch.device:
    """Where a policy computes: its parameters' or buffers' device, else its configured one."""
    for tensor in (*policy.parameters(), *policy.buffers()):
        return tensor.device
    return resolve_device(getattr(getattr(policy, "config", None), "device", None))
