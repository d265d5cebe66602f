"""Every flag of LeRobot 0.6.1's `lerobot-train` is accepted with LeRobot's meaning and default, or
refused in one line that names it.

tests/fixtures/lerobot_0_6_1_train_flags.json lists LeRobot's flags with their defaults, read off
LeRobot's own config (scripts/make_lerobot_train_flags.py). Each one is either in ACCEPTED (it
parses at LeRobot's default and at another valid value, the config holds what was given, and our
default is LeRobot's unless EXCEPTIONS says why not) or in REFUSED (a value other than LeRobot's
default is one line starting with `--<flag>=`). A flag LeRobot adds in a new release is in
neither, and fails here until someone decides. Only the command line is parsed: nothing trains.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import draccus
import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values, as the CLI does)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.checkpoint import WEIGHTS_FILE
from lerobot.configs.optim import LRSchedulerConfig, OptimizerConfig
from lerobot.configs.parser import CliError, parse_config
from lerobot.configs.policies import CheckpointPolicyConfig
from lerobot.configs.train import TrainPipelineConfig
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.act.configuration_act import ACTConfig

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "lerobot_0_6_1_train_flags.json").read_text())
FLAGS: dict[str, Any] = FIXTURE["flags"]
CHOICE, PATH, REQUIRED, PLATFORM = "<choice>", "<path>", "<required>", "<platform>"
CHECKPOINT = "<a checkpoint directory>"
"""Stands for a tiny ACT checkpoint the test writes (`--policy.path`)."""


@dataclass(frozen=True)
class Accepted:
    other: Any
    """A valid value other than LeRobot's default (NO_OTHER: LeRobot's default is the only one)."""
    needs: tuple[str, ...] = ()
    """Flags given alongside, at both values (e.g. --wandb.enable=true needs an offline mode)."""
    holds: str | None = None
    """Where the parsed config keeps the value, when not at the flag's own name."""
    resolved: bool = False
    """LeRobot's default (unset) is replaced while parsing, as LeRobot does (output_dir, job_name)."""


NO_OTHER = object()
OFFLINE_OPTIMIZER = ("--use_policy_training_preset=false",)

