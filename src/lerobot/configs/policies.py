"""Base of every policy config: a draccus choice registry selected with `--policy.type=`.

`CheckpointPolicyConfig` adds what LeRobot's checkpoint configs (config.json) carry: the
policy's input and output features and how each kind is normalised. Its subclasses (`act`,
`diffusion`) are the types `--policy.path` can load.

The registry also answers for saved configs: which types a checkpoint may name
(`supported_types`), the config a saved directory makes (`read_policy_config`, behind
`PreTrainedConfig.from_pretrained`) and the config.json a config saves as
(`encode_policy_config`); finding and reading the files is `lerobot.configs.checkpoint`'s.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import draccus

from lerobot.configs.checkpoint import (
    CONFIG_FILE,
    CheckpointError,
    check_weights_file,
    config_fields,
    encode_json_value,
    read_config_json,
    resolve_checkpoint,
)
from lerobot.configs.env import EnvConfig
from lerobot.configs.fields import facts
from lerobot.configs.hub import HubOptions
from lerobot.configs.optim import LRSchedulerConfig, OptimizerConfig
from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.utils.constants import ACTION, OBS_STATE
from lerobot.utils.errors import ConfigError, require_extra

# What `--policy.device` may say; whether the machine has it is checked when the policy is built.
DEVICE_PATTERN = re.compile(r"^(cpu|mps|(cuda|xpu)(:\d+)?)$")
DEVICE_CHOICES = "cpu, cuda, cuda:<index>, mps or xpu (unset: the best available)"


@dataclass
class PreTrainedConfig(draccus.ChoiceRegistry, abc.ABC):
    fields_lerobot_lacks: ClassVar[frozenset[str]] = frozenset()
    """Settings of this build that LeRobot's config of the same type does not have: left out of
    the config.json `save_pretrained` writes, which LeRobot refuses otherwise."""
    connects_to_server: ClassVar[bool] = False
    """The policy's actions come from a policy server it connects to: `lerobot-serve-policy`
    serves a policy it loads itself, so it refuses such a type."""
    extra: ClassVar[str | None] = None
    """The extra of this package the type needs (`pip install 'lerobot[<extra>]'`); None: the
    base install runs it."""
    extra_modules: ClassVar[tuple[str, ...]] = ()
    """What `extra` installs that the policy imports: one missing is a one-line error naming
    the extra while the command line is parsed, not a traceback once the policy loads."""

    device: str | None = field(default=None, metadata=facts(result_neutral=True))
    """Torch device: cpu, cuda, cuda:<index>, mps or xpu; unset picks cuda, else mps, else cpu.
    A device this machine lacks is an error before anything starts."""
    use_amp: bool = False
    """Run inference under torch autocast (mixed precision) on devices that support it."""
    # LeRobot's hub and PEFT settings, on every policy type as in LeRobot (they are config.json
    # keys). This build never uploads: they are kept, saved and read back, and change nothing.
    use_peft: bool = field(default=False, metadata=facts(result_neutral=True))
    """LeRobot's mark of a policy trained as PEFT adapters; true is refused (PEFT adapters are
    not in this build: fine-tune the whole model with --policy.path)."""
    push_to_hub: bool = field(default=True, metadata=facts(result_neutral=True))
    """LeRobot uploads the trained policy to --policy.repo_id when training ends. This build
    never uploads: lerobot-train refuses it together with a --policy.repo_id (pass
    --policy.push_to_hub=false and `hf upload` the checkpoint); without one there is nothing
    to push."""
    repo_id: str | None = field(default=None, metadata=facts(result_neutral=True))
    """The hub repo LeRobot pushes the trained policy to (see --policy.push_to_hub)."""
    private: bool | None = field(default=None, metadata=facts(result_neutral=True))
    """LeRobot's visibility of the pushed repo; kept in config.json, nothing is pushed."""
    tags: list[str] | None = field(default=None, metadata=facts(result_neutral=True))
    """LeRobot's tags of the pushed repo; kept in config.json, nothing is pushed."""
    license: str | None = field(default=None, metadata=facts(result_neutral=True))
    """LeRobot's license of the pushed repo; kept in config.json, nothing is pushed."""

    def __post_init__(self) -> None:
        if self.extra is not None:
            require_extra(lambda: f"--policy.type={self.type}", self.extra, self.extra_modules)
        if self.device is not None and not DEVICE_PATTERN.match(self.device):
            raise ConfigError(f"--policy.device={self.device!r}: unknown device; choose {DEVICE_CHOICES}")
        if self.use_peft:
            raise ConfigError(
                "--policy.use_peft=true: PEFT adapters are not in this build; train and load whole "
                "models (fine-tune one with --policy.path)"
            )

    @property
    def type(self) -> str:
        return self.get_choice_name(self.__class__)

    # LeRobot's training windows, as its dataset reads them: frame offsets relative to the frame
    # a sample is drawn at. None: the current frame alone, without a time axis (observations),
    # or nothing (actions, rewards). Each trainable type states its own, with LeRobot's values.
    @property
    def observation_delta_indices(self) -> list[int] | None:
        """Offsets of the observations one training sample holds (None: the current frame)."""
        return None

    @property
    def action_delta_indices(self) -> list[int] | None:
        """Offsets of the actions one training sample holds (None: this type is not trained)."""
        return None

    @property
    def reward_delta_indices(self) -> list[int] | None:
        """Offsets of the rewards one training sample holds (None: none; behaviour cloning
        reads no reward)."""
        return None

    @classmethod
    def from_pretrained(
        cls,
        pretrained_name_or_path: str | Path,
        *,
        force_download: bool = False,
        resume_download: bool | None = None,
        proxies: dict[Any, Any] | None = None,
        token: str | bool | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        revision: str | None = None,
        **policy_kwargs: Any,
    ) -> PreTrainedConfig:
        """The config saved in a LeRobot checkpoint (a directory or a hub repo id), as LeRobot's
        `PreTrainedConfig.from_pretrained` gives it, with `pretrained_path` set to the directory.

        `policy_kwargs` override saved values (`n_action_steps=10`). Hub downloads follow
        `--policy.path`'s rules: configs and safetensors only, the local cache alone with
        HF_HUB_OFFLINE=1 or `local_files_only`; a miss is one line.
        """
        hub = HubOptions(cache_dir, force_download, token, local_files_only)
        directory = resolve_checkpoint(str(pretrained_name_or_path), revision, hub)
        return read_policy_config(directory, str(pretrained_name_or_path), revision, policy_kwargs)

    def save_pretrained(self, save_directory: str | Path) -> None:
        """Write config.json as LeRobot writes it (`type` first), readable by LeRobot too."""
        directory = Path(save_directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / CONFIG_FILE).write_text(json.dumps(encode_policy_config(self), indent=4))

    def check_env(self, env: EnvConfig) -> None:
        """Fail before anything starts when this policy cannot run on `env` (default: it can)."""


