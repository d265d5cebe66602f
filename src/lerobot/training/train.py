"""The training loop: read batches, step the optimizer, log, save, evaluate in the loop.

In-loop evaluation runs exactly what `lerobot-eval` runs (`run_evaluation` with the local
backend on fresh envs, same seeds, same `--eval.*` settings, a hung worker replaced after
`--eval.step_timeout_s`, the same files with provenance), with the in-memory policy and
processors; the envs are closed before training continues, so no simulator worker or GL
context outlives an evaluation.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch._dynamo  # noqa: F401  (see below)

from lerobot.configs.checkpoint import PREPROCESSOR_FILE
from lerobot.configs.fields import changed_settings, result_neutral_keys
from lerobot.configs.optim import AdamConfig, AdamWConfig, OptimizerConfig, SGDConfig
from lerobot.configs.policies import CheckpointPolicyConfig
from lerobot.configs.train import TrainPipelineConfig
from lerobot.configs.types import FeatureType, NormalizationMode
from lerobot.datasets.reader import EpisodeFrames, load_episodes
from lerobot.evaluation.evaluate import make_local_backend, run_evaluation
from lerobot.evaluation.results import UnreadableResultsError, load_run
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.store.output_dir import RunOutput, encode_config
from lerobot.policies.checkpoint import load_weights
from lerobot.policies.factory import make_policy, policy_class
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.processor.normalize import Normalizer
from lerobot.processor.policy_processors import PolicyPostprocessor, PolicyPreprocessor, read_task_steps
from lerobot.training.batches import (
    EpochOrder,
    InOrder,
    LoaderSettings,
    StepBatches,
    Windows,
    compute_stats,
    dataset_features,
    make_loader,
    rename_frames,
    use_imagenet_stats,
    window_offsets,
)
from lerobot.training.checkpoints import (
    PRETRAINED_DIR,
    TRAIN_CONFIG_FILE,
    TRAINING_STATE_DIR,
    checkpoint_dir,
    checkpoint_problem,
    load_training_state,
    numbered_checkpoints,
    remove_unfinished_writes,
    save_checkpoint,
)
from lerobot.utils.constants import ACTION
from lerobot.utils.device_utils import resolve_device
from lerobot.utils.errors import ConfigError, ResultsWriteError
from lerobot.utils.io import cannot_write
from lerobot.utils.signals import signals_deferred, stop_at_the_next_signal

logger = logging.getLogger(__name__)

# torch's optimizers import torch._dynamo, and with it triton, when the first one is built;
# triton's import crashes (SIGSEGV) in a process that already holds an EGL context, as after an
# in-process evaluation or recording. Importing it with this module, before any GL, avoids that.


@dataclass
class Trainee:
    """The policy under training, with the statistics and processors that go with it."""

    policy: PreTrainedPolicy
    stats: dict[str, dict[str, torch.Tensor]]
    normalizer: Normalizer
    task_steps: list = field(default_factory=list)
    """Instruction steps (newline, tokenizer) of language-conditioned policies; saved with
    every checkpoint."""

    def processors(self) -> tuple[PolicyPreprocessor, PolicyPostprocessor]:
        cfg = self.policy.config
        cameras = cfg.image_features if cfg.blank_cameras_in_preprocessor else {}
        preprocessor = PolicyPreprocessor(self.normalizer, cameras, 0, task_steps=self.task_steps)
        return preprocessor, PolicyPostprocessor(self.normalizer)

    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        batch = self.normalizer.normalize(batch)
        batch[ACTION] = self.normalizer.normalize_action(batch[ACTION])
        for step in self.task_steps:
            batch = step(batch)
        return self.policy.forward(batch)


@dataclass
class TrainResult:
    """What a run ended with."""

    last_step: int
    last_loss: float | None
    checkpoints: list[Path] = field(default_factory=list)
    eval_success: dict[int, float] = field(default_factory=dict)
    """Step -> overall success rate in percent, for every in-loop evaluation with a rate."""
    incomplete_evals: list[int] = field(default_factory=list)
    """Steps whose in-loop evaluation had episodes fail for the harness (an env that could
    not start, say): their rates leave those out, or there is none; the run is incomplete."""
    trainee: Trainee | None = None
    """The trained policy with its statistics, as it is in memory at the end."""


def train(cfg: TrainPipelineConfig) -> TrainResult:
    """Train cfg.policy on cfg.dataset for cfg.steps steps (from the last checkpoint with --resume)."""
    torch.manual_seed(cfg.seed)
    set_backend_flags(cfg.cudnn_deterministic)
    frames = load_episodes(
        dataset_root(cfg), cfg.dataset.episodes, cfg.dataset.frame_cache_dir, cfg.tolerance_s
    )
    frames = rename_frames(frames, cfg.rename_map)
    trainee = build_trainee(cfg, frames)
    frames, held_out = split_held_out(frames, cfg.dataset.eval_split)
    logger.info(
        "dataset: %d episodes, %d frames at %d fps%s",
        len(frames.episode_lengths),
        frames.n_frames,
        frames.fps,
        f"; {len(held_out.episode_lengths)} episodes held out" if held_out is not None else "",
    )
    device = resolve_device(cfg.policy.device)
    policy = trainee.policy.to(device)
    optimizer, scheduler = make_optimizer(cfg, policy)
    done = resume(cfg, policy, optimizer, scheduler) if cfg.resume else 0
    if done > cfg.steps:
        raise ConfigError(
            f"--steps={cfg.steps}: the run in --output_dir={cfg.output_dir} is already at step {done}; "
            f"pass --steps={done} or more to continue it"
        )
    windows = Windows(frames, list(cfg.policy.input_features), *window_offsets(cfg.policy))
    order = EpochOrder(frames, cfg.seed, getattr(cfg.policy, "drop_n_last_frames", 0))
    settings = loader_settings(cfg, device)
    loader = make_loader(windows, StepBatches(order, cfg.batch_size, done, cfg.steps), settings)
    held_out_loss = HeldOutLoss.of(cfg, held_out, settings) if held_out is not None else None
    wandb_run = start_wandb(cfg)
    result = TrainResult(last_step=done, last_loss=None, trainee=trainee)
    logger.info(
        "training %s (%d parameters) on %s for steps %d..%d",
        cfg.policy.type,
        n_parameters(policy),
        device,
        done + 1,
        cfg.steps,
    )
    policy.train()
    if done and cfg.evaluate_now(done) and not evaluation_finished(cfg.output_dir, done):
        logger.info("step %d: its evaluation did not finish before the run stopped; running it again", done)
        evaluate_and_record(cfg, trainee, done, wandb_run, device, result)
    started, samples_since, saved_step = time.perf_counter(), 0, done
    try:
        for step, rows_batch in enumerate(loader, start=done + 1):
            # A stop signal waits while a step updates the weights and a checkpoint is written:
            # a stopped run always has a whole step to save.
            with signals_deferred():
                batch = windows.on_device(rows_batch, device)
                loss, info = trainee.loss(batch)
                grad_norm = optimization_step(
                    loss, policy, optimizer, scheduler, cfg.optimizer.grad_clip_norm
                )
                samples_since += len(batch[ACTION])
                result.last_step, result.last_loss = step, float(loss.detach())
                if step % cfg.log_freq == 0 or step == cfg.steps:
                    elapsed = time.perf_counter() - started
                    log_step(
                        step,
                        result.last_loss,
                        info,
                        scheduler.get_last_lr()[0],
                        samples_since / elapsed,
                        wandb_run,
                        float(grad_norm),
                    )
                    started, samples_since = time.perf_counter(), 0
                if held_out_loss is not None and cfg.eval_steps > 0 and step % cfg.eval_steps == 0:
                    held_out_loss.log(trainee, device, step, wandb_run)
                if cfg.save_now(step):
                    path = save_state(cfg, trainee, optimizer, scheduler, step)
                    result.checkpoints.append(path)
                    saved_step = step
                    logger.info("step %d: checkpoint saved to %s", step, path)
            if cfg.evaluate_now(step):
                evaluate_and_record(cfg, trainee, step, wandb_run, device, result)
                started, samples_since = time.perf_counter(), 0
    except KeyboardInterrupt:  # SIGINT; SIGTERM too under lerobot-train (utils.signals.Interrupted)
        stop_at_the_next_signal()
        if result.last_step > saved_step:
            path = save_state(cfg, trainee, optimizer, scheduler, result.last_step)
            result.checkpoints.append(path)
            logger.warning("stopped: step %d saved to %s; --resume=true continues", result.last_step, path)
        raise
    if wandb_run is not None:
        wandb_run.finish()
    return result


def save_state(cfg: TrainPipelineConfig, trainee: Trainee, optimizer, scheduler, step: int) -> Path:
    """Checkpoint `step`, with the run's flags for LeRobot's `--config_path=... --resume=true`.

    A write that fails (disk full, file too large, read-only) is one line naming the
    checkpoint; `last` still points at the previous whole checkpoint, which resume uses."""
    try:
        return save_checkpoint(
            cfg.output_dir,
            step,
            trainee.policy,
            trainee.stats,
            optimizer,
            scheduler,
            task_steps=trainee.task_steps,
            train_config=encode_config(cfg),
        )
    except ResultsWriteError:
        raise
    except OSError as exc:
        raise cannot_write(checkpoint_dir(cfg.output_dir, step), exc) from None


def set_backend_flags(cudnn_deterministic: bool) -> None:
    """LeRobot's numerics settings: cuDNN autotuning unless --cudnn_deterministic=true, and
    TF32 matrix products on Ampere and later GPUs (no effect on the CPU)."""
    torch.backends.cudnn.deterministic = cudnn_deterministic
    torch.backends.cudnn.benchmark = not cudnn_deterministic
    torch.backends.cuda.matmul.allow_tf32 = True


def loader_settings(cfg: TrainPipelineConfig, device: torch.device) -> LoaderSettings:
    return LoaderSettings(
        num_workers=cfg.num_workers,
        prefetch_factor=cfg.prefetch_factor,
        persistent_workers=cfg.persistent_workers,
        multiprocessing_context=cfg.dataloader_multiprocessing_context,
        pin_memory=device.type == "cuda",
    )


def split_held_out(frames: EpisodeFrames, eval_split: float) -> tuple[EpisodeFrames, EpisodeFrames | None]:
    """(training episodes, held-out episodes) as LeRobot splits them with --dataset.eval_split:
    the last ceil(n x eval_split) of each task's n episodes are held out (an episode's task is
    its first frame's)."""
    if eval_split <= 0:
        return frames, None
    by_task: dict[int, list[int]] = {}
    task_of_episode = (
        frames.task_indices[frames.episode_starts]
        if frames.task_indices is not None
        else np.zeros(len(frames.episode_starts), dtype=np.int64)
    )
    for episode, task in zip(frames.episode_indices, task_of_episode, strict=True):
        by_task.setdefault(int(task), []).append(int(episode))
    held_out = [
        e
        for episodes in by_task.values()
        for e in episodes[len(episodes) - math.ceil(len(episodes) * eval_split) :]
    ]
    kept = [int(e) for e in frames.episode_indices if int(e) not in set(held_out)]
    if not kept:
        raise ConfigError(
            f"--dataset.eval_split={eval_split}: holds out all {len(frames.episode_indices)} episodes; "
            "nothing is left to train on"
        )
    return frames.select(kept), frames.select(held_out)


