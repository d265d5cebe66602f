"""The training loop without a simulator: losses, checkpoints that lerobot-eval loads, resume."""

import json
import logging
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.parser import CliError, parse_config
from lerobot.configs.train import TrainPipelineConfig
from lerobot.datasets.reader import load_episodes
from lerobot.training.batches import Windows
from lerobot.training.train import train
from lerobot.utils.errors import ConfigError
from tests.policies.checkpoints import load
from tests.training.conftest import ENV_FLAGS, TINY_ACT, make_frames, write_dataset

TINY_DIFFUSION = (
    "--policy.type=diffusion",
    "--policy.n_obs_steps=2",
    "--policy.horizon=8",
    "--policy.n_action_steps=4",
    "--policy.down_dims=[16, 32]",
    "--policy.spatial_softmax_num_keypoints=4",
    "--policy.use_group_norm=true",
    "--policy.num_inference_steps=2",
    "--policy.num_train_timesteps=10",
    "--policy.drop_n_last_frames=3",
    "--policy.device=cpu",
)


@pytest.fixture
def dataset(tmp_path):
    return write_dataset(tmp_path / "dataset")


def train_config(dataset, out, *flags: str) -> TrainPipelineConfig:
    argv = [
        f"--dataset.root={dataset}",
        f"--output_dir={out}",
        "--eval_freq=0",
        "--batch_size=4",
        "--log_freq=1",
        "--num_workers=0",
        *flags,
    ]
    return parse_config(TrainPipelineConfig, argv)


def fixed_batch() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    return {
        "observation.image": torch.rand((2, 3, 64, 64), generator=generator),
        "observation.state": torch.randn((2, 4), generator=generator),
        "observation.environment_state": torch.randn((2, 39), generator=generator),
    }


@pytest.mark.parametrize("policy_flags", [TINY_ACT, TINY_DIFFUSION], ids=["act", "diffusion"])
def test_checkpoint_loads_as_lerobot_eval_does_and_acts_the_same(tmp_path, dataset, policy_flags):
    result = train(train_config(dataset, tmp_path / "run", *policy_flags, "--steps=2", "--save_freq=2"))

    checkpoint = tmp_path / "run/checkpoints/last/pretrained_model"
    assert result.checkpoints == [tmp_path / "run/checkpoints/000002/pretrained_model"]
    assert json.loads((checkpoint / "config.json").read_text())["type"] == policy_flags[0].split("=")[1]
    loaded = load(checkpoint, env_flags=ENV_FLAGS)
    trainee = result.trainee
    trainee.policy.eval()
    pre, post = trainee.processors()
    for policy in (trainee.policy, loaded.policy):
        policy.reset(env_ids=[0, 1], seeds=[5, 6])
    expected = post(trainee.policy.select_action(pre(fixed_batch())))
    torch.testing.assert_close(loaded.act(fixed_batch()), expected, rtol=0, atol=0)


def dataset_batch(trainee, dataset) -> dict[str, torch.Tensor]:
    frames = load_episodes(dataset)
    keys = list(trainee.policy.config.input_features)
    return Windows(frames, keys, [0], range(4)).batch(np.arange(frames.n_frames), torch.device("cpu"))


def l1_after(tmp_path, dataset, steps: int) -> float:
    trainee = train(
        train_config(
            dataset,
            tmp_path / f"run{steps}",
            *TINY_ACT,
            f"--steps={steps}",
            "--save_checkpoint=false",
            "--policy.optimizer_lr=1e-3",
        )
    ).trainee
    trainee.policy.eval()  # no dropout; the VAE latent is still sampled, so seed it
    torch.manual_seed(0)
    with torch.no_grad():
        _, info = trainee.loss(dataset_batch(trainee, dataset))
    return info["l1_loss"]


