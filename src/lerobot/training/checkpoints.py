"""Save what `lerobot-eval --policy.path` loads, and what `--resume=true` continues from.

    checkpoints/<step:06d>/pretrained_model/   config.json, model.safetensors,
                                               policy_{pre,post}processor.json + statistics,
                                               train_config.json (the run's flags)
    checkpoints/<step:06d>/training_state/     training_step.json, optimizer_state.safetensors,
                                               optimizer_param_groups.json, scheduler_state.json,
                                               rng_state.safetensors (torch, CUDA)
    checkpoints/last -> <step:06d>
Everything is JSON or safetensors; nothing is pickled.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import Tensor

from lerobot.configs.checkpoint import POSTPROCESSOR_FILE, PREPROCESSOR_FILE
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.processor.policy_processors import PolicyPipelines
from lerobot.utils.io import write_safetensors

logger = logging.getLogger(__name__)

CHECKPOINTS_DIR = "checkpoints"
LAST = "last"
PRETRAINED_DIR = "pretrained_model"
TRAINING_STATE_DIR = "training_state"
RNG_STATE_FILE = "rng_state.safetensors"
TRAIN_CONFIG_FILE = "train_config.json"


def checkpoint_dir(output_dir: Path, step: int) -> Path:
    return Path(output_dir) / CHECKPOINTS_DIR / f"{step:06d}"


def save_checkpoint(
    output_dir: Path,
    step: int,
    policy: torch.nn.Module,
    processors: PolicyPipelines,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    train_config: Mapping[str, Any] | None = None,
) -> Path:
    """Write checkpoint `step` and point `last` at it; returns its pretrained_model dir. The
    run's flags go to pretrained_model/train_config.json, where LeRobot keeps them:
    `--config_path=<it> --resume=true` continues the run."""
    directory = checkpoint_dir(output_dir, step)
    pretrained = directory / PRETRAINED_DIR
    save_pretrained(policy, processors, pretrained)
    if train_config is not None:
        (pretrained / TRAIN_CONFIG_FILE).write_text(json.dumps(train_config, indent=4))
    save_training_state(directory / TRAINING_STATE_DIR, step, optimizer, scheduler)
    last = directory.parent / LAST
    tmp = directory.parent / f".{LAST}.tmp"
    tmp.unlink(missing_ok=True)
    os.symlink(directory.name, tmp)
    os.replace(tmp, last)  # atomic: a crash never leaves `last` missing
    return pretrained


def save_pretrained(policy: PreTrainedPolicy, processors: PolicyPipelines, directory: Path) -> None:
    """config.json, model.safetensors and the policy's processor pipelines (those training ran
    its batches through: `policy_pipelines`, LeRobot's step order and file names)."""
    policy.save_pretrained(directory)  # config.json and model.safetensors
    pre, post = processors
    pre.save_pretrained(directory, config_filename=PREPROCESSOR_FILE)
    post.save_pretrained(directory, config_filename=POSTPROCESSOR_FILE)


def save_training_state(
    directory: Path,
    step: int,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_safetensors(rng_state(), directory / RNG_STATE_FILE)
    state = optimizer.state_dict()
    tensors = {
        f"{param_id}.{name}": torch.as_tensor(value).cpu().contiguous()
        for param_id, per_param in state["state"].items()
        for name, value in per_param.items()
    }
    write_safetensors(tensors, directory / "optimizer_state.safetensors")
    (directory / "optimizer_param_groups.json").write_text(json.dumps(state["param_groups"]))
    (directory / "scheduler_state.json").write_text(json.dumps(scheduler.state_dict()))
    (directory / "training_step.json").write_text(json.dumps({"step": step}))


def numbered_checkpoints(output_dir: Path) -> list[Path]:
    """The step folders under <output_dir>/checkpoints, newest first."""
    folder = Path(output_dir) / CHECKPOINTS_DIR
    if not folder.is_dir():
        return []
    steps = [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and p.name.isdigit()]
    return sorted(steps, key=lambda p: int(p.name), reverse=True)


def remove_unfinished_writes(output_dir: Path) -> int:
    """Delete the temporary files of checkpoint writes a kill cut short (safetensors writes a
    `.tmp*` file beside its target, then renames it), 45-135 MB each for a small ACT; the bytes
    they held, which nothing else reads. Only a resume calls this: the run is not writing."""
    freed = 0
    for directory in numbered_checkpoints(output_dir):
        for leftover in directory.glob("**/.tmp*"):
            if leftover.is_file() and not leftover.is_symlink():
                freed += leftover.stat().st_size
                leftover.unlink()
    return freed


def checkpoint_problem(directory: Path) -> str | None:
    """What keeps a resume from using `directory` (a file missing, cut short or unreadable), or
    None. Checked before anything is loaded, so a broken checkpoint leaves no half-loaded state."""
    from safetensors import safe_open

    pretrained, state = directory / PRETRAINED_DIR, directory / TRAINING_STATE_DIR
    needed = [
        pretrained / "model.safetensors",
        pretrained / "config.json",
        state / "optimizer_state.safetensors",
        state / "optimizer_param_groups.json",
        state / "scheduler_state.json",
        state / "training_step.json",
    ]
    for path in needed:
        try:
            if path.suffix == ".json":
                json.loads(path.read_text())
            else:
                with safe_open(str(path), "pt") as opened:
                    opened.keys()
        except FileNotFoundError:
            return f"{path.relative_to(directory)} is missing"
        except Exception as exc:  # json and safetensors each raise their own kinds
            return f"{path.relative_to(directory)} is unreadable ({type(exc).__name__})"
    return None


def load_training_state(
    directory: Path,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
) -> int:
    """Restore optimizer, scheduler and random states from `directory`; returns the step it
    was saved at."""
    if (directory / RNG_STATE_FILE).is_file():
        set_rng_state(load_file(directory / RNG_STATE_FILE))
    else:  # a checkpoint from before random states were saved
        logger.warning("%s: no %s; dropout and noise are drawn anew", directory, RNG_STATE_FILE)
    per_param: dict[int, dict[str, Tensor]] = {}
    for key, value in load_file(directory / "optimizer_state.safetensors").items():
        param_id, name = key.split(".", 1)
        per_param.setdefault(int(param_id), {})[name] = value
    param_groups = json.loads((directory / "optimizer_param_groups.json").read_text())
    optimizer.load_state_dict({"state": per_param, "param_groups": param_groups})
    scheduler.load_state_dict(json.loads((directory / "scheduler_state.json").read_text()))
    return int(json.loads((directory / "training_step.json").read_text())["step"])


def rng_state() -> dict[str, Tensor]:
    """Every random state a training step draws from: torch's global ones (dropout, ACT's
    latent, diffusion noise, random crops), so a resumed run continues the very sequence an
    uninterrupted one would have drawn. The batches need none: their order is a function of
    the seed and the step (`EpochOrder`)."""
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state.update({f"cuda.{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())})
    return state


def set_rng_state(state: Mapping[str, Tensor]) -> None:
    torch.set_rng_state(state["torch"])
    cuda = [state[f"cuda.{i}"] for i in range(len(state)) if f"cuda.{i}" in state]
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