@dataclass
class HeldOutLoss:
    """The loss on held-out episodes (--dataset.eval_split), every --eval_steps, as LeRobot
    computes it: the mean over consecutive batches of the held-out frames (with
    --max_eval_samples, the first max_eval_samples / n_tasks frames of each task), without
    gradients, in eval mode."""

    windows: Windows
    loader: torch.utils.data.DataLoader

    @classmethod
    def of(cls, cfg: TrainPipelineConfig, frames: EpisodeFrames, settings: LoaderSettings) -> HeldOutLoss:
        windows = Windows(frames, list(cfg.policy.input_features), *window_offsets(cfg.policy))
        rows = held_out_rows(frames, cfg.max_eval_samples)
        return cls(windows, make_loader(windows, InOrder(rows, cfg.batch_size), settings))

    def log(self, trainee: Trainee, device: torch.device, step: int, wandb_run: Any) -> float:
        # Its own copy of the random states (diffusion noise): training goes on as without it.
        trainee.policy.eval()
        losses = []
        try:
            with torch.no_grad(), torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                for rows_batch in self.loader:
                    loss, _ = trainee.loss(self.windows.on_device(rows_batch, device))
                    losses.append(float(loss))
        finally:
            trainee.policy.train()
        value = sum(losses) / max(len(losses), 1)
        logger.info("step %d: eval_loss=%.4f over %d held-out batches", step, value, len(losses))
        if wandb_run is not None:
            wandb_run.log({"eval/eval_loss": value}, step=step)
        return value