def test_act_fits_its_training_data(tmp_path, dataset):
    assert l1_after(tmp_path, dataset, steps=40) < 0.75 * l1_after(tmp_path, dataset, steps=1)


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(tmp_path, dataset):
    out = tmp_path / "run"
    flags = (*TINY_ACT, "--steps=4", "--save_freq=2", "--policy.optimizer_lr=1e-3")
    uninterrupted = train(train_config(dataset, out, *flags))
    expected = load_file(out / "checkpoints/000004/pretrained_model/model.safetensors")
    # Interrupt it after step 2: remove what came later, as if the process had died there.
    shutil.rmtree(out / "checkpoints/000004")
    (out / "checkpoints/last").unlink()
    (out / "checkpoints/last").symlink_to("000002")
    with pytest.raises(CliError, match="--resume=true"):
        train_config(dataset, out, *flags)

    resumed = train(train_config(dataset, out, *flags, "--resume=true"))

    assert resumed.last_step == 4 and resumed.last_loss == uninterrupted.last_loss
    weights = load_file(out / "checkpoints/000004/pretrained_model/model.safetensors")
    assert weights.keys() == expected.keys()
    for key, value in expected.items():
        torch.testing.assert_close(weights[key], value, rtol=0, atol=0, msg=key)
    state = json.loads((out / "checkpoints/last/training_state/training_step.json").read_text())
    schedule = json.loads((out / "checkpoints/last/training_state/scheduler_state.json").read_text())
    assert state == {"step": 4} and schedule["last_epoch"] == 4


def test_worker_processes_train_the_same_weights(tmp_path, dataset):
    """Batches read in spawned workers, prefetched ahead, are the batches read in-process."""
    flags = (*TINY_ACT, "--steps=3", "--save_checkpoint=false", "--policy.optimizer_lr=1e-3")
    in_process = train(train_config(dataset, tmp_path / "a", *flags))
    in_workers = train(
        train_config(dataset, tmp_path / "b", *flags, "--num_workers=2", "--prefetch_factor=2")
    )
    assert in_workers.last_loss == in_process.last_loss
    for key, value in in_process.trainee.policy.state_dict().items():
        torch.testing.assert_close(in_workers.trainee.policy.state_dict()[key], value, rtol=0, atol=0)


def test_held_out_episodes_are_not_trained_on_and_their_loss_is_logged(tmp_path, dataset, caplog):
    flags = (*TINY_ACT, "--steps=2", "--save_checkpoint=false", "--dataset.eval_split=0.5", "--eval_steps=1")
    with caplog.at_level("INFO", logger="lerobot.training"):
        train(train_config(dataset, tmp_path / "run", *flags))
    # Two episodes of one task: the last one (4 frames) is held out, in one batch of 4.
    assert "1 episodes held out" in caplog.text
    losses = [line for line in caplog.messages if "eval_loss=" in line]
    assert [line.split(": eval_loss=")[0] for line in losses] == ["step 1", "step 2"]
    assert all(line.endswith("over 1 held-out batches") for line in losses)


def test_held_out_split_and_sample_cap_follow_lerobot():
    from lerobot.training.train import held_out_rows, split_held_out

    frames = make_frames((3, 4, 5, 2, 6))
    frames.task_indices = np.repeat([0, 1, 0, 0, 1], [3, 4, 5, 2, 6])
    frames.tasks = ["a", "b"]
    kept, held_out = split_held_out(frames, 0.4)
    # Task a: episodes 0, 2, 3 -> ceil(1.2) = 2 held out (2, 3); task b: 1, 4 -> ceil(0.8) = 1 (4).
    assert kept.episode_indices.tolist() == [0, 1]
    assert held_out.episode_indices.tolist() == [2, 3, 4]
    assert held_out_rows(held_out, 0).tolist() == list(range(13))
    # Three samples for two tasks: the first one of each task.
    assert held_out_rows(held_out, 3).tolist() == [0, 7]
    with pytest.raises(Exception, match="--dataset.eval_split=0.9: holds out all 2 episodes"):
        split_held_out(make_frames((3, 4)), 0.9)


def test_an_offline_wandb_run_is_logged_locally_and_continued_on_resume(tmp_path, dataset, monkeypatch):
    pytest.importorskip("wandb", reason="wandb comes with the train and test extras")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    flags = (
        *TINY_ACT,
        "--steps=2",
        "--save_freq=1",
        "--wandb.enable=true",
        "--wandb.mode=offline",
        "--wandb.notes=first try",
    )
    train(train_config(dataset, out, *flags))
    first = (out / "wandb/latest-run").resolve()
    assert first.name.startswith("offline-run-") and any(first.glob("*.wandb"))

    train(train_config(dataset, out, *flags[:-1], "--steps=3", "--resume=true"))
    # The resumed training logs into the same run (same id), as LeRobot's resume does.
    assert (out / "wandb/latest-run").resolve().name.rsplit("-", 1)[-1] == first.name.rsplit("-", 1)[-1]


