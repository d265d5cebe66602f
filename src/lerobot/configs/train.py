"""The `lerobot-train` configuration."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lerobot.configs.env import EnvConfig
from lerobot.configs.eval import EvalConfig, check_job_name, check_seeds
from lerobot.configs.optim import LRSchedulerConfig, OptimizerConfig
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.utils.errors import ConfigError


@dataclass
class DatasetConfig:
    root: Path | None = None
    """A LeRobot v3 dataset directory (e.g. written by lerobot-record-sim)."""
    repo_id: str | None = None
    """A LeRobot v3 dataset on the hub, read from the hub cache (fetched first when online);
    --dataset.root wins when both are given."""
    episodes: list[int] | None = None
    """Train on these episodes only, e.g. [0,1]; default all."""
    frame_cache_dir: Path | None = None
    """Where camera frames are decoded to once (memory-mapped while training); default
    <root>/.cache/frames. Point it elsewhere when the dataset directory is read-only."""
    use_imagenet_stats: bool = False
    """Normalise cameras with ImageNet's mean and std instead of the dataset's (LeRobot's
    default is true; it changes nothing for policies that leave images unnormalised, as SmolVLA)."""


@dataclass
class WandbConfig:
    enable: bool = False
    """Log losses and eval success to Weights & Biases (needs `pip install wandb`)."""
    project: str = "lerobot"
    """Weights & Biases project the run is logged under."""
    mode: Literal["online", "offline", "disabled"] = "offline"
    """online (uploads), offline (a local run folder to sync later) or disabled."""


@dataclass
class TrainPipelineConfig:
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    """The demonstrations: `--dataset.root=<dir>` and optionally `--dataset.episodes=[0,1]`."""
    policy: PreTrainedConfig | None = None
    """What to train: `--policy.type=act|diffusion|smolvla|pi0|pi05` and its settings (`--policy.dim_model=...`),
    or a checkpoint to fine-tune (`--policy.path=...`)."""
    env: EnvConfig | None = None
    """Where to evaluate during training (`--env.type=metaworld --env.task=reach-v3`); none: no eval."""
    eval: EvalConfig = field(default_factory=lambda: EvalConfig(n_episodes=10, max_episodes_rendered=2))
    """Episodes, batch size and videos of each in-training evaluation."""
    rename_map: dict[str, str] = field(default_factory=dict)
    """Rename dataset (and in-loop eval) observation keys to the policy's, e.g.
    '{"observation.images.image": "observation.images.camera1"}'."""
    output_dir: Path | None = None
    """Checkpoints go to <output_dir>/checkpoints/<step>/, evaluations to <output_dir>/eval/step_<N>/;
    default outputs/train/<date>/<time>_<job_name>."""
    job_name: str | None = None
    """Name of this run; default the policy type."""
    resume: bool = False
    """Continue the run in --output_dir from its last checkpoint (weights, optimizer, step, random
    states): it draws the same batches an uninterrupted run would."""
    seed: int = 1000
    """Seeds torch (weights, batches) and the evaluation episodes."""
    steps: int = 100_000
    """Optimizer steps in total."""
    batch_size: int = 8
    """Training samples per optimizer step."""
    env_eval_freq: int = 20_000
    """Evaluate in the simulator every N steps (and at the last step); 0 disables it."""
    eval_freq: int | None = None
    """LeRobot's older name of --env_eval_freq (wins when given)."""
    save_checkpoint: bool = True
    """Save checkpoints at all (false: none, not even the last)."""
    save_freq: int = 20_000
    """Save a checkpoint every N steps and after the last one; 0 or less: the last one only."""
    log_freq: int = 200
    """Log loss and throughput every N steps."""
    use_policy_training_preset: bool = True
    """Train with the policy's own optimizer and schedule (LeRobot's preset for its type: ACT
    AdamW at a constant 1e-5, Diffusion Adam with a cosine schedule, SmolVLA/π AdamW with warm-up
    and cosine decay); false: the --optimizer.* and --scheduler.* given."""
    optimizer: OptimizerConfig | None = None
    """With --use_policy_training_preset=false: `--optimizer.type=adam|adamw|sgd` and its fields
    (lr, betas, eps, weight_decay, grad_clip_norm, ...)."""
    scheduler: LRSchedulerConfig | None = None
    """With --use_policy_training_preset=false: `--scheduler.type=diffuser|cosine_decay_with_warmup|
    constant_with_warmup|cosine_annealing_with_warmup|vqbet` and its fields."""
    wandb: WandbConfig = field(default_factory=WandbConfig)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Console logging detail."""

    def __post_init__(self) -> None:
        if not isinstance(self.policy, CheckpointPolicyConfig):
            raise ConfigError(
                "--policy.type: required; lerobot-train trains act, diffusion, smolvla, pi0 or pi05"
            )
        if self.dataset.root is None and self.dataset.repo_id is None:
            raise ConfigError(
                "--dataset.root: required (or --dataset.repo_id); a dataset written by lerobot-record-sim"
            )
        if self.dataset.root is not None:
            self.dataset.root = Path(self.dataset.root)
        for flag, value in (
            ("steps", self.steps),
            ("batch_size", self.batch_size),
            ("log_freq", self.log_freq),
        ):
            if value <= 0:
                raise ConfigError(f"--{flag}={value}: must be a positive integer")
        if self.eval_freq is not None:
            self.env_eval_freq = self.eval_freq
        if self.env_eval_freq < 0:
            raise ConfigError(f"--env_eval_freq={self.env_eval_freq}: must be 0 or a positive integer")
        self._resolve_optimizer()
        _refuse_run_level_eval_flags(self.eval)
        if self.env is not None and getattr(self.env, "max_parallel_tasks", 1) != 1:
            raise ConfigError(
                f"--env.max_parallel_tasks={self.env.max_parallel_tasks}: not used by lerobot-train "
                "(in-training evaluation runs its tasks one by one); remove it"
            )
        if self.env_eval_freq and self.env is None:
            raise ConfigError(
                f"--env_eval_freq={self.env_eval_freq}: needs --env.type (and --env.task); or pass --env_eval_freq=0"
            )
        check_seeds(self.seed, self.eval.n_episodes)
        if self.job_name is None:
            self.job_name = self.policy.type
        check_job_name(self.job_name)
        if self.output_dir is None:
            now = dt.datetime.now()
            self.output_dir = Path("outputs/train") / f"{now:%Y-%m-%d}" / f"{now:%H-%M-%S}_{self.job_name}"
        self.output_dir = Path(self.output_dir)
        if self.output_dir.exists() and any(self.output_dir.iterdir()) and not self.resume:
            raise ConfigError(
                f"--output_dir={self.output_dir}: not empty; pass --resume=true to continue that run, or a new directory"
            )

    def _resolve_optimizer(self) -> None:
        """The policy's preset, or the --optimizer / --scheduler given (as LeRobot decides)."""
        if self.use_policy_training_preset:
            self.optimizer = self.policy.get_optimizer_preset()
            self.scheduler = self.policy.get_scheduler_preset()
        elif self.optimizer is None or self.scheduler is None:
            raise ConfigError(
                "--use_policy_training_preset=false: pass both --optimizer.type=... and --scheduler.type=... "
                "(e.g. --optimizer.type=adamw --optimizer.lr=1e-4 --scheduler.type=constant_with_warmup "
                "--scheduler.num_warmup_steps=0)"
            )

    def save_now(self, step: int) -> bool:
        """Whether `step` ends with a checkpoint."""
        if not self.save_checkpoint:
            return False
        return step == self.steps or (self.save_freq > 0 and step % self.save_freq == 0)

    def evaluate_now(self, step: int) -> bool:
        """Whether `step` ends with an evaluation in the simulator."""
        return bool(self.env_eval_freq) and (step % self.env_eval_freq == 0 or step == self.steps)


# `--eval.*` settings that describe a whole `lerobot-eval` run, not an in-training evaluation:
# each is refused rather than silently ignored.
_NOT_IN_TRAINING = {
    "resume": "each in-training evaluation starts fresh in eval/step_<N>/",
    "shard": "an in-training evaluation runs every episode",
    "backend": "in-training evaluation runs locally, with the policy in memory",
    "recording": "only lerobot-eval records its rollouts as datasets",
    "recording_root": "only lerobot-eval records its rollouts as datasets",
}


def _refuse_run_level_eval_flags(eval_cfg: EvalConfig) -> None:
    defaults = EvalConfig(n_episodes=1)
    for name, reason in _NOT_IN_TRAINING.items():
        value = getattr(eval_cfg, name)
        if value != getattr(defaults, name):
            raise ConfigError(f"--eval.{name}={value}: not used by lerobot-train ({reason}); remove it")
