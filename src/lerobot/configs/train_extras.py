"""LeRobot's training sections around the training loop, with LeRobot 0.6.1's flags and defaults:
logging to Weights & Biases (`--wandb.*`), where the run happens (`--job.*`), and three this
build refuses in one line (`--peft.*`, `--sample_weighting.*`, `--reward_model.*`).

This build never uploads and never needs the network once its inputs are on disk, so what would
upload (an online W&B run, an HF Jobs submission) is refused with the local way to do it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from lerobot.configs.fields import facts
from lerobot.utils.errors import ConfigError, flag_value, require_extra

WANDB_MODES = ("online", "offline", "disabled")
LOCAL_JOB_TARGETS = (None, "local")


@dataclass
class WandbConfig:
    enable: bool = field(default=False, metadata=facts(result_neutral=True))
    """Log losses and eval success to Weights & Biases (needs the `train` extra). This build
    never uploads: it needs --wandb.mode=offline (a local run folder under --output_dir, for
    `wandb sync` later) or disabled."""
    disable_artifact: bool = field(default=False, metadata=facts(result_neutral=True))
    """Do not log checkpoints as W&B artifacts (LeRobot's flag)."""
    project: str = field(default="lerobot", metadata=facts(result_neutral=True))
    """Weights & Biases project the run is logged under."""
    entity: str | None = field(default=None, metadata=facts(result_neutral=True))
    """Weights & Biases team or user the run belongs to; default your own."""
    notes: str | None = field(default=None, metadata=facts(result_neutral=True))
    """A description stored with the run."""
    run_id: str | None = field(default=None, metadata=facts(result_neutral=True))
    """Continue this W&B run id instead of starting a new run."""
    mode: str | None = field(default=None, metadata=facts(result_neutral=True))
    """online, offline or disabled; unset is online in LeRobot, so with --wandb.enable=true it
    must be offline or disabled here."""
    add_tags: bool = field(default=True, metadata=facts(result_neutral=True))
    """Tag the run with the policy type, seed, dataset and env (LeRobot's tags)."""

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in WANDB_MODES:
            raise ConfigError(f"--wandb.mode={self.mode}: must be one of {', '.join(WANDB_MODES)}")
        if self.enable and self.mode in (None, "online"):
            flag = "--wandb.enable=true" if self.mode is None else "--wandb.mode=online"
            raise ConfigError(
                f"{flag}: this build never uploads; pass --wandb.mode=offline (a local run folder "
                "to `wandb sync` later) or --wandb.mode=disabled"
            )
        if self.enable:
            require_extra("--wandb.enable=true", "train", ("wandb",))


@dataclass
class JobConfig:
    """Where the run happens. LeRobot submits it to HF Jobs when --job.target names a hardware
    flavor; this build trains on this machine only. The other fields only describe a remote job
    (LeRobot ignores them for local runs too), so they are accepted and change nothing."""

    target: str | None = field(default=None, metadata=facts(result_neutral=True))
    """None or `local`: this machine. An HF Jobs flavor is refused (it needs the network)."""
    image: str = field(default="huggingface/lerobot-gpu:latest", metadata=facts(result_neutral=True))
    """The remote job's container image; unused for a local run."""
    timeout: str | None = field(default="2d", metadata=facts(result_neutral=True))
    """The remote job's wall-clock limit (e.g. 2h); unused for a local run."""
    detach: bool = field(default=False, metadata=facts(result_neutral=True))
    """Submit the remote job and return; unused for a local run."""
    tags: list[str] = field(default_factory=list, metadata=facts(result_neutral=True))
    """Tags of the remote job and of what it pushes; unused for a local run."""

    def __post_init__(self) -> None:
        if self.target not in LOCAL_JOB_TARGETS:
            raise ConfigError(
                f"--job.target={self.target}: HF Jobs need the network and this build trains "
                "locally; drop the flag (or pass --job.target=local) and run on a machine with the hardware"
            )


def _first_given(config: Any, section: str, fallback: str) -> str:
    """`--<section>.<field>=<value>` of the first field off its default, else of `fallback`."""
    for f in dataclasses.fields(config):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if getattr(config, f.name) != default:
            return f"--{section}.{f.name}={flag_value(getattr(config, f.name))}"
    return f"--{section}.{fallback}={flag_value(getattr(config, fallback))}"


@dataclass
class PeftConfig:
    """LeRobot's parameter-efficient fine-tuning (adapters such as LoRA). Not in this build:
    any --peft.* flag is refused."""

    target_modules: list[str] | str | None = None
    """Modules to adapt: names, name suffixes, a regular expression or `all-linear`."""
    full_training_modules: list[str] | None = None
    """Modules trained fully beside the adapters."""
    method_type: str = "LORA"
    """The PEFT method."""
    init_type: str | None = None
    """How the adapters are initialised."""
    r: int = 16
    """The adapters' rank."""
    lora_alpha: int | None = None
    """LoRA's scaling numerator (scaling = lora_alpha / r)."""

    def __post_init__(self) -> None:
        raise ConfigError(
            f"{_first_given(self, 'peft', 'method_type')}: PEFT adapters are not in this build; "
            "fine-tune the whole model with --policy.path (drop the --peft.* flags)"
        )


@dataclass
class SampleWeightingConfig:
    """LeRobot's per-sample loss weights (RA-BC, from a reward model's progress estimates). Not
    in this build: any --sample_weighting.* flag is refused."""

    type: str = "rabc"
    """The weighting scheme."""
    progress_path: str | None = None
    """The precomputed progress estimates."""
    head_mode: str = "sparse"
    """Which progress head the estimates come from."""
    kappa: float = 0.01
    """The weighting's temperature."""
    epsilon: float = 1e-6
    """Floor of a weight."""
    extra_params: dict[str, Any] = field(default_factory=dict)
    """Settings of other schemes."""

    def __post_init__(self) -> None:
        raise ConfigError(
            f"{_first_given(self, 'sample_weighting', 'type')}: sample weighting (RA-BC) is not in "
            "this build; drop the --sample_weighting.* flags (every sample weighs the same)"
        )


@dataclass
class RewardModelConfig:
    """LeRobot trains reward models (`--reward_model.type=...` or `--reward_model.path=...`)
    with lerobot-train too. Not in this build: refused in one line."""

    type: str | None = None
    """LeRobot's reward model type (reward_classifier, robometer, sarm, topreward)."""
    path: str | None = None
    """A reward-model checkpoint to fine-tune."""

    def __post_init__(self) -> None:
        flag = (
            f"--reward_model.type={self.type}"
            if self.type is not None
            else f"--reward_model.path={self.path}"
        )
        raise ConfigError(
            f"{flag}: reward-model training is not in this build; lerobot-train trains policies "
            "(--policy.type=... or --policy.path=...)"
        )