def test_lerobots_resume_command_continues_from_the_checkpoints_train_config(tmp_path, dataset):
    """LeRobot resumes with `--config_path=<checkpoint>/pretrained_model/train_config.json
    --resume=true`: the run's own flags come from that file."""
    out = tmp_path / "run"
    train(train_config(dataset, out, *TINY_ACT, "--steps=2", "--save_freq=1"))
    saved = out / "checkpoints/last/pretrained_model/train_config.json"

    cfg = parse_config(TrainPipelineConfig, [f"--config_path={saved}", "--resume=true", "--steps=3"])
    assert (cfg.output_dir, cfg.policy.dim_model, cfg.batch_size) == (out, 16, 4)
    assert train(cfg).last_step == 3


def test_a_run_killed_before_its_first_checkpoint_resumes_from_step_0(tmp_path, dataset, caplog):
    """Killed while writing its first checkpoint: no `last`, a step folder cut short. The
    directory neither restarts (not empty) nor resumed before; now it resumes from scratch."""
    flags = (*TINY_ACT, "--steps=4", "--save_freq=2", "--policy.optimizer_lr=1e-3")
    uninterrupted = train(train_config(dataset, tmp_path / "whole", *flags))
    out = tmp_path / "run"
    train(train_config(dataset, out, *flags))
    shutil.rmtree(out / "checkpoints/000004")
    (out / "checkpoints/last").unlink()
    optimizer = out / "checkpoints/000002/training_state/optimizer_state.safetensors"
    optimizer.write_bytes(optimizer.read_bytes()[:100])  # cut short mid-write

    caplog.set_level("WARNING", logger="lerobot")
    resumed = train(train_config(dataset, out, *flags, "--resume=true"))

    assert resumed.last_step == 4 and resumed.last_loss == uninterrupted.last_loss
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "000002 is not usable: training_state/optimizer_state.safetensors is unreadable" in messages
    assert "holds no complete checkpoint" in messages and "training starts from step 0" in messages


def test_a_damaged_last_checkpoint_falls_back_to_the_one_before(tmp_path, dataset, caplog):
    flags = (*TINY_ACT, "--steps=4", "--save_freq=2", "--policy.optimizer_lr=1e-3")
    out = tmp_path / "run"
    uninterrupted = train(train_config(dataset, out, *flags))
    expected = load_file(out / "checkpoints/000004/pretrained_model/model.safetensors")
    (out / "checkpoints/000004/training_state/training_step.json").unlink()  # broken by hand

    caplog.set_level("WARNING", logger="lerobot")
    resumed = train(train_config(dataset, out, *flags, "--steps=4", "--resume=true"))

    assert resumed.last_step == 4 and resumed.last_loss == uninterrupted.last_loss
    assert "000004 is not usable: training_state/training_step.json is missing" in " ".join(
        r.getMessage() for r in caplog.records
    )
    weights = load_file(out / "checkpoints/000004/pretrained_model/model.safetensors")
    for key, value in expected.items():
        torch.testing.assert_close(weights[key], value, rtol=0, atol=0, msg=key)


def test_an_in_loop_evaluation_the_harness_failed_is_reported_not_scored(
    tmp_path, dataset, register_env_type
):
    """Its env cannot start: training goes on, the evaluation has no rate and is incomplete."""
    from dataclasses import fields

    from lerobot.envs.metaworld import MetaworldEnvConfig
    from tests.evaluation.test_harness_failures import CrashingMetaworld

    register_env_type("metaworld_crashing", CrashingMetaworld)
    marker = tmp_path / "broken"
    marker.touch()
    eval_flags = ("--env.type=metaworld", "--env.task=reach-v3", *ENV_FLAGS, "--env.episode_length=5")
    eval_flags += ("--eval.n_episodes=1", "--eval.batch_size=1", "--eval.max_episode_retries=0", "--seed=7")
    cfg = train_config(dataset, tmp_path / "run", *TINY_ACT, "--steps=2", *eval_flags)
    cfg.env_eval_freq = 2
    settings = {f.name: getattr(cfg.env, f.name) for f in fields(MetaworldEnvConfig)}
    cfg.env = CrashingMetaworld(**settings, crash_seed=7, marker=str(marker))

    result = train(cfg)

    assert result.last_step == 2 and result.incomplete_evals == [2] and result.eval_success == {}
    info = json.loads((tmp_path / "run/eval/step_2/eval_info.json").read_text())
    assert info["complete"] is False and info["n_episodes_failed"] == 1