@dataclass
class CheckpointPolicyConfig(PreTrainedConfig):
    """A policy whose weights and statistics come from a LeRobot checkpoint directory.

    Field names follow LeRobot's config.json, so a checkpoint's config loads unchanged and
    any field can be overridden from the command line (`--policy.n_action_steps=10`).
    """

    blank_cameras_in_preprocessor: ClassVar[bool] = True
    """The preprocessor fills missing cameras with black frames (False: the model handles them)."""

    n_obs_steps: int = 1
    """Observations (current and past) the policy reads per decision."""
    input_features: dict[str, PolicyFeature] = field(default_factory=dict)
    """Batch keys the policy reads, with their kind and shape (images channel-first)."""
    output_features: dict[str, PolicyFeature] = field(default_factory=dict)
    """Batch keys the policy writes; `action` for every policy here."""
    normalization_mapping: dict[str, NormalizationMode] = field(default_factory=dict)
    """Normalisation per feature kind (VISUAL, STATE, ENV, ACTION); missing kinds are left as is."""
    empty_cameras: int = 0
    """Camera inputs the env may lack; each missing one gets a black frame instead of an error."""
    pretrained_path: str | None = None
    """The checkpoint directory this config was read from (set by `--policy.path`)."""
    pretrained_revision: str | None = None
    """The hub revision the checkpoint was fetched at (`--policy.revision`)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.empty_cameras < 0:
            raise ConfigError(f"--policy.empty_cameras={self.empty_cameras}: must be 0 or more")

    def task_steps(self) -> list:
        """The instruction steps (processor steps: newline, prompt, tokenizer) a fresh policy's
        preprocessor runs, built once here (a tokenizer loads when its step is made)."""
        return []

    def get_optimizer_preset(self) -> OptimizerConfig:
        """How `lerobot-train` optimizes this policy by default: LeRobot's preset for the type."""
        raise NotImplementedError(f"--policy.type={self.type}: no training preset; pass --optimizer.type=...")

    def get_scheduler_preset(self) -> LRSchedulerConfig | None:
        """The learning-rate schedule of the preset; None: a constant rate."""
        return None

    @property
    def image_features(self) -> dict[str, PolicyFeature]:
        return {k: ft for k, ft in self.input_features.items() if ft.type is FeatureType.VISUAL}

    @property
    def robot_state_feature(self) -> PolicyFeature | None:
        feature = self.input_features.get(OBS_STATE)
        return feature if feature is not None and feature.type is FeatureType.STATE else None

    @property
    def env_state_feature(self) -> PolicyFeature | None:
        return next((ft for ft in self.input_features.values() if ft.type is FeatureType.ENV), None)

    @property
    def action_feature(self) -> PolicyFeature | None:
        feature = self.output_features.get(ACTION)
        return feature if feature is not None and feature.type is FeatureType.ACTION else None

    def check_env_inputs(
        self, env_features: Mapping[str, PolicyFeature], rename_map: Mapping[str, str]
    ) -> None:
        """Fail before any simulator starts when the env cannot feed this policy.

        Every input must reach the policy under its own key (after `--rename_map`) with the same
        vector length or image channel count; up to `empty_cameras` cameras may be missing.
        """
        self._check_env_actions(env_features.get(ACTION))
        provided = {
            rename_map.get(key, key): ft
            for key, ft in env_features.items()
            if ft.type is not FeatureType.ACTION
        }
        missing = [key for key in self.input_features if key not in provided]
        missing_images = [key for key in missing if key in self.image_features]
        missing_other = [key for key in missing if key not in self.image_features]
        no_camera = not any(ft.type is FeatureType.VISUAL for ft in provided.values())
        if missing_images and no_camera and len(missing_images) > self.empty_cameras:
            raise ConfigError(
                f"--policy.path: the checkpoint reads camera images ({', '.join(missing_images)}) and "
                "the env renders none; choose an --env.obs_type with images (e.g. pixels_agent_pos)"
            )
        if missing_other or len(missing_images) > self.empty_cameras:
            raise ConfigError(_missing_inputs_message(missing, provided, self.empty_cameras))
        for key, feature in self.input_features.items():
            if key in provided and not self._fits(feature, provided[key]):
                raise ConfigError(_shape_mismatch_message(key, feature, provided[key]))

    def _check_env_actions(self, given: PolicyFeature | None) -> None:
        """The env must take actions of the checkpoint's length (a one-arm policy on a two-arm
        task would otherwise fail at its first step, in a worker)."""
        wanted = self.action_feature
        if wanted is None or given is None or _leading_size(wanted) == _leading_size(given):
            return
        raise ConfigError(
            f"--policy.path: the checkpoint's actions have {_leading_size(wanted)} values, the env takes "
            f"{_leading_size(given)}; choose env settings that match the policy's training data"
        )

    def resizes_images(self) -> bool:
        """Whether the checkpoint's own processors resize camera images to the model's size
        (then only the channel count has to agree with the env's frames)."""
        return False

    def _fits(self, wanted: PolicyFeature, given: PolicyFeature) -> bool:
        """Vectors: the same length. Images: the same channels and, unless the processors resize
        them, the same height and width the policy was trained on."""
        if wanted.type is FeatureType.VISUAL and not self.resizes_images():
            return tuple(wanted.shape) == tuple(given.shape)
        return _leading_size(wanted) == _leading_size(given)


