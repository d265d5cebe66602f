"""`lerobot-record-sim --resume=true` refuses, in one line and before torch or a simulator
loads, a --root it cannot continue; without it, a --root that exists is refused as before.

The dataset here is only the two files the checks read (info.json and recording.json): the
recordings themselves are tests/scripts/test_lerobot_record_sim.py's.
"""

import json
import subprocess
import sys

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.parser import parse_config
from lerobot.configs.record import RecordSimConfig
from lerobot.datasets import layout
from lerobot.evaluation.adapters.record_sim_resume import recording_settings
from lerobot.scripts import lerobot_record_sim

FLAGS = [
    "--env.type=metaworld",
    "--env.task=reach-v3",
    "--env.observation_height=64",
    "--env.observation_width=64",
    "--policy.type=metaworld_expert",
    "--n_episodes=4",
]
FEATURES = {
    "observation.image": layout.video_feature(64, 64, 80),
    "observation.state": layout.vector_feature(4, "state"),
    "observation.environment_state": layout.vector_feature(39, "environment_state"),
    "action": layout.vector_feature(4, "action"),
    **layout.INDEX_FEATURES,
}


def write_recording(root, flags=FLAGS, **info):
    """info.json and recording.json as a 2-episode recording with `flags` leaves them."""
    settings = recording_settings(parse_config(RecordSimConfig, [*flags, f"--root={root}"]))
    (root / "meta").mkdir(parents=True)
    info = {"codebase_version": "v3.0", "fps": 80, "features": FEATURES, "total_episodes": 2, **info}
    (root / layout.INFO_PATH).write_text(json.dumps(info))
    rollouts = [{"rollout": e, "seed": 1000 + e, "episode_index": e} for e in range(2)]
    (root / layout.RECORDING_LOG_PATH).write_text(json.dumps({"settings": settings, "rollouts": rollouts}))


def refusal(capsys, argv) -> str:
    assert lerobot_record_sim.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_an_existing_root_is_refused_without_resume(tmp_path, capsys):
    (tmp_path / "ds").mkdir()
    assert refusal(capsys, [*FLAGS, f"--root={tmp_path / 'ds'}"]) == (
        f"--root={tmp_path / 'ds'}: already exists; choose a new directory, or pass --resume=true to "
        "continue the recording it holds"
    )


def test_resume_needs_a_root(tmp_path, capsys):
    assert "is not a directory; there is no recording to continue" in refusal(
        capsys, [*FLAGS, f"--root={tmp_path / 'missing'}", "--resume=true"]
    )


def test_resume_needs_a_dataset_in_root(tmp_path, capsys):
    root = tmp_path / "ds"
    (root / ".recording").mkdir(parents=True)  # killed before its first episode ended
    assert "holds no dataset (no meta/info.json: no episode was kept before it stopped)" in refusal(
        capsys, [*FLAGS, f"--root={root}", "--resume=true"]
    )


def test_resume_needs_the_recordings_log(tmp_path, capsys):
    root = tmp_path / "ds"
    write_recording(root)
    (root / layout.RECORDING_LOG_PATH).unlink()
    assert "has no meta/recording.json, so lerobot-record-sim did not record it" in refusal(
        capsys, [*FLAGS, f"--root={root}", "--resume=true"]
    )


@pytest.mark.parametrize(
    ("flag", "named"),
    [
        ("--seed=7", "--seed: was 1000, now 7"),
        ("--only_successful=true", "--only_successful: was False, now True"),
        ("--env.episode_length=30", "--env.episode_length: was 500, now 30"),
        ("--chunks_size=10", "--chunks_size: was 1000, now 10"),
    ],
)
def test_resume_with_other_settings_is_refused_naming_them(tmp_path, capsys, flag, named):
    root = tmp_path / "ds"
    write_recording(root)
    line = refusal(capsys, [*FLAGS, flag, f"--root={root}", "--resume=true"])
    assert line.startswith(f"--resume=true: --root={root} was recorded with other settings (")
    assert named in line


def test_resume_may_change_the_episode_count_and_batch_size(tmp_path):
    from lerobot.evaluation.adapters.record_sim_resume import check_resumable

    root = tmp_path / "ds"
    write_recording(root)
    argv = [
        *FLAGS,
        "--n_episodes=40",
        "--batch_size=4",
        "--log_level=DEBUG",
        f"--root={root}",
        "--resume=true",
    ]
    check_resumable(parse_config(RecordSimConfig, argv))


def test_resume_at_another_frame_rate_is_refused(tmp_path, capsys):
    root = tmp_path / "ds"
    write_recording(root, fps=30)
    assert refusal(capsys, [*FLAGS, f"--root={root}", "--resume=true"]) == (
        f"--resume=true: --root={root} was recorded at 30 fps; --env.fps=80 now"
    )


def test_resume_onto_other_features_is_refused(tmp_path, capsys):
    root = tmp_path / "ds"
    write_recording(root, features={**FEATURES, "observation.image": layout.video_feature(32, 32, 80)})
    assert refusal(capsys, [*FLAGS, f"--root={root}", "--resume=true"]) == (
        f"--resume=true: --root={root}: its info.json features are not the env's "
        "(observation.image: recorded as [32, 32, 3], the env gives [64, 64, 3])"
    )


def test_a_refused_resume_loads_neither_torch_nor_a_simulator(tmp_path):
    root = tmp_path / "ds"
    write_recording(root)
    argv = [*FLAGS, "--seed=7", f"--root={root}", "--resume=true"]
    code = (
        "import sys\n"
        "from lerobot.scripts import lerobot_record_sim\n"
        f"assert lerobot_record_sim.main({argv!r}) == 2\n"
        "print(sorted(m for m in ('torch', 'mujoco', 'metaworld', 'gymnasium') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
