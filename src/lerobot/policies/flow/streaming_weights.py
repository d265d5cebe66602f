"""Load a model.safetensors into a module tensor by tensor, straight to its device and dtype.

`safetensors.torch.load_file` materialises the whole file in host memory (or maps it, and every
page read stays resident) before `load_state_dict` copies it into the model: two copies at the
peak. For a model built on the meta device and then given empty storage on its target device
(`Module.to_empty`), this module reads each tensor from the file into that storage, through a
buffer the size of one tensor when the dtype or device differs, and directly when not. Host
memory then peaks at the model (on CPU) plus its largest tensor.

The format is simple: an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range, then the bytes.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
MAX_READ_BYTES = 1 << 30


class WeightsError(ValueError):
    """The file does not fit the module; the message is one line."""


@dataclass(frozen=True)
class TensorEntry:
    dtype: torch.dtype
    shape: tuple[int, ...]
    offset: int
    """Absolute byte offset of the tensor's data in the file."""
    n_bytes: int


def read_entries(path: Path) -> dict[str, TensorEntry]:
    """The tensors a safetensors file holds, by name, without reading their data."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
    entries = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if spec["dtype"] not in DTYPES:
            raise WeightsError(f"holds {name} as {spec['dtype']}, a dtype torch cannot hold")
        start, end = spec["data_offsets"]
        entries[name] = TensorEntry(
            DTYPES[spec["dtype"]], tuple(spec["shape"]), 8 + header_len + start, end - start
        )
    return entries


def to_empty_keeping_ties(module: nn.Module, device: torch.device | str) -> nn.Module:
    """`module.to_empty(device)`, then tie again what was tied (to_empty gives every module its
    own storage, which would split a shared embedding and LM head in two)."""
    groups = [sorted(names) for names in _names_by_parameter(module).values() if len(names) > 1]
    module.to_empty(device=device)
    for first, *others in groups:
        shared = module.get_parameter(first)
        for name in others:
            owner, _, attribute = name.rpartition(".")
            setattr(module.get_submodule(owner), attribute, shared)
    return module


def load_streaming(module: nn.Module, path: Path) -> None:
    """Fill every parameter and persistent buffer of `module` from `path`, with strict names.

    Tied parameters (one tensor under several names) need only one of their names in the
    file, as safetensors' own writer keeps only one.
    """
    entries = read_entries(path)
    targets = module.state_dict(keep_vars=True)
    check_names(targets, entries, _aliases(module))
    wrong = [
        f"{name} {list(entry.shape)} vs {list(targets[name].shape)}"
        for name, entry in entries.items()
        if tuple(targets[name].shape) != entry.shape
    ]
    if wrong:
        raise WeightsError(
            f"has {len(wrong)} tensor(s) of other shapes than the config implies, e.g. {wrong[0]}"
        )
    with open(path, "rb", buffering=0) as f, torch.no_grad():
        for name, entry in entries.items():
            _read_into(f, entry, targets[name].detach())


def check_names(
    targets: Mapping[str, torch.Tensor], entries: Mapping[str, TensorEntry], aliases: Mapping[str, set[str]]
) -> None:
    missing = sorted(
        name for name in targets if name not in entries and not (aliases.get(name, set()) & entries.keys())
    )
    unexpected = sorted(set(entries) - set(targets))
    if not missing and not unexpected:
        return
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing key(s) (e.g. {', '.join(missing[:3])})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected key(s) (e.g. {', '.join(unexpected[:3])})")
    raise WeightsError("does not fit the config: " + "; ".join(parts))


def _aliases(module: nn.Module) -> dict[str, set[str]]:
    """Name -> the other names of the same parameter object."""
    groups = _names_by_parameter(module).values()
    return {name: names - {name} for names in groups for name in names if len(names) > 1}


def _names_by_parameter(module: nn.Module) -> dict[int, set[str]]:
    names_of: dict[int, set[str]] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        names_of.setdefault(id(param), set()).add(name)
    return names_of


def _read_into(f, entry: TensorEntry, target: torch.Tensor) -> None:
    """Copy one tensor's bytes into `target`, directly when it is a contiguous CPU tensor of the
    file's dtype, else through a CPU buffer converted by `copy_`."""
    f.seek(entry.offset)
    direct = target.device.type == "cpu" and target.dtype == entry.dtype and target.is_contiguous()
    buffer = target if direct else torch.empty(entry.shape, dtype=entry.dtype)
    if entry.n_bytes:
        _read_exactly(f, buffer.reshape(-1).view(torch.uint8).numpy(), entry.n_bytes)
    if not direct:
        target.copy_(buffer)


def _read_exactly(f, array, n_bytes: int) -> None:
    view = memoryview(array).cast("B")
    done = 0
    while done < n_bytes:
        n = f.readinto(view[done : min(n_bytes, done + MAX_READ_BYTES)])
        if not n:
            raise WeightsError(f"ends {n_bytes - done} bytes early (truncated file?)")
        done += n