def held_out_rows(frames: EpisodeFrames, max_samples: int) -> np.ndarray:
    """Every held-out row in order; with `max_samples` > 0, the first max_samples // n_tasks
    rows of each task (at least one), task by task, as LeRobot's --max_eval_samples picks them."""
    rows = np.arange(frames.n_frames)
    if max_samples <= 0 or frames.task_indices is None:
        return rows
    tasks = np.unique(frames.task_indices)
    per_task = max(1, max_samples // len(tasks))
    return np.concatenate([rows[frames.task_indices == t][:per_task] for t in tasks])


def dataset_root(cfg: TrainPipelineConfig) -> Path:
    """--dataset.root, else the hub cache's snapshot of --dataset.repo_id (fetched when online)."""
    if cfg.dataset.root is not None:
        return cfg.dataset.root
    from lerobot.datasets.hub import resolve_dataset_repo

    return resolve_dataset_repo(cfg.dataset.repo_id, cfg.dataset.revision)


def check_declared_inputs(policy_cfg: CheckpointPolicyConfig, dataset_inputs: dict[str, Any]) -> None:
    """Inputs the policy declares (its checkpoint's, or --policy.input_features) must be the
    dataset's, with the dataset's shapes: otherwise it would train on other data than its
    config.json says (images may differ in size when the policy's processor resizes them; up to
    --policy.empty_cameras cameras may be missing), or fail after minutes of training."""
    flag = "--policy.path" if policy_cfg.pretrained_path is not None else "--policy.input_features"
    missing_cameras = 0
    for key, feature in policy_cfg.input_features.items():
        given = dataset_inputs.get(key)
        if (
            given is None
            and feature.type is FeatureType.VISUAL
            and missing_cameras < policy_cfg.empty_cameras
        ):
            missing_cameras += 1
            continue
        if given is None:
            raise ConfigError(
                f"{flag}: the policy reads {key}, which the dataset lacks (it has {', '.join(dataset_inputs)}); "
                "map dataset keys to the policy's with --rename_map"
            )
        resized = feature.type is FeatureType.VISUAL and policy_cfg.resizes_images()
        same = tuple(given.shape) == tuple(feature.shape) or (resized and given.shape[0] == feature.shape[0])
        if not same:
            shape = "x".join(map(str, feature.shape))
            raise ConfigError(
                f"{flag}: {key} is {shape} for the policy and {'x'.join(map(str, given.shape))} in the dataset; "
                "declare the dataset's shape (or leave --policy.input_features out to take it)"
            )


def build_trainee(cfg: TrainPipelineConfig, frames: EpisodeFrames) -> Trainee:
    """The policy to train: a fresh one whose features are the dataset's (those the env also
    provides), or, with --policy.path, the checkpoint's weights, inputs and instruction steps
    with the dataset's actions (as LeRobot fine-tunes). Statistics always come from the dataset."""
    policy_cfg: CheckpointPolicyConfig = cfg.policy
    inputs, outputs = dataset_features(frames)
    if cfg.env is not None and not policy_cfg.input_features:
        env_features = {cfg.rename_map.get(k, k): ft for k, ft in cfg.env.policy_features().items()}
        inputs = matching_env_inputs(inputs, env_features, policy_cfg)
    if not policy_cfg.input_features:
        policy_cfg.input_features = inputs
    else:
        check_declared_inputs(policy_cfg, inputs)
    if policy_cfg.pretrained_path is not None or not policy_cfg.output_features:
        policy_cfg.output_features = outputs
    policy_cfg.__post_init__()  # re-validate now that the features are known
    if policy_cfg.pretrained_path is not None:
        policy = make_policy(policy_cfg)
        logger.info("fine-tuning the weights of %s", policy_cfg.pretrained_path)
    else:
        policy = policy_class(policy_cfg.type)(policy_cfg)
    stats = {
        key: s
        for key, s in compute_stats(frames).items()
        if key in {**policy_cfg.input_features, **policy_cfg.output_features}
    }
    if cfg.dataset.use_imagenet_stats:
        use_imagenet_stats(stats, [k for k in frames.images if k in policy_cfg.input_features])
    norm_map = {FeatureType(k): NormalizationMode(v) for k, v in policy_cfg.normalization_mapping.items()}
    normalizer = Normalizer({**policy_cfg.input_features, **policy_cfg.output_features}, norm_map, stats)
    return Trainee(policy, stats, normalizer, trainee_task_steps(policy_cfg))


def trainee_task_steps(policy_cfg: CheckpointPolicyConfig) -> list:
    """A checkpoint's saved instruction steps (LeRobot fine-tunes with its pretrained
    pipeline), else those of a fresh policy of this type."""
    if policy_cfg.pretrained_path is not None:
        directory = Path(policy_cfg.pretrained_path)
        if (directory / PREPROCESSOR_FILE).is_file():
            return read_task_steps(directory, PREPROCESSOR_FILE)
    return policy_cfg.task_steps()


def matching_env_inputs(
    inputs: dict, env_features: dict, policy_cfg: CheckpointPolicyConfig | None = None
) -> dict:
    """The dataset inputs the env provides; an image size mismatch is an error, not a surprise
    (unless the policy resizes its images itself, as SmolVLA does)."""
    kept = {key: ft for key, ft in inputs.items() if key in env_features}
    if getattr(policy_cfg, "resize_imgs_with_padding", None) is not None:
        return kept
    for key, feature in kept.items():
        if feature.type is FeatureType.VISUAL and tuple(env_features[key].shape) != tuple(feature.shape):
            _, height, width = feature.shape
            raise ConfigError(
                f"{key}: the dataset's frames are {height}x{width}, the env renders "
                f"{env_features[key].shape[1]}x{env_features[key].shape[2]}; pass "
                f"--env.observation_height={height} --env.observation_width={width}"
            )
    return kept


def make_optimizer(cfg: TrainPipelineConfig, policy: PreTrainedPolicy):
    """The optimizer and schedule `cfg` resolved (the policy's preset, or --optimizer.* and
    --scheduler.*), over the policy's parameter groups with its preset (ACT's backbone at its
    own rate), else all its parameters, as LeRobot builds them."""
    params = policy.get_optim_params() if cfg.use_policy_training_preset else policy.parameters()
    optimizer = build_optimizer(cfg.optimizer, params)
    schedule = cfg.scheduler
    factor = (
        (lambda step: schedule.lr_factor(step, cfg.steps)) if schedule is not None else (lambda step: 1.0)
    )
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class DivergedError(ConfigError):
    """The loss or its gradient became NaN or inf: settings or data the user can change, told
    in one line (exit 2) instead of a run that goes on training NaN weights."""


def optimization_step(
    loss: torch.Tensor,
    policy: PreTrainedPolicy,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    grad_clip_norm: float,
) -> torch.Tensor:
    """One step on `loss`, as LeRobot takes it: backward, the gradient's global norm clipped to
    `grad_clip_norm` (not clipped when 0 or less), the optimizer's step, the schedule's; the
    norm before clipping."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    limit = grad_clip_norm if grad_clip_norm > 0 else float("inf")
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), limit)
    if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):
        # Before the step: the weights stay finite, and so does every checkpoint.
        raise DivergedError(
            f"the loss ({float(loss):g}) or its gradient ({float(grad_norm):g}) is not finite; training "
            "stopped, checkpoints/last holds the last finite weights (lower --policy.optimizer_lr, or check "
            "the dataset)"
        )
    optimizer.step()
    scheduler.step()
    return grad_norm


def build_optimizer(opt: OptimizerConfig, params: Any) -> torch.optim.Optimizer:
    """torch's optimizer of `opt`'s type with its fields (the clip norm is the loop's)."""
    if isinstance(opt, AdamConfig):
        return torch.optim.Adam(
            params, lr=opt.lr, betas=opt.betas, eps=opt.eps, weight_decay=opt.weight_decay
        )
    if isinstance(opt, AdamWConfig):
        return torch.optim.AdamW(
            params, lr=opt.lr, betas=opt.betas, eps=opt.eps, weight_decay=opt.weight_decay
        )
    if isinstance(opt, SGDConfig):
        return torch.optim.SGD(
            params,
            lr=opt.lr,
            momentum=opt.momentum,
            dampening=opt.dampening,
            nesterov=opt.nesterov,
            weight_decay=opt.weight_decay,
        )
    raise ConfigError(f"--optimizer.type={opt.type}: not one this build trains with (adam, adamw, sgd)")


def resume(cfg: TrainPipelineConfig, policy: PreTrainedPolicy, optimizer, scheduler) -> int:
    """Load the last checkpoint: weights, optimizer, schedule, step and the random states, so the
    run goes on drawing the batches and noise an uninterrupted run would have drawn."""
    freed = remove_unfinished_writes(Path(cfg.output_dir))
    if freed:
        logger.info("--resume=true: removed %.0f MB of checkpoint writes a stop cut short", freed / 2**20)
    chosen = usable_checkpoint(Path(cfg.output_dir))
    if chosen is None:
        logger.warning(
            "--resume=true: %s holds no complete checkpoint (the run stopped before its first was "
            "written); training starts from step 0",
            cfg.output_dir,
        )
        return 0
    check_resumed_settings(cfg, chosen / PRETRAINED_DIR / TRAIN_CONFIG_FILE)
    load_weights(policy, chosen / PRETRAINED_DIR)
    step = load_training_state(chosen / TRAINING_STATE_DIR, optimizer, scheduler)
    logger.info("resumed from %s at step %d", chosen, step)
    return step


RESUME_MAY_CHANGE = (
    "steps",
    "save_freq",
    "save_checkpoint",
    "env_eval_freq",
    "eval_freq",
    "log_freq",
    "eval_steps",
    "max_eval_samples",
    "tolerance_s",
    "resume",
    "policy.device",
    "dataset.frame_cache_dir",
    "eval.",
    "env.",
    "wandb.",
    "job.",
)
"""Settings a resumed training may change (prefixes end with a dot): they decide how long it
runs, what it logs, saves and evaluates, and where; not what a step trains. The
result-neutral fields (output dir, data-loader workers) may change too."""


def resume_may_change(key: str) -> bool:
    return any(key == name or (name.endswith(".") and key.startswith(name)) for name in RESUME_MAY_CHANGE)


def check_resumed_settings(cfg: TrainPipelineConfig, saved_path: Path) -> None:
    """Refuse, in one line naming each, the flags whose change would make the resumed run
    train something else than the run it continues (learning rate, batch size, episodes, the
    policy's shape, the seed); list the others as a notice. A checkpoint without its saved
    flags (an older one) is resumed as it is."""
    try:
        saved = json.loads(saved_path.read_text())
    except (OSError, ValueError):
        return
    neutral = result_neutral_keys(TrainPipelineConfig)
    changes = changed_settings(saved, encode_config(cfg))
    refused = [
        f"--{key}: was {was!r}, now {now!r}"
        for key, (was, now) in changes.items()
        if key not in neutral and not resume_may_change(key)
    ]
    if refused:
        raise ConfigError(
            f"--resume=true: {'; '.join(refused)} (the run in --output_dir={cfg.output_dir} trained "
            "with the former); pass them as before, or train into a new --output_dir"
        )
    noted = [
        f"--{key}: {was!r} -> {now!r}"
        for key, (was, now) in changes.items()
        if key not in neutral and key != "resume"
    ]
    if noted:
        logger.info("--resume=true with changed settings: %s", "; ".join(noted))


def usable_checkpoint(output_dir: Path) -> Path | None:
    """The newest complete checkpoint; those after it (cut short by a kill, or damaged) are
    named and skipped: the run redoes their steps and writes them again."""
    for directory in numbered_checkpoints(output_dir):
        problem = checkpoint_problem(directory)
        if problem is None:
            return directory
        logger.warning("checkpoint %s is not usable: %s; trying the one before", directory, problem)
    return None


@dataclass(frozen=True)
class InLoopEval:
    """What one in-training evaluation gave: its success rate (None: no episode ran to its
    end) and whether every episode did (episodes the harness failed are left out of the rate)."""

    pc_success: float | None
    complete: bool


def evaluate_and_record(
    cfg: TrainPipelineConfig,
    trainee: Trainee,
    step: int,
    wandb_run: Any,
    device: torch.device,
    result: TrainResult,
) -> None:
    """The in-loop evaluation at `step`, its rate (or its incompleteness) noted in `result`.

    It draws from its own copy of the random states: training continues with the draws it
    would have made without it, as a run resumed from this step does."""
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        evaluated = evaluate_in_loop(cfg, trainee, step, wandb_run)
    if evaluated.pc_success is not None:
        result.eval_success[step] = evaluated.pc_success
    if not evaluated.complete:
        result.incomplete_evals.append(step)


def evaluation_finished(output_dir: Path, step: int) -> bool:
    """Whether the in-loop evaluation at `step` ran to its end: a run stopped during it (a
    signal, a kill) left no eval_info.json, or one saying it is incomplete; resume redoes it."""
    try:
        return load_run(in_loop_eval_dir(output_dir, step)).complete
    except (OSError, UnreadableResultsError):
        return False


def in_loop_eval_dir(output_dir: Path, step: int) -> Path:
    """Where the in-loop evaluation at `step` writes what a lerobot-eval output dir holds."""
    return Path(output_dir) / "eval" / f"step_{step}"


def evaluate_in_loop(cfg: TrainPipelineConfig, trainee: Trainee, step: int, wandb_run: Any) -> InLoopEval:
    """Evaluate the current policy as lerobot-eval would; results under eval/step_<N>/, with
    the training's config as their provenance (a resumed training redoes the step's evaluation)."""
    out = in_loop_eval_dir(cfg.output_dir, step)
    preprocessor, postprocessor = trainee.processors()
    settings = RolloutSettings.from_config(
        cfg.eval,
        cfg.seed,
        use_amp=cfg.policy.use_amp,
        rename_map=cfg.rename_map,
        videos_dir=out / "videos",
        preprocessor=preprocessor,
        postprocessor=postprocessor,
    )
    backend = make_local_backend(trainee.policy, settings, cfg.env, cfg.eval)
    output = RunOutput(out, encode_config(cfg), overwrite=True, program="lerobot-train")
    trainee.policy.eval()
    try:
        run = run_evaluation(RunPlan.from_config(cfg.env.tasks(), cfg.eval), backend, output)
    finally:
        trainee.policy.train()
    complete = run.complete and not run.n_episodes_failed
    if not complete:
        reasons = [e.failure_reason for task in run.tasks for e in task.episodes if e.failure_reason]
        logger.warning(
            "step %d: eval incomplete: %d episodes failed for the harness (%s); results in %s",
            step,
            run.n_episodes_failed,
            reasons[0] if reasons else "stopped",
            out,
        )
    if not run.overall.n_episodes:
        return InLoopEval(None, complete)
    success = 100 * run.overall.success_rate
    logger.info(
        "step %d: eval success %.1f%% over %d episodes (%s)", step, success, run.overall.n_episodes, out
    )
    if wandb_run is not None:
        wandb_run.log({"eval/pc_success": success}, step=step)
    return InLoopEval(success, complete)


def log_step(
    step: int,
    loss: float,
    info: dict[str, Any],
    lr: float,
    samples_per_s: float,
    wandb_run: Any,
    grad_norm: float,
) -> None:
    info = {k: v for k, v in info.items() if isinstance(v, int | float)}  # π's loss_per_dim is a list
    details = " ".join(f"{k}={v:.4f}" for k, v in info.items())
    logger.info(
        "step %d: loss=%.4f %s grad_norm=%.3f lr=%.2e %.1f samples/s",
        step,
        loss,
        details,
        grad_norm,
        lr,
        samples_per_s,
    )
    if wandb_run is not None:
        wandb_run.log(
            {
                "train/loss": loss,
                "train/lr": lr,
                "train/samples_per_s": samples_per_s,
                **{f"train/{k}": v for k, v in info.items()},
            },
            step=step,
        )


def start_wandb(cfg: TrainPipelineConfig) -> Any:
    """A Weights & Biases run with LeRobot's settings (entity, notes, run id, tags, the whole
    config), kept in a local folder under --output_dir (offline: this build never uploads).
    --resume=true continues --wandb.run_id, else the run the output directory last held."""
    if not cfg.wandb.enable:
        return None
    try:
        import wandb
    except ImportError:
        raise ConfigError("--wandb.enable=true: wandb is not installed; pip install wandb") from None
    run_id = cfg.wandb.run_id or (previous_wandb_run(cfg.output_dir) if cfg.resume else None)
    return wandb.init(
        id=run_id,
        project=cfg.wandb.project,
        entity=cfg.wandb.entity,
        name=cfg.job_name,
        notes=cfg.wandb.notes,
        tags=wandb_tags(cfg) if cfg.wandb.add_tags else None,
        dir=str(cfg.output_dir),
        config=encode_config(cfg),
        job_type="train_eval",
        mode=cfg.wandb.mode,
        resume="must" if run_id is not None else None,
    )


def wandb_tags(cfg: TrainPipelineConfig) -> list[str]:
    """What LeRobot tags a run with: policy, seed, dataset, env (W&B takes 64 characters)."""
    tags = [f"policy:{cfg.policy.type}", f"seed:{cfg.seed}"]
    if cfg.dataset.repo_id is not None:
        tags.append(f"dataset:{cfg.dataset.repo_id}")
    if cfg.env is not None:
        tags.append(f"env:{cfg.env.type}")
    return [tag[:64] for tag in tags]


def previous_wandb_run(output_dir: Path) -> str | None:
    """The id of the run <output_dir>/wandb/latest-run holds (run-<date>-<id>), if any."""
    latest = Path(output_dir) / "wandb" / "latest-run"
    if not latest.exists():
        return None
    return latest.resolve().name.rsplit("-", 1)[-1]


def n_parameters(policy: torch.nn.Module) -> int:
    return sum(p.numel() for p in policy.parameters())