def _leading_size(feature: PolicyFeature) -> int:
    return feature.shape[0] if feature.shape else 0


def _shape_mismatch_message(key: str, wanted: PolicyFeature, given: PolicyFeature) -> str:
    hint = "choose env settings that match the policy's training data"
    if wanted.type is FeatureType.VISUAL and len(wanted.shape) == 3 and wanted.shape[0] == given.shape[0]:
        height, width = wanted.shape[1:]
        hint = f"render at its size with --env.observation_height={height} --env.observation_width={width}"
    return (
        f"--policy.path: the checkpoint reads {key!r} with shape {list(wanted.shape)}, the env gives "
        f"{list(given.shape)}; {hint}"
    )


def _missing_inputs_message(missing: list[str], provided: Mapping[str, PolicyFeature], empty: int) -> str:
    example = json.dumps({next(iter(provided), "observation.image"): missing[0]})
    return (
        f"--policy.path: the checkpoint reads {', '.join(missing)}, which the env does not provide "
        f"(it provides {', '.join(provided)}); map keys with --rename_map='{example}' or feed blank "
        f"cameras with --policy.empty_cameras=N (now {empty})"
    )


# -- saved configs: which types load, what a config.json makes, and how a config is saved ---------


NOT_SAVED = ("pretrained_path", "pretrained_revision")
"""Where a config was loaded from, not what it is: never written into config.json."""
# LeRobot policy types this build knows of but cannot run yet.
NOT_YET_SUPPORTED = ("pi0_fast", "groot", "xvla", "wall_x", "tdmpc", "vqbet", "sac")


