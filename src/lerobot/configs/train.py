"""The `lerobot-train` configuration."""

from __future__ import annotations

import datetime as dt
import multiprocessing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lerobot.configs.dataset import DATASET_MODULES, DatasetConfig, ImageTransformsConfig
from lerobot.configs.env import EnvConfig
from lerobot.configs.eval import EvalConfig, check_job_name, check_seeds
from lerobot.configs.fields import facts
from lerobot.configs.optim import LRSchedulerConfig, OptimizerConfig
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.configs.train_extras import (
    JobConfig,
    PeftConfig,
    RewardModelConfig,
    SampleWeightingConfig,
    WandbConfig,
)
from lerobot.utils.errors import ConfigError, flag_value, require_extra

__all__ = [
    "DatasetConfig",
    "ImageTransformsConfig",
    "JobConfig",
    "PeftConfig",
    "RewardModelConfig",
    "SampleWeightingConfig",
    "TrainPipelineConfig",
    "WandbConfig",
]


@dataclass
class TrainPipelineConfig:
    """Every flag of LeRobot 0.6.1's `lerobot-train`, with its meaning and default, or refused
    in one line that says why and what to do instead (tests/configs/test_train_flags.py checks
    each against LeRobot's own config). What this build never does: upload (to the hub or an
    online W&B run), stream from the network, or run PEFT adapters, sample weighting, reward
    models and image augmentation."""

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    """The demonstrations: `--dataset.root=<dir>` and optionally `--dataset.episodes=[0,1]`."""
    policy: PreTrainedConfig | None = None
    """What to train: `--policy.type=act|diffusion|smolvla|pi0|pi05` and its settings (`--policy.dim_model=...`),
    or a checkpoint to fine-tune (`--policy.path=...`)."""
    env: EnvConfig | None = None
    """Where to evaluate during training (`--env.type=metaworld --env.task=reach-v3`); none: no eval."""
    reward_model: RewardModelConfig | None = None
    """LeRobot's reward-model training; refused (not in this build)."""
    eval: EvalConfig = field(default_factory=lambda: EvalConfig(max_episodes_rendered=2))
    """Episodes (LeRobot's 50 per task), batch size and videos of each in-training evaluation."""
    rename_map: dict[str, str] = field(default_factory=dict)
    """Rename dataset (and in-loop eval) observation keys to the policy's, e.g.
    '{"observation.images.image": "observation.images.camera1"}'."""
    output_dir: Path | None = field(
        default=None,
        metadata=facts(result_neutral=True, shown_default="outputs/train/<date>/<time>_<job_name>"),
    )
    """Checkpoints go to <output_dir>/checkpoints/<step>/, evaluations to <output_dir>/eval/step_<N>/;
    default outputs/train/<date>/<time>_<job_name>."""
    job_name: str | None = field(default=None, metadata=facts(result_neutral=True))
    """Name of this run; default the policy type."""
    resume: bool = False
    """Continue the run in --output_dir from its last checkpoint (weights, optimizer, step, random
    states): it draws the same batches an uninterrupted run would."""
    seed: int = 1000
    """Seeds torch (weights, batches) and the evaluation episodes."""
    cudnn_deterministic: bool = False
    """Use deterministic cuDNN kernels (reproducible on GPU, often 10-20% slower); false lets
    cuDNN pick the fastest ones, as LeRobot does."""
    num_workers: int = field(default=4, metadata=facts(result_neutral=True))
    """Data-loader worker processes preparing batches; 0 prepares them in the training process."""
    batch_size: int = 8
    """Training samples per optimizer step."""
    prefetch_factor: int = field(default=4, metadata=facts(result_neutral=True))
    """Batches each data-loader worker prepares ahead."""
    persistent_workers: bool = field(default=True, metadata=facts(result_neutral=True))
    """Keep the data-loader workers alive between passes over the dataset."""
    dataloader_multiprocessing_context: str | None = field(
        default="spawn", metadata=facts(result_neutral=True)
    )
    """How data-loader workers start: spawn (safe with video decoders), fork, forkserver, or
    null for the platform's default."""
    steps: int = 100_000
    """Optimizer steps in total."""
    env_eval_freq: int = 20_000
    """Evaluate in the simulator every N steps (and at the last step); 0 disables it."""
    eval_freq: int | None = None
    """LeRobot's older name of --env_eval_freq (wins when given)."""
    log_freq: int = field(default=200, metadata=facts(result_neutral=True))
    """Log loss and throughput every N steps."""
    eval_steps: int = 0
    """Compute the loss on the episodes --dataset.eval_split holds out every N steps; 0 disables it."""
    max_eval_samples: int = 0
    """At most this many held-out samples per evaluation-loss pass, split evenly across tasks;
    0 uses them all."""
    tolerance_s: float = 1e-4
    """How far (in seconds) a frame's timestamp may be from a multiple of 1/fps before the
    dataset is refused."""
    save_checkpoint: bool = True
    """Save checkpoints at all (false: none, not even the last)."""
    save_freq: int = 20_000
    """Save a checkpoint every N steps and after the last one; 0 or less: the last one only."""
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
    """Logging to Weights & Biases, offline only (a local run folder to `wandb sync` later)."""
    peft: PeftConfig | None = None
    """LeRobot's PEFT adapters; refused (not in this build)."""
    job: JobConfig = field(default_factory=JobConfig)
    """Where the run happens: this machine (HF Jobs are refused)."""
    save_checkpoint_to_hub: bool = False
    """LeRobot pushes every checkpoint to --policy.repo_id; true is refused: this build never
    uploads (`hf upload` <output_dir>/checkpoints/<step> yourself)."""
    sample_weighting: SampleWeightingConfig | None = None
    """LeRobot's per-sample loss weights (RA-BC); refused (not in this build)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = field(
        default="INFO", metadata=facts(result_neutral=True)
    )
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
        source = (
            f"--dataset.root={self.dataset.root}"
            if self.dataset.root
            else f"--dataset.repo_id={self.dataset.repo_id}"
        )
        require_extra(source, "train", DATASET_MODULES)
        if not isinstance(self.seed, int):  # LeRobot's null: no seeding
            raise ConfigError(
                f"--seed={flag_value(self.seed)}: this build always seeds (runs are reproducible); pass an integer, e.g. 1000"
            )
        self._check_counts()
        self._check_data_loading()
        if self.eval_freq is not None:
            self.env_eval_freq = self.eval_freq
        if self.env_eval_freq < 0:
            raise ConfigError(f"--env_eval_freq={self.env_eval_freq}: must be 0 or a positive integer")
        self._refuse_uploads()
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
        self._resolve_output_dir()

    def _check_counts(self) -> None:
        for flag, value in (
            ("steps", self.steps),
            ("batch_size", self.batch_size),
            ("log_freq", self.log_freq),
        ):
            if value <= 0:
                raise ConfigError(f"--{flag}={value}: must be a positive integer")
        for flag, value in (("eval_steps", self.eval_steps), ("max_eval_samples", self.max_eval_samples)):
            if value < 0:
                raise ConfigError(f"--{flag}={value}: must be 0 (off) or a positive integer")
        if self.eval_steps > 0 and self.dataset.eval_split == 0.0:
            raise ConfigError(
                f"--eval_steps={self.eval_steps}: needs held-out episodes; add --dataset.eval_split=0.1 (or another fraction)"
            )
        if self.tolerance_s < 0:
            raise ConfigError(f"--tolerance_s={self.tolerance_s}: must be 0 or more seconds")

    def _check_data_loading(self) -> None:
        if self.num_workers < 0:
            raise ConfigError(f"--num_workers={self.num_workers}: must be 0 or a positive integer")
        if self.prefetch_factor < 1:
            raise ConfigError(f"--prefetch_factor={self.prefetch_factor}: must be a positive integer")
        methods = multiprocessing.get_all_start_methods()
        context = self.dataloader_multiprocessing_context
        if context is not None and context not in methods:
            raise ConfigError(
                f"--dataloader_multiprocessing_context={context}: this platform starts processes by "
                f"{', '.join(methods)}; choose one, or null for its default"
            )

    def _refuse_uploads(self) -> None:
        """What LeRobot pushes to the hub: refused, with how to upload the files yourself.
        --policy.push_to_hub=true without a --policy.repo_id is accepted (LeRobot refuses it):
        there is nowhere to push, and every policy's config says true unless told otherwise."""
        repo_id = self.policy.repo_id
        if self.policy.push_to_hub and repo_id is not None:
            raise ConfigError(
                f"--policy.repo_id={repo_id}: this build never uploads; pass --policy.push_to_hub=false "
                f"and upload <output_dir>/checkpoints/last/pretrained_model with `hf upload {repo_id} <dir>`"
            )
        if self.save_checkpoint_to_hub:
            raise ConfigError(
                "--save_checkpoint_to_hub=true: this build never uploads; drop the flag and upload "
                "<output_dir>/checkpoints/<step> with `hf upload <repo_id> <dir>`"
            )

    def _resolve_output_dir(self) -> None:
        if self.job_name is None:
            self.job_name = self.policy.type
        check_job_name(self.job_name)
        if self.output_dir is None:
            now = dt.datetime.now()
            self.output_dir = Path("outputs/train") / f"{now:%Y-%m-%d}" / f"{now:%H-%M-%S}_{self.job_name}"
        self.output_dir = Path(self.output_dir)
        if self.output_dir.exists() and not self.output_dir.is_dir():
            raise ConfigError(f"--output_dir={self.output_dir}: is a file; give a directory")
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
    "measure_batch_size": "only lerobot-eval measures batch sizes; in-training evaluation uses the batch it is given",
}


def _refuse_run_level_eval_flags(eval_cfg: EvalConfig) -> None:
    defaults = EvalConfig(n_episodes=1)
    for name, reason in _NOT_IN_TRAINING.items():
        value = getattr(eval_cfg, name)
        if value != getattr(defaults, name):
            raise ConfigError(f"--eval.{name}={value}: not used by lerobot-train ({reason}); remove it")