def test_lerobot_train_exits_3_when_an_in_loop_evaluation_is_incomplete(
    monkeypatch, tmp_path, dataset, capsys
):
    """The exit code itself (the incomplete evaluation is the test above)."""
    from lerobot.scripts import lerobot_train
    from lerobot.training import train as train_module
    from lerobot.utils.errors import EXIT_INCOMPLETE

    monkeypatch.setattr(
        train_module, "train", lambda cfg: train_module.TrainResult(2, 0.1, incomplete_evals=[2])
    )
    argv = [
        f"--dataset.root={dataset}",
        f"--output_dir={tmp_path / 'run'}",
        *TINY_ACT,
        "--steps=2",
        "--eval_freq=0",
    ]
    assert lerobot_train.main(argv) == EXIT_INCOMPLETE
    assert "in-training evaluations at steps [2] are incomplete" in capsys.readouterr().err


def test_resuming_with_fewer_steps_than_done_is_refused_in_one_line(tmp_path, dataset):
    out = tmp_path / "run"
    train(train_config(dataset, out, *TINY_ACT, "--steps=4", "--save_freq=4"))
    with pytest.raises(
        ConfigError, match=r"^--steps=2: the run in --output_dir=.* is already at step 4; pass --steps=4"
    ):
        train(train_config(dataset, out, *TINY_ACT, "--steps=2", "--resume=true"))


def test_a_nan_in_the_dataset_is_refused_naming_where_it_is(tmp_path):
    from lerobot.datasets.reader import DatasetError

    dataset = write_dataset(tmp_path / "dataset", nan_at=(1, 2))
    with pytest.raises(
        DatasetError, match=r"observation.state is not finite in episode 1, frame 2 \(1 frames in all\)"
    ):
        train(train_config(dataset, tmp_path / "run", *TINY_ACT, "--steps=1"))


def test_a_diverging_loss_stops_training_before_the_weights_turn_nan(tmp_path, dataset):
    """A learning rate of 1e30 blows the loss up within a few steps: training stops in one
    line, and the last checkpoint holds finite weights."""
    from lerobot.training.train import DivergedError

    out = tmp_path / "run"
    flags = (*TINY_ACT, "--steps=50", "--save_freq=1", "--policy.optimizer_lr=1e30")
    with pytest.raises(
        DivergedError, match=r"^the loss \(.*\) or its gradient \(.*\) is not finite"
    ) as stopped:
        train(train_config(dataset, out, *flags))
    assert "\n" not in str(stopped.value)
    weights = load_file(out / "checkpoints/last/pretrained_model/model.safetensors")
    assert all(torch.isfinite(value).all() for value in weights.values())


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            '{"observation.image": {"type": "VISUAL", "shape": [3, 32, 32]}, '
            '"observation.state": {"type": "STATE", "shape": [4]}}',
            r"^--policy.input_features: observation.image is 3x32x32 for the policy and 3x",
        ),
        (
            '{"observation.images.wrist": {"type": "VISUAL", "shape": [3, 64, 64]}}',
            r"the policy reads observation.images.wrist, which the dataset lacks",
        ),
    ],
    ids=["other-size", "missing"],
)
def test_declared_inputs_that_are_not_the_datasets_are_refused(tmp_path, dataset, declared, message):
    """3x64x64 declared on 96x96 frames would train on 96x96 and save a config saying 64."""
    with pytest.raises(ConfigError, match=message):
        train(
            train_config(
                dataset, tmp_path / "run", *TINY_ACT, "--steps=1", f"--policy.input_features={declared}"
            )
        )