ACCEPTED: dict[str, Accepted] = {
    "batch_size": Accepted(4),
    "cudnn_deterministic": Accepted(True),
    "dataloader_multiprocessing_context": Accepted(None),
    "dataset.depth_output_unit": Accepted("m"),
    "dataset.episodes": Accepted([0, 2]),
    "dataset.eval_split": Accepted(0.2),
    "dataset.image_transforms.max_num_transforms": Accepted(2),
    "dataset.image_transforms.random_order": Accepted(True),
    "dataset.image_transforms.tfs": Accepted(
        {"jitter": {"weight": 2.0, "type": "ColorJitter", "kwargs": {"brightness": [0.5, 1.5]}}}
    ),
    "dataset.repo_id": Accepted("user/dataset"),
    "dataset.repo_type": Accepted(NO_OTHER),  # "bucket": refused, see REFUSED_VALUES
    "dataset.return_uint8": Accepted(True),
    "dataset.revision": Accepted("v3.0"),
    "dataset.root": Accepted("elsewhere", needs=("--dataset.repo_id=user/dataset",)),
    "dataset.use_imagenet_stats": Accepted(False),
    "dataset.video_backend": Accepted("pyav"),
    "env": Accepted("metaworld", holds="env.type"),
    "env_eval_freq": Accepted(500, needs=("--env.type=metaworld",)),
    "eval.batch_size": Accepted(2),
    "eval.n_episodes": Accepted(3),
    "eval.use_async_envs": Accepted(False),
    "eval_steps": Accepted(100, needs=("--dataset.eval_split=0.1",)),
    "job.detach": Accepted(True),
    "job.image": Accepted("me/image:1"),
    "job.tags": Accepted(["lab"]),
    "job.target": Accepted("local"),
    "job.timeout": Accepted("2h"),
    "job_name": Accepted("run1", resolved=True),
    "log_freq": Accepted(10),
    "max_eval_samples": Accepted(100),
    "num_workers": Accepted(0),
    "optimizer.type": Accepted("sgd", needs=(*OFFLINE_OPTIMIZER, "--scheduler.type=diffuser")),
    "output_dir": Accepted("elsewhere", resolved=True),
    "persistent_workers": Accepted(False),
    "policy": Accepted("diffusion", holds="policy.type"),
    "policy.device": Accepted("cpu"),
    "policy.input_features": Accepted({"observation.state": {"type": "STATE", "shape": [4]}}),
    "policy.license": Accepted("mit"),
    "policy.n_obs_steps": Accepted(3, needs=("--policy.type=diffusion",)),  # ACT reads one step
    "policy.output_features": Accepted({"action": {"type": "ACTION", "shape": [4]}}),
    "policy.path": Accepted(CHECKPOINT, holds="policy.pretrained_path"),
    "policy.pretrained_path": Accepted("some/dir"),
    "policy.pretrained_revision": Accepted("main"),
    "policy.private": Accepted(True),
    "policy.push_to_hub": Accepted(False),
    "policy.repo_id": Accepted("me/act", needs=("--policy.push_to_hub=false",)),
    "policy.tags": Accepted(["sim"]),
    "policy.use_amp": Accepted(True),
    "prefetch_factor": Accepted(2),
    "rename_map": Accepted({"observation.image": "observation.images.top"}),
    "resume": Accepted(True),
    "save_checkpoint": Accepted(False),
    "save_freq": Accepted(100),
    "scheduler.type": Accepted("constant_with_warmup", needs=(*OFFLINE_OPTIMIZER, "--optimizer.type=adam")),
    "seed": Accepted(7),
    "steps": Accepted(10),
    "tolerance_s": Accepted(0.01),
    "use_policy_training_preset": Accepted(
        False, needs=("--optimizer.type=adam", "--scheduler.type=constant_with_warmup")
    ),
    "wandb.add_tags": Accepted(False),
    "wandb.disable_artifact": Accepted(True),
    "wandb.enable": Accepted(True, needs=("--wandb.mode=offline",)),
    "wandb.entity": Accepted("me"),
    "wandb.mode": Accepted("offline"),
    "wandb.notes": Accepted("a note"),
    "wandb.project": Accepted("mine"),
    "wandb.run_id": Accepted("abc123"),
}

# flag -> the value that is refused, and why (the message says it to the user).
REFUSED: dict[str, tuple[Any, str]] = {
    "dataset.image_transforms.enable": (True, "image augmentation is not in this build yet"),
    "dataset.streaming": (True, "reading from the hub while training needs the network"),
    "eval.recording": (True, "only lerobot-eval records its rollouts as datasets"),
    "eval.recording_private": (True, "this build never uploads"),
    "eval.recording_repo_id": ("me/evals", "this build never uploads"),
    "peft.full_training_modules": (["head"], "PEFT adapters are not in this build"),
    "peft.init_type": ("gaussian", "PEFT adapters are not in this build"),
    "peft.lora_alpha": (32, "PEFT adapters are not in this build"),
    "peft.method_type": ("LOHA", "PEFT adapters are not in this build"),
    "peft.r": (8, "PEFT adapters are not in this build"),
    "peft.target_modules": ("all-linear", "PEFT adapters are not in this build"),
    "policy.use_peft": (True, "PEFT adapters are not in this build"),
    "reward_model": ("sarm", "reward-model training is not in this build"),
    "reward_model.path": ("user/reward", "reward-model training is not in this build"),
    "sample_weighting.epsilon": (1e-3, "sample weighting (RA-BC) is not in this build"),
    "sample_weighting.extra_params": ({"a": 1}, "sample weighting (RA-BC) is not in this build"),
    "sample_weighting.head_mode": ("dense", "sample weighting (RA-BC) is not in this build"),
    "sample_weighting.kappa": (0.1, "sample weighting (RA-BC) is not in this build"),
    "sample_weighting.progress_path": ("progress.parquet", "sample weighting (RA-BC) is not in this build"),
    "sample_weighting.type": ("other", "sample weighting (RA-BC) is not in this build"),
    "save_checkpoint_to_hub": (True, "this build never uploads"),
}

