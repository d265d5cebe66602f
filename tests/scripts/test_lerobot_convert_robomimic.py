"""`lerobot-convert-robomimic` writes a dataset that lerobot-train trains on beside
`--env.type=robomimic`, and answers bad input in one line, exit code 2, before torch loads."""

import json
import os
import signal
import subprocess
import sys

import pytest

from lerobot.datasets import robomimic
from lerobot.datasets.layout import INFO_PATH
from lerobot.datasets.reader import load_episodes
from lerobot.scripts import lerobot_convert_robomimic, lerobot_train
from tests.datasets.robomimic_files import SIZE, RobomimicFile, write
from tests.training.conftest import TINY_ACT

LOW_DIM = RobomimicFile(cameras=())
PROBE = """
import json, sys
from lerobot.scripts.lerobot_convert_robomimic import main
code = main({argv!r})
print(json.dumps({{"code": code, "torch": "torch" in sys.modules}}))
"""


def test_the_converted_dataset_trains_beside_the_robomimic_env(tmp_path, one_torch_thread):
    source, dataset = write(tmp_path / "image.hdf5"), tmp_path / "lift_image"
    assert lerobot_convert_robomimic.main([str(source), str(dataset), "--filter_key=train"]) == 0
    assert json.loads((dataset / INFO_PATH).read_text())["total_episodes"] == 2

    argv = [
        *TINY_ACT, f"--dataset.root={dataset}", f"--output_dir={tmp_path / 'train'}",
        "--env.type=robomimic", "--env.task=lift", f"--env.observation_height={SIZE}",
        f"--env.observation_width={SIZE}", "--steps=2", "--batch_size=2", "--eval_freq=0",
        "--save_freq=2", "--num_workers=0",
    ]  # fmt: skip
    assert lerobot_train.main(argv) == 0

    checkpoint = tmp_path / "train/checkpoints/000002/pretrained_model"
    inputs = json.loads((checkpoint / "config.json").read_text())["input_features"]
    assert sorted(inputs) == [
        "observation.environment_state",
        "observation.images.agentview",
        "observation.images.robot0_eye_in_hand",
        "observation.state",
    ]


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "HDF5 {missing}: no such file"),
        (["--filter_key=tain"], "--filter_key=tain: not in {source}; its filter keys: train, valid"),
        (
            ["--max_episodes=x"],
            "lerobot-convert-robomimic: error: argument --max_episodes: invalid int value",
        ),
    ],
    ids=["missing-file", "filter-key", "max-episodes"],
)
def test_bad_input_is_one_line_and_exit_code_2_before_torch_loads(tmp_path, extra, message):
    source, missing = write(tmp_path / "image.hdf5"), tmp_path / "nothing.hdf5"
    argv = [str(missing if not extra else source), str(tmp_path / "out"), *extra]

    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, timeout=120
    )

    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"code": 2, "torch": False}
    (line,) = done.stderr.strip().splitlines()
    assert message.format(missing=missing, source=source) in line
    assert not (tmp_path / "out").exists()


def test_a_stop_signal_keeps_the_demos_converted_before_it(tmp_path, monkeypatch, capsys):
    real_add_demo = robomimic.add_demo

    def stopped_at_the_third_demo(recorder, demo, episode, *args):
        if episode == 10:
            os.kill(os.getpid(), signal.SIGTERM)
        real_add_demo(recorder, demo, episode, *args)

    monkeypatch.setattr(robomimic, "add_demo", stopped_at_the_third_demo)
    argv = [str(write(tmp_path / "image.hdf5", LOW_DIM)), str(tmp_path / "out")]

    assert lerobot_convert_robomimic.main(argv) == 128 + signal.SIGTERM
    assert "stopped by SIGTERM" in capsys.readouterr().err
    assert load_episodes(tmp_path / "out").episode_lengths.tolist() == [6, 8]


def test_help_names_the_arguments_and_every_flag(capsys):
    with pytest.raises(SystemExit) as exit_:
        lerobot_convert_robomimic.main(["--help"])

    assert exit_.value.code == 0
    help_text = capsys.readouterr().out
    assert help_text.startswith("usage: lerobot-convert-robomimic")
    for name in ("HDF5", "OUT_DIR", "--filter_key", "--max_episodes", "--repo_id"):
        assert name in help_text