@pytest.mark.slow
def test_an_evaluation_the_run_stopped_in_is_run_again_on_resume(tmp_path, dataset, caplog):
    """A run stopped during its in-loop evaluation at a checkpoint step (a kill there leaves no
    eval_info.json): resuming runs that evaluation before training on; a finished one is not
    run twice."""
    out = tmp_path / "run"
    flags = [
        *TINY_ACT,
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.episode_length=3",
        *ENV_FLAGS,
        "--eval_freq=2",
        "--save_freq=2",
        "--eval.n_episodes=1",
        "--eval.max_episodes_rendered=0",
        "--steps=2",
    ]
    first = train(train_config(dataset, out, *flags))
    info_path = out / "eval/step_2/eval_info.json"
    assert json.loads(info_path.read_text())["complete"] is True and list(first.eval_success) == [2]
    # Each in-loop evaluation rewrites the run's training curve from every evaluation so far.
    assert "| Step | Episodes | Success % |" in (out / "training_curve.md").read_text()
    assert "in-loop evaluations" in (out / "training_curve.html").read_text()
    info_path.unlink()

    with caplog.at_level(logging.INFO, logger="lerobot.training"):
        again = train(train_config(dataset, out, *flags, "--resume=true"))
    assert again.last_step == 2 and list(again.eval_success) == [2]
    assert json.loads(info_path.read_text())["complete"] is True
    assert "step 2: its evaluation did not finish before the run stopped; running it again" in caplog.text

    caplog.clear()
    finished = train(train_config(dataset, out, *flags, "--resume=true"))
    assert finished.eval_success == {} and "running it again" not in caplog.text


def test_a_resume_that_would_train_something_else_is_refused_naming_each_change(tmp_path, dataset, caplog):
    """Batch size, learning rate, episodes or the policy's shape differ from the run's: one line
    naming each, before any step. Longer training and other logging are noted and honoured."""
    out = tmp_path / "run"
    first = [*TINY_ACT, "--steps=2", "--save_freq=2"]
    train(train_config(dataset, out, *first))

    changed = [
        *first,
        "--batch_size=2",
        "--policy.optimizer_lr=0.001",
        "--dataset.episodes=[0]",
        "--resume=true",
    ]
    with pytest.raises(ConfigError) as error:
        train(train_config(dataset, out, *changed))
    message = str(error.value)
    assert "\n" not in message and message.startswith("--resume=true: ")
    for expected in (
        "--batch_size: was 4, now 2",
        "--dataset.episodes: was None, now [0]",
        "--policy.optimizer_lr: was 1e-05, now 0.001",
    ):
        assert expected in message
    assert message.endswith("pass them as before, or train into a new --output_dir")

    with caplog.at_level(logging.INFO, logger="lerobot.training"):
        longer = train(train_config(dataset, out, *first, "--steps=3", "--log_freq=2", "--resume=true"))
    assert longer.last_step == 3
    assert "--resume=true with changed settings: --steps: 2 -> 3\n" in caplog.text  # log_freq: neutral


def test_a_resume_removes_the_temporary_files_of_writes_a_kill_cut_short(tmp_path, dataset, caplog):
    """safetensors writes `<dir>/.tmpXXXXXX` and renames it: `kill -9` during a checkpoint left
    such files (45-135 MB each) in step folders, which nothing removed."""
    out = tmp_path / "run"
    flags = [*TINY_ACT, "--steps=2", "--save_freq=1"]
    train(train_config(dataset, out, *flags))
    leftovers = [
        out / "checkpoints/000001/pretrained_model/.tmpp0l7Xl",
        out / "checkpoints/000002/training_state/.tmpEpZKy5",
    ]
    for leftover in leftovers:
        leftover.write_bytes(b"\0" * 2**20)

    with caplog.at_level(logging.INFO, logger="lerobot.training"):
        train(train_config(dataset, out, *flags, "--resume=true"))
    assert not any(leftover.exists() for leftover in leftovers)
    assert "removed 2 MB of checkpoint writes a stop cut short" in caplog.text
    assert (out / "checkpoints/000001/pretrained_model/model.safetensors").is_file()