# Values of accepted flags that are refused: (flag, value, flags alongside).
REFUSED_VALUES = [
    ("dataset.repo_type", "bucket", ()),  # streaming-only
    ("job.target", "a10g-small", ()),  # HF Jobs
    ("policy.repo_id", "me/act", ()),  # with push_to_hub true (LeRobot's default): an upload
    ("wandb.enable", True, ()),  # mode unset means online in LeRobot
    ("wandb.mode", "online", ("--wandb.enable=true",)),
    ("seed", None, ()),  # LeRobot's null: no seeding; this build always seeds
]

# flag -> (our default, why it is not LeRobot's).
EXCEPTIONS: dict[str, tuple[Any, str]] = {
    "dataset.repo_id": (None, "optional: --dataset.root alone names a local dataset"),
    "dataset.video_backend": (
        None,
        "LeRobot picks torchcodec or pyav by what loads; here one decoder fills the frame cache either way",
    ),
}

REFUSED_CHOICES = {"optimizer.type": {"xvla-adamw", "multi_adam"}}
"""Optimizers of LeRobot policy types this build does not have."""
REQUIRED_SAMPLES = {
    "num_warmup_steps": 10,
    "num_decay_steps": 100,
    "num_vqvae_training_steps": 5,
    "peak_lr": 1e-4,
    "decay_lr": 1e-5,
}
OTHER_STRINGS = {"cosine": "linear"}


@pytest.fixture
def base(tmp_path) -> list[str]:
    return [
        "--policy.type=act",
        f"--dataset.root={tmp_path / 'dataset'}",
        f"--output_dir={tmp_path / 'out'}",
        "--env_eval_freq=0",
    ]


def cli_name(flag: str) -> str:
    return f"{flag}.type" if FLAGS.get(flag) == CHOICE and not flag.endswith(".type") else flag


def cli_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def parse(base: list[str], flag: str, value: Any, needs: tuple[str, ...] = ()):
    """The config of `base` with `--flag=value` (replacing base's own --flag) and `needs`."""
    name = f"--{cli_name(flag)}"
    given = [name, *(n.partition("=")[0] for n in needs)]
    kept = [arg for arg in base if arg.partition("=")[0] not in given]
    return parse_config(TrainPipelineConfig, [*kept, *needs, f"{name}={cli_text(value)}"])


def as_json(value: Any) -> Any:
    def plain(o: Any) -> Any:
        return o.value if isinstance(o, enum.Enum) else str(o)

    return json.loads(json.dumps(draccus.encode(value), default=plain))


def held(cfg: Any, path: str) -> Any:
    for name in path.split("."):
        cfg = getattr(cfg, name)
    return cfg


def our_default(flag: str) -> Any:
    """Our default of `flag`: the field's default, inside the instance a default factory
    makes (training's --eval.* are its own EvalConfig's)."""
    head, _, rest = flag.partition(".")
    if head == "policy":
        return field_default(CheckpointPolicyConfig, rest)
    owner: Any = TrainPipelineConfig
    for name in flag.split("."):
        if not isinstance(owner, type):
            owner = getattr(owner, name)
            continue
        value = field_default(owner, name)
        unset = value is None or value is dataclasses.MISSING
        owner = (nested_class(owner, name) or value) if unset else value
    return owner


def field_default(cls: type, name: str) -> Any:
    found = {f.name: f for f in dataclasses.fields(cls)}[name]
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    return found.default


def nested_class(cls: type, name: str) -> type | None:
    annotation = typing.get_type_hints(cls)[name]
    options = typing.get_args(annotation) or (annotation,)
    return next((o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)), None)


def write_checkpoint(directory: Path) -> Path:
    """A tiny ACT checkpoint: config.json and a weights file (parsing reads only the config)."""
    action = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(4,))}
    ACTConfig(output_features=action).save_pretrained(directory)
    (directory / WEIGHTS_FILE).touch()
    return directory


