"""Pick the torch device once, the same way everywhere; LeRobot's device helpers under its names.

`--policy.device` is checked before anything starts (`check_device_available`) and turned into
a device once (`resolve_device`). `get_safe_torch_device`, `auto_select_torch_device`,
`is_torch_device_available`, `is_amp_available`, `get_safe_dtype` and
`resolve_safetensors_device` are LeRobot 0.6.1's functions of this module, for scripts that call
them.
"""

import logging

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


# -- LeRobot's helpers -------------------------------------------------------------------------

logger = logging.getLogger(__name__)
DEVICE_KINDS = ("cuda", "mps", "xpu", "cpu")


def auto_select_torch_device() -> torch.device:
    """The best device this machine has: cuda, else mps, else xpu, else cpu."""
    for kind in DEVICE_KINDS:
        if is_torch_device_available(kind):
            return torch.device(kind)
    return torch.device("cpu")


def get_safe_torch_device(try_device: str, log: bool = False) -> torch.device:
    """`try_device` as a torch device; ValueError (one line) when its kind is not available here."""
    try_device = str(try_device)
    kind = try_device.partition(":")[0]
    if kind in DEVICE_KINDS and not is_torch_device_available(kind):
        raise ValueError(f"Requested device {try_device!r} but {kind} is not available on this machine")
    if log and kind != "cuda":
        logger.warning("Using %s device %s", "the CPU," if kind == "cpu" else "custom", try_device)
    return torch.device(try_device)


def is_torch_device_available(try_device: str) -> bool:
    """Whether this machine has a device of `try_device`'s kind (cuda, mps, xpu, cpu)."""
    kind = str(try_device).partition(":")[0]
    if kind not in DEVICE_KINDS:
        raise ValueError(f"Unknown device {try_device}. Supported devices are: {', '.join(DEVICE_KINDS)}")
    return kind in _available_devices()


def is_amp_available(device: str) -> bool:
    """Whether torch autocast runs on `device`'s kind (all but mps)."""
    if device not in DEVICE_KINDS:
        raise ValueError(f"Unknown device '{device}'. Supported devices are: {', '.join(DEVICE_KINDS)}")
    return device != "mps"


def get_safe_dtype(dtype: torch.dtype, device: str | torch.device) -> torch.dtype:
    """`dtype`, or float32 where the device has no float64 (mps; xpu without fp64)."""
    kind = device.type if isinstance(device, torch.device) else str(device)
    if dtype != torch.float64 or kind not in ("mps", "xpu"):
        return dtype
    if kind == "xpu" and _xpu_has_fp64():
        return dtype
    return torch.float32


def _xpu_has_fp64() -> bool:
    capability = getattr(torch.xpu, "get_device_capability", None)
    return bool(capability is not None and capability().get("has_fp64", False))


def resolve_safetensors_device(map_location: str | torch.device) -> str:
    """The device string to load safetensors onto: bare "cuda" becomes the current CUDA device
    (safetensors would map it to cuda:0 on every rank)."""
    map_location = str(map_location)
    if map_location == "cuda" and torch.cuda.is_available():
        return f"cuda:{torch.cuda.current_device()}"
    return map_location
