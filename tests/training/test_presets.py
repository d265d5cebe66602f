"""lerobot-train trains with LeRobot 0.6.1's preset for each policy type: the same optimizer,
parameter groups, learning-rate schedule and clipping, so the same weights after the same steps.

tests/fixtures/training/<name>.safetensors holds what LeRobot 0.6.1 did with its own classes on
the reference checkpoint of tests/fixtures/policies/<name> (scripts/make_training_fixtures.py):
every group's rate over a short run, the losses and the parameters after three steps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.optim import AdamConfig, AdamWConfig, DiffuserSchedulerConfig
from lerobot.configs.parser import CliError, parse_config
from lerobot.configs.policies import PreTrainedConfig
from lerobot.configs.train import DatasetConfig, TrainPipelineConfig
from lerobot.policies.factory import get_policy_class
from lerobot.training.train import make_optimizer, optimization_step
from tests.policies.checkpoints import expected, materialize
from tests.training.fixture_batches import training_batch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "training"
N_LR_STEPS, N_TRAIN_STEPS, WARMUP_STEPS = 10, 3, 3  # as scripts/make_training_fixtures.py
BACKBONE = "backbone"


@pytest.fixture(scope="module", params=["act", "diffusion"])
def case(request, tmp_path_factory):
    name = request.param
    return (
        name,
        materialize(name, tmp_path_factory.mktemp(name) / name),
        load_file(FIXTURES / f"{name}.safetensors"),
    )


def train_config(checkpoint: Path, steps: int, tmp_path: Path) -> TrainPipelineConfig:
    policy = PreTrainedConfig.from_pretrained(checkpoint)
    policy.device = "cpu"
    if policy.type == "diffusion":
        policy.scheduler_warmup_steps = WARMUP_STEPS
    return TrainPipelineConfig(
        dataset=DatasetConfig(root=tmp_path),
        policy=policy,
        steps=steps,
        env_eval_freq=0,
        output_dir=tmp_path / "out",
    )


def test_every_groups_learning_rate_follows_lerobots_schedule(case, tmp_path):
    name, checkpoint, recorded = case
    cfg = train_config(checkpoint, N_LR_STEPS, tmp_path)
    policy = get_policy_class(name).from_pretrained(checkpoint, config=cfg.policy)
    optimizer, scheduler = make_optimizer(cfg, policy)
    n_groups = len([k for k in recorded if k.startswith("lr.0.")])
    assert len(optimizer.param_groups) == n_groups
    for step in range(N_LR_STEPS + 1):
        for group, params in enumerate(optimizer.param_groups):
            assert params["lr"] == pytest.approx(float(recorded[f"lr.{step}.{group}"]), rel=1e-12, abs=0)
        optimizer.step()  # no gradients: moves nothing, keeps torch's step order
        scheduler.step()


def test_three_steps_give_lerobots_weights(case, tmp_path):
    """The same losses (the first exactly: same forward, same random draws), and every
    parameter's update within 1% of LeRobot's. Not to the last bit: our modules round in
    another order, and a parameter whose gradient is zero up to rounding moves by a whole
    Adam step either way (`noise_only`), so those are only held to Adam's step size."""
    name, checkpoint, recorded = case
    cfg = train_config(checkpoint, N_TRAIN_STEPS, tmp_path)
    policy = get_policy_class(name).from_pretrained(checkpoint, config=cfg.policy)
    policy.train()
    before = {k: v.detach().clone() for k, v in policy.state_dict().items()}
    optimizer, scheduler = make_optimizer(cfg, policy)
    action_dim = cfg.policy.output_features["action"].shape[0]
    if name == "act":
        batch = training_batch(expected(name), cfg.policy.chunk_size, action_dim)
    else:
        batch = training_batch(expected(name), cfg.policy.horizon, action_dim, history=cfg.policy.n_obs_steps)
    torch.manual_seed(0)
    for step in range(N_TRAIN_STEPS):
        loss, _ = policy.forward(dict(batch))
        assert float(loss.detach()) == pytest.approx(
            float(recorded[f"loss.{step}"]), rel=1e-6 if step == 0 else 1e-5
        )
        optimization_step(loss, policy, optimizer, scheduler, cfg.optimizer.grad_clip_norm)
    adam_reach = 10 * N_TRAIN_STEPS * cfg.optimizer.lr
    for key, value in policy.state_dict().items():
        if not value.is_floating_point():
            continue
        if BACKBONE in key:
            change = (value.double() - before[key].double()).norm()
            torch.testing.assert_close(
                change, recorded[f"backbone_delta_norm.{key}"], rtol=1e-2, atol=1e-9, msg=key
            )
            continue
        theirs = recorded[f"param.{key}"]
        noise = noise_only(key, value)
        ours_update, their_update = (value - before[key])[~noise], (theirs - before[key])[~noise]
        assert (ours_update - their_update).norm() <= 1e-2 * their_update.norm() + 1e-7, key
        assert bool(((value - theirs)[noise].abs() <= adam_reach).all()), key


def noise_only(key: str, value: torch.Tensor) -> torch.Tensor:
    """The entries whose gradient is zero up to rounding: a bias added before a softmax over the
    axis it is constant on, attention's key bias and the spatial soft-argmax's heat-map bias."""
    mask = torch.zeros_like(value, dtype=torch.bool)
    if key.endswith("in_proj_bias"):  # [query, key, value] biases
        width = value.shape[0] // 3
        mask[width : 2 * width] = True
    if key.endswith("pool.nets.bias"):
        mask[:] = True
    return mask


def test_presets_are_lerobots_and_can_be_replaced(tmp_path):
    common = [f"--dataset.root={tmp_path}", "--env_eval_freq=0", f"--output_dir={tmp_path / 'out'}"]
    act = parse_config(TrainPipelineConfig, [*common, "--policy.type=act"])
    assert act.optimizer == AdamWConfig(lr=1e-5, weight_decay=1e-4) and act.scheduler is None
    diffusion = parse_config(TrainPipelineConfig, [*common, "--policy.type=diffusion"])
    assert diffusion.optimizer == AdamConfig(lr=1e-4, betas=(0.95, 0.999), weight_decay=1e-6)
    assert diffusion.scheduler == DiffuserSchedulerConfig(name="cosine", num_warmup_steps=500)
    mine = parse_config(
        TrainPipelineConfig,
        [
            *common,
            "--policy.type=act",
            "--use_policy_training_preset=false",
            "--optimizer.type=sgd",
            "--optimizer.lr=0.1",
            "--scheduler.type=constant_with_warmup",
            "--scheduler.num_warmup_steps=2",
        ],
    )
    assert (mine.optimizer.type, mine.optimizer.lr, mine.scheduler.lr_factor(1, 10)) == ("sgd", 0.1, 0.5)
    with pytest.raises(CliError, match="--use_policy_training_preset=false: pass both --optimizer.type"):
        parse_config(
            TrainPipelineConfig, [*common, "--policy.type=act", "--use_policy_training_preset=false"]
        )
    older = parse_config(TrainPipelineConfig, [*common[:1], "--eval_freq=0", "--policy.type=act"])
    assert older.env_eval_freq == 0  # LeRobot's older name of --env_eval_freq
