"""Record expert demonstrations, train on them with in-loop evaluation, evaluate the checkpoint."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import pyarrow.parquet as pq
import pytest
import torch

from lerobot.configs.parser import parse_config
from lerobot.configs.train import TrainPipelineConfig
from lerobot.scripts import lerobot_eval, lerobot_record_sim, lerobot_train
from lerobot.training.train import train
from tests.policies.checkpoints import load
from tests.training.conftest import ENV_FLAGS, TINY_ACT, write_dataset

ENV = ("--env.type=metaworld", "--env.task=reach-v3", "--env.episode_length=30", *ENV_FLAGS)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.slow
def test_record_train_evaluate(tmp_path):
    dataset = tmp_path / "dataset"
    # Two envs in worker processes: episodes may end out of order, the recorder must not care.
    record = [
        "--policy.type=metaworld_expert",
        "--n_episodes=2",
        "--batch_size=2",
        "--only_successful=false",
        f"--root={dataset}",
    ]
    assert lerobot_record_sim.main([*ENV, *record]) == 0

    info = json.loads((dataset / "meta/info.json").read_text())
    frames = pq.read_table(dataset / "data/chunk-000/file-000.parquet")
    assert (info["total_episodes"], info["total_frames"]) == (2, 60) == (2, frames.num_rows)
    assert frames.schema.field("observation.state").type.list_size == 4
    assert len(iio.imread(dataset / "videos/observation.image/chunk-000/file-000.mp4")) == 60

    out = tmp_path / "train"
    argv = [
        *ENV, *TINY_ACT, f"--dataset.root={dataset}", "--dataset.episodes=[0,1]", f"--output_dir={out}",
        "--steps=1", "--batch_size=2", "--eval_freq=1", "--save_freq=1",
        "--eval.n_episodes=1", "--eval.batch_size=1",
    ]  # fmt: skip
    result = train(parse_config(TrainPipelineConfig, argv))

    checkpoint = out / "checkpoints/000001/pretrained_model"
    assert (out / "checkpoints/last").resolve() == checkpoint.parent
    eval_info = json.loads((out / "eval/step_1/eval_info.json").read_text())
    assert eval_info["overall"]["n_episodes"] == 1 and result.eval_success == {
        1: eval_info["overall"]["pc_success"]
    }
    assert (out / "eval/step_1/videos/reach-v3_0/eval_episode_0.mp4").is_file()

    eval_out = tmp_path / "eval"
    eval_argv = [
        *ENV,
        f"--policy.path={checkpoint}",
        "--policy.device=cpu",
        "--eval.n_episodes=1",
        "--eval.batch_size=1",
        f"--output_dir={eval_out}",
    ]
    assert lerobot_eval.main(eval_argv) == 0
    assert json.loads((eval_out / "eval_info.json").read_text())["overall"]["n_episodes"] == 1

    loaded, trainee = load(checkpoint, env_flags=ENV_FLAGS), result.trainee
    pre, post = trainee.processors()
    batch = {
        "observation.image": torch.rand((1, 3, 64, 64), generator=torch.Generator().manual_seed(0)),
        "observation.state": torch.zeros((1, 4)),
        "observation.environment_state": torch.zeros((1, 39)),
    }
    for policy in (trainee.policy, loaded.policy):
        policy.eval()
        policy.reset()
    torch.testing.assert_close(
        loaded.act(batch), post(trainee.policy.select_action(pre(batch))), rtol=0, atol=0
    )


def test_training_without_a_dataset_root_says_which_flag(capsys):
    assert lerobot_train.main(["--policy.type=act", "--eval_freq=0"]) == 2
    assert "--dataset.root" in capsys.readouterr().err


def test_accelerate_launch_starts_it_as_lerobots_ci_does(tmp_path):
    """`accelerate launch --num_processes=1 $(which lerobot-train) ...` (the seeds' CI): the
    launcher only starts the script."""
    bin_dir = Path(sys.executable).parent
    dataset = write_dataset(tmp_path / "dataset")
    command = [
        str(bin_dir / "accelerate"), "launch", "--num_processes=1", str(bin_dir / "lerobot-train"),
        *TINY_ACT, f"--dataset.root={dataset}", f"--output_dir={tmp_path / 'out'}", "--steps=1",
        "--batch_size=2", "--eval_freq=0", "--num_workers=0", "--policy.push_to_hub=false",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out/checkpoints/000001/pretrained_model/model.safetensors").is_file()


def test_more_than_one_training_process_is_refused(monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", "2")  # what torchrun and a multi-GPU `accelerate launch` set
    assert lerobot_train.main(["--policy.type=act"]) == 2
    assert capsys.readouterr().err.startswith("WORLD_SIZE=2: lerobot-train trains in one process")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_saves_the_last_whole_step_and_resume_continues(tmp_path, signum):
    """A real lerobot-train process stopped mid-run: one line, 128 + the signal, and the steps
    since the last checkpoint are not lost."""
    dataset, out = write_dataset(tmp_path / "dataset"), tmp_path / "run"
    flags = [f"--dataset.root={dataset}", f"--output_dir={out}", *TINY_ACT, "--eval_freq=0", "--batch_size=2"]
    flags += ["--num_workers=0", "--log_freq=1", "--save_freq=100000"]
    program = str(Path(sys.executable).parent / "lerobot-train")
    process = subprocess.Popen([program, *flags, "--steps=100000"], stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if re.search(r"step 3: loss=", line):
            break
    process.send_signal(signum)
    _, rest = process.communicate(timeout=300)

    assert process.returncode == 128 + signum
    assert (
        rest.strip().splitlines()[-1].startswith(f"lerobot-train: stopped by {signal.Signals(signum).name};")
    )
    last = out / "checkpoints/last"
    step = json.loads((last / "training_state/training_step.json").read_text())["step"]
    assert step >= 3 and last.resolve().name == f"{step:06d}"
    assert lerobot_train.main([*flags, f"--steps={step + 2}", "--resume=true"]) == 0
    assert json.loads((last / "training_state/training_step.json").read_text())["step"] == step + 2


def test_an_output_dir_that_cannot_be_created_is_one_line_before_training(tmp_path, capsys):
    """A file given as --output_dir, or a directory under a file: refused before torch loads
    or a step runs, not at the first checkpoint."""
    dataset, blocker = tmp_path / "dataset", tmp_path / "a_file"
    blocker.write_text("")
    flags = [f"--dataset.root={dataset}", *TINY_ACT, "--steps=2", "--eval_freq=0"]
    assert lerobot_train.main([*flags, f"--output_dir={blocker}"]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--output_dir={blocker}: is a file; give a directory")
    assert lerobot_train.main([*flags, f"--output_dir={blocker / 'run'}"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"--output_dir={blocker / 'run'}: cannot create it")


@pytest.mark.slow
def test_a_full_disk_at_a_checkpoint_is_one_line_and_resume_uses_the_last_whole_one(tmp_path):
    """A real lerobot-train resumed from step 2 whose files may not grow past 1 MB
    (RLIMIT_FSIZE fails a write as a full disk does): step 4's checkpoint cannot be written.
    One line naming it, exit 2, `last` still on step 2, and a resume with room continues."""
    import resource

    dataset, out = write_dataset(tmp_path / "dataset"), tmp_path / "run"
    flags = [f"--dataset.root={dataset}", f"--output_dir={out}", *TINY_ACT, "--eval_freq=0", "--batch_size=2"]
    flags += ["--num_workers=0", "--save_freq=2"]
    program = str(Path(sys.executable).parent / "lerobot-train")
    assert lerobot_train.main([*flags, "--steps=2"]) == 0

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024 * 1024, resource.RLIM_INFINITY))

    full = subprocess.run(
        [program, *flags, "--steps=4", "--resume=true"],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=small_files,
    )
    last_line = full.stderr.strip().splitlines()[-1]
    assert full.returncode == 2, full.stderr[-2000:]
    assert re.fullmatch(rf"{out}/checkpoints/000004\S*: cannot write \(File too large\); .*", last_line)
    last = out / "checkpoints/last"
    assert json.loads((last / "training_state/training_step.json").read_text())["step"] == 2
    assert lerobot_train.main([*flags, "--steps=4", "--resume=true"]) == 0
    assert json.loads((last / "training_state/training_step.json").read_text())["step"] == 4


def test_fine_tuning_a_checkpoint_whose_state_width_differs_is_one_line(tmp_path, capsys):
    """A checkpoint declaring a 6-d state, a dataset holding 4-d states: refused before a step."""
    dataset = write_dataset(tmp_path / "dataset")
    flags = [f"--dataset.root={dataset}", "--eval_freq=0", "--batch_size=2", "--num_workers=0", "--steps=1"]
    assert lerobot_train.main([*flags, *TINY_ACT, f"--output_dir={tmp_path / 'a'}"]) == 0
    checkpoint = tmp_path / "a/checkpoints/last/pretrained_model"
    config = json.loads((checkpoint / "config.json").read_text())
    config["input_features"]["observation.state"]["shape"] = [6]
    (checkpoint / "config.json").write_text(json.dumps(config))
    capsys.readouterr()

    assert lerobot_train.main([*flags, f"--policy.path={checkpoint}", f"--output_dir={tmp_path / 'b'}"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "observation.state is 6 for the policy and 4 in the dataset" in line
    assert not (tmp_path / "b/checkpoints").exists()