def test_every_flag_of_lerobot_is_accepted_or_refused():
    undecided = sorted(set(FLAGS) - set(ACCEPTED) - set(REFUSED))
    assert undecided == [], f"LeRobot's flags neither accepted nor refused here: {undecided}"
    assert set(ACCEPTED) & set(REFUSED) == set()
    stale = sorted({*ACCEPTED, *REFUSED, *EXCEPTIONS, *(f for f, _, _ in REFUSED_VALUES)} - set(FLAGS))
    assert stale == [], f"not LeRobot 0.6.1 flags: {stale}"


@pytest.mark.parametrize("flag", sorted(ACCEPTED))
def test_an_accepted_flag_has_lerobots_default_and_takes_its_values(flag, base, tmp_path):
    case, lerobots = ACCEPTED[flag], FLAGS[flag]
    if lerobots not in (CHOICE, PATH):
        expected = EXCEPTIONS[flag][0] if flag in EXCEPTIONS else lerobots
        assert as_json(our_default(flag)) == expected, EXCEPTIONS.get(flag, "LeRobot's default")
    where = case.holds or flag
    if lerobots not in (CHOICE, PATH, REQUIRED, PLATFORM) and not case.resolved:
        assert as_json(held(parse(base, flag, lerobots, case.needs), where)) == lerobots
    if case.other is NO_OTHER:
        return
    other = case.other
    if other == CHECKPOINT:
        other = str(write_checkpoint(tmp_path / "checkpoint").resolve())
    elif other == "elsewhere":
        other = str(tmp_path / "elsewhere")
    assert as_json(held(parse(base, flag, other, case.needs), where)) == as_json(other)


@pytest.mark.parametrize("flag", sorted(REFUSED))
def test_a_refused_flag_is_one_line_naming_it(flag, base):
    value, why = REFUSED[flag]
    with pytest.raises(CliError) as error:
        parse(base, flag, value)
    message = str(error.value)
    assert message.startswith(f"--{cli_name(flag)}=") and "\n" not in message, message
    assert why in message


@pytest.mark.parametrize("reward_type", FIXTURE["reward_model_types"])
def test_every_reward_model_type_of_lerobot_is_refused_in_one_line(reward_type, base):
    with pytest.raises(CliError, match=rf"^--reward_model.type={reward_type}: reward-model training is not"):
        parse(base, "reward_model", reward_type)


@pytest.mark.parametrize(("flag", "value", "needs"), REFUSED_VALUES, ids=[f for f, _, _ in REFUSED_VALUES])
def test_a_refused_value_is_one_line_naming_the_flag(flag, value, needs, base):
    with pytest.raises(CliError) as error:
        parse(base, flag, value, needs)
    message = str(error.value)
    assert message.startswith(f"--{flag}=") and "\n" not in message, message


CHOICE_CASES = [(flag, name) for flag, names in FIXTURE["choices"].items() for name in names]


@pytest.mark.parametrize(("flag", "name"), CHOICE_CASES, ids=[f"{f}={n}" for f, n in CHOICE_CASES])
def test_every_optimizer_and_scheduler_type_has_lerobots_fields_or_is_refused(flag, name, base):
    other_section = "--scheduler.type=diffuser" if flag == "optimizer.type" else "--optimizer.type=adam"
    needs = (*OFFLINE_OPTIMIZER, other_section)
    section = flag.removesuffix(".type")
    theirs = FIXTURE["choices"][flag][name]
    required = [f"--{section}.{k}={REQUIRED_SAMPLES[k]}" for k, v in theirs.items() if v == REQUIRED]
    if name in REFUSED_CHOICES.get(flag, ()):
        with pytest.raises(CliError, match=rf"^--{flag}={name}: [^\n]*not in this build"):
            parse(base, flag, name, (*needs, *required))
        return
    registry = OptimizerConfig if section == "optimizer" else LRSchedulerConfig
    ours = {f.name: f.default for f in dataclasses.fields(registry.get_choice_class(name))}
    assert set(theirs) <= set(ours)
    defaults = {k: v for k, v in theirs.items() if v != REQUIRED}
    assert {k: as_json(ours[k]) for k in defaults} == defaults
    others = {k: other_value(k, v) for k, v in theirs.items()}
    given = [f"--{section}.{k}={cli_text(v)}" for k, v in others.items()]
    cfg = parse(base, flag, name, (*needs, *given))
    assert {k: as_json(getattr(held(cfg, section), k)) for k in theirs} == others