def supported_types() -> list[str]:
    """Policy types `--policy.path` can load: the registered checkpoint configs."""
    return [
        name
        for name in PreTrainedConfig.get_known_choices()
        if issubclass(PreTrainedConfig.get_choice_class(name), CheckpointPolicyConfig)
    ]


def check_policy_type(policy_type: Any, flag: str) -> None:
    supported = supported_types()
    if policy_type in supported:
        return
    later = [t for t in NOT_YET_SUPPORTED if t not in supported]
    status = "is not yet supported" if policy_type in later else "is unknown"
    raise CheckpointError(
        f"--policy.path={flag}: policy type {policy_type!r} {status}; this build loads "
        f"{', '.join(supported)} (not yet: {', '.join(later)}); any LeRobot type runs through "
        "LeRobot itself with --policy.type=lerobot_bridge --policy.python=<its Python>"
    )


def read_checkpoint_config(directory: Path, flag: str) -> dict[str, Any]:
    """config.json as a dict, after checking that its type is one this build runs."""
    config = read_config_json(directory, flag)
    check_policy_type(config["type"], flag)
    if not isinstance(config.get("output_features"), dict) or "action" not in config["output_features"]:
        raise CheckpointError(
            f"--policy.path={flag}: {CONFIG_FILE} declares no 'action' in output_features (configs from "
            "LeRobot before 0.1 list input_shapes instead; re-save the checkpoint with a current LeRobot)"
        )
    check_weights_file(directory, flag)
    return config


def read_policy_config(
    directory: Path, flag: str, revision: str | None = None, overrides: Mapping[str, Any] | None = None
) -> PreTrainedConfig:
    """The config a saved policy directory holds: a LeRobot checkpoint's (checked as
    `--policy.path` checks it, `pretrained_path` set to the directory), or one of this build's
    policies without weights of their own (`random`, the scripted ones), saved by
    `save_pretrained`. `overrides` replace saved values."""
    saved = read_config_json(directory, flag)
    config_class = PreTrainedConfig.get_choice_class(saved["type"]) if _registered(saved["type"]) else None
    if config_class is None or issubclass(config_class, CheckpointPolicyConfig):
        saved = read_checkpoint_config(directory, flag)
        config_class = PreTrainedConfig.get_choice_class(saved["type"])
        fields = {**config_fields(config_class, saved), **(overrides or {})}
        fields.update(pretrained_path=str(directory), pretrained_revision=revision)
    else:
        fields = {**config_fields(config_class, saved), **(overrides or {})}
    return draccus.decode(config_class, fields)


def _registered(policy_type: Any) -> bool:
    return isinstance(policy_type, str) and policy_type in PreTrainedConfig.get_known_choices()


def encode_policy_config(cfg: PreTrainedConfig) -> dict[str, Any]:
    """config.json: `type` first, then every field under LeRobot's names, but those LeRobot's
    config of the type lacks (`fields_lerobot_lacks`), so that LeRobot loads the file too."""
    left_out = {*NOT_SAVED, *cfg.fields_lerobot_lacks}
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name not in left_out}
    return {"type": cfg.type, **encode_json_value(fields)}