def other_value(name: str, default: Any) -> Any:
    """A valid value other than LeRobot's default, for an optimizer or scheduler field."""
    if default == REQUIRED or default is None:
        return REQUIRED_SAMPLES.get(name, 3)
    if isinstance(default, bool):
        return not default
    if isinstance(default, int | float):
        return default * 2 if default else 0.5
    if isinstance(default, list):
        return [x / 2 for x in default]
    return OTHER_STRINGS[default]


@pytest.mark.parametrize("flag", ["--eval_freq", "--env_eval_freq"])
def test_both_names_of_the_env_eval_frequency_work(flag, base):
    kept = [arg for arg in base if not arg.startswith("--env_eval_freq")]
    cfg = parse_config(TrainPipelineConfig, [*kept, "--env.type=metaworld", f"{flag}=500"])
    assert cfg.env_eval_freq == 500


def test_a_config_file_gives_defaults_and_a_missing_one_is_one_line(base, tmp_path):
    """`--config_path` is draccus's, as in LeRobot: a JSON file of flag values the other flags
    override. LeRobot resumes with `--config_path=<checkpoint>/train_config.json --resume=true`;
    here a run resumes with `--output_dir=<run> --resume=true` and its flags."""
    config = tmp_path / "train_config.json"
    config.write_text(json.dumps({"steps": 5, "batch_size": 2}))
    cfg = parse_config(TrainPipelineConfig, [*base, f"--config_path={config}", "--batch_size=3"])
    assert (cfg.steps, cfg.batch_size) == (5, 3)
    with pytest.raises(CliError, match=r"^--config_path=\S+: no such file .*--resume=true"):
        parse_config(TrainPipelineConfig, [*base, f"--config_path={tmp_path / 'nope.json'}", "--resume=true"])


# The seeds' CI training command (LIBERO job), as it is, `accelerate launch` aside.
SEEDS_TRAIN_COMMAND = [
    "--policy.path=lerobot/smolvla_base",
    "--policy.load_vlm_weights=true",
    "--policy.scheduler_decay_steps=25000",
    "--policy.freeze_vision_encoder=false",
    "--policy.train_expert_only=false",
    "--dataset.repo_id=lerobot/libero",
    "--dataset.episodes=[0]",
    "--dataset.use_imagenet_stats=false",
    "--env.type=libero",
    "--env.task=libero_spatial",
    '--env.camera_name_mapping={"agentview_image": "camera1", "robot0_eye_in_hand_image": "camera2"}',
    "--policy.empty_cameras=1",
    "--output_dir=/tmp/train-smoke",  # replaced by an empty directory of the test's
    "--steps=1",
    "--batch_size=1",
    "--eval_freq=1",
    "--eval.n_episodes=1",
    "--eval.batch_size=1",
    "--eval.use_async_envs=false",
    "--save_freq=1",
    "--policy.push_to_hub=false",
    '--rename_map={"observation.images.image": "observation.images.camera1", '
    '"observation.images.image2": "observation.images.camera2"}',
]


@pytest.mark.skipif(importlib.util.find_spec("libero") is None, reason="LIBERO's config checks its extra")
def test_the_seeds_ci_training_command_parses_unchanged(tmp_path, monkeypatch):
    from tests.policies.smolvla_checkpoints import materialize, populate_hub_cache

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    populate_hub_cache(tmp_path / "hub", "lerobot/smolvla_base", materialize("smolvla", tmp_path / "base"))
    out = f"--output_dir={tmp_path / 'train-smoke'}"
    argv = [out if arg.startswith("--output_dir=") else arg for arg in SEEDS_TRAIN_COMMAND]
    cfg = parse_config(TrainPipelineConfig, argv)
    assert (cfg.policy.type, cfg.policy.push_to_hub, cfg.env_eval_freq, cfg.dataset.use_imagenet_stats) == (
        "smolvla",
        False,
        1,
        False,
    )
