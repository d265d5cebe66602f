"""A robomimic HDF5 converted and read back as lerobot-train reads it holds every demo's values
under the keys, shapes and task string that `--env.type=robomimic` gives a policy."""

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from lerobot.datasets import layout
from lerobot.datasets.reader import load_episodes
from lerobot.datasets.robomimic import convert, plan_conversion
from lerobot.envs.robomimic import RobomimicEnvConfig, tasks
from lerobot.training.batches import dataset_features
from lerobot.utils.errors import ConfigError
from tests.datasets.robomimic_files import SIZE, RobomimicFile, frame, write

VIDEO_TOLERANCE = 3
"""Grey levels h264 may move a flat 16x16 frame by (measured: at most 1)."""
TRANSPORT = RobomimicFile(
    env_name="TwoArmTransport",
    lengths={1: 5, 3: 7},
    cameras=("shouldercamera0", "robot1_eye_in_hand"),
    arms=2,
    object_size=41,
    masks={},
)
IMAGES = RobomimicFile()
LOW_DIM = RobomimicFile(cameras=())


def converted(tmp_path: Path, spec: RobomimicFile = IMAGES, **options) -> Path:
    source = write(tmp_path / "image.hdf5", spec)
    return convert(plan_conversion(source, tmp_path / "out", **options))


def expected_vectors(source: Path, demos: list[int], arms: int) -> dict[str, np.ndarray]:
    """The frames' vectors as the env builds them, from the file's keys."""
    proprio = [f"robot{arm}_{key}" for arm in range(arms) for key in ("eef_pos", "eef_quat", "gripper_qpos")]
    with h5py.File(source) as handle:
        obs = [handle[f"data/demo_{n}/obs"] for n in demos]
        return {
            "observation.state": np.concatenate([np.hstack([o[k][()] for k in proprio]) for o in obs]),
            "observation.environment_state": np.concatenate([o["object"][()] for o in obs]),
            "action": np.concatenate([handle[f"data/demo_{n}/actions"][()] for n in demos]),
        }


def check_frames_equal_the_files(root: Path, spec: RobomimicFile, demos: list[int], task: str) -> None:
    frames = load_episodes(root)
    assert frames.fps == tasks.FPS == 20
    assert frames.episode_lengths.tolist() == [spec.lengths[n] for n in demos]
    for key, values in expected_vectors(root.parent / "image.hdf5", demos, spec.arms).items():
        assert frames.vectors[key].dtype == np.float32
        np.testing.assert_array_equal(frames.vectors[key], values.astype(np.float32), err_msg=key)
    for c, camera in enumerate(spec.cameras):
        expected = np.stack([frame(c, n, step) for n in demos for step in range(spec.lengths[n])])
        decoded = frames.camera_frames(f"observation.images.{camera}", np.arange(frames.n_frames))
        np.testing.assert_allclose(decoded, expected, atol=VIDEO_TOLERANCE, err_msg=camera)
    assert frames.tasks == [tasks.TASKS[task].description]
    assert set(frames.task_indices.tolist()) == {0}


def test_an_image_dataset_holds_each_demo_as_an_episode_in_the_order_of_their_numbers(tmp_path):
    root = converted(tmp_path)

    check_frames_equal_the_files(root, IMAGES, [0, 2, 10], "lift")
    log = json.loads((root / layout.RECORDING_LOG_PATH).read_text())
    assert [(r["rollout"], r["episode_index"]) for r in log["rollouts"]] == [(0, 0), (2, 1), (10, 2)]
    assert log["settings"]["repo_id"] == "robomimic/lift_image"
    assert log["settings"]["env_name"] == "Lift"


def test_its_features_are_the_envs(tmp_path):
    inputs, outputs = dataset_features(load_episodes(converted(tmp_path)))

    env = RobomimicEnvConfig(task="lift", observation_height=SIZE, observation_width=SIZE)
    assert {**inputs, **outputs} == env.policy_features()
    assert list(inputs)[:2] == ["observation.images.agentview", "observation.images.robot0_eye_in_hand"]


def test_a_two_arm_dataset_has_both_arms_state_and_the_envs_features(tmp_path, monkeypatch):
    monkeypatch.setattr(tasks, "installed_robosuite", lambda: tasks.ROBOSUITE_WITH_ALL_TASKS)
    root = converted(tmp_path, TRANSPORT)

    check_frames_equal_the_files(root, TRANSPORT, [1, 3], "transport")
    inputs, outputs = dataset_features(load_episodes(root))
    env = RobomimicEnvConfig(
        task="TwoArmTransport",
        camera_names="shouldercamera0,robot1_eye_in_hand",
        observation_height=SIZE,
        observation_width=SIZE,
    )
    assert {**inputs, **outputs} == env.policy_features()


def test_a_low_dim_dataset_has_no_cameras_and_the_state_only_envs_features(tmp_path):
    root = converted(tmp_path, LOW_DIM)

    check_frames_equal_the_files(root, LOW_DIM, [0, 2, 10], "lift")
    assert layout.video_keys(json.loads((root / layout.INFO_PATH).read_text())["features"]) == []
    inputs, outputs = dataset_features(load_episodes(root))
    assert {**inputs, **outputs} == RobomimicEnvConfig(task="lift", obs_type="state").policy_features()


def test_a_filter_key_converts_its_demos_only(tmp_path):
    root = converted(tmp_path, LOW_DIM, filter_key="train", repo_id="me/lift_train")

    check_frames_equal_the_files(root, LOW_DIM, [0, 10], "lift")
    settings = json.loads((root / layout.RECORDING_LOG_PATH).read_text())["settings"]
    assert (settings["filter_key"], settings["repo_id"]) == ("train", "me/lift_train")


def test_max_episodes_converts_the_first_demos(tmp_path):
    root = converted(tmp_path, LOW_DIM, filter_key="train", max_episodes=1)

    check_frames_equal_the_files(root, LOW_DIM, [0], "lift")


def without(key: str, spec: RobomimicFile = LOW_DIM):
    """A writer of a file whose demo_2 lacks obs/<key>."""

    def write_broken(path: Path) -> Path:
        write(path, spec)
        with h5py.File(path, "a") as handle:
            del handle[f"data/demo_2/obs/{key}"]
        return path

    return write_broken


def with_env_args(**env_args):
    def write_other(path: Path) -> Path:
        write(path, LOW_DIM)
        with h5py.File(path, "a") as handle:
            handle["data"].attrs["env_args"] = json.dumps({"env_name": "Lift", "type": 1, **env_args})
        return path

    return write_other


BAD_FILES = {
    "missing": (lambda path: path, "HDF5 {path}: no such file"),
    "not-hdf5": (lambda path: path.write_text("x") and path, "HDF5 {path}: not an HDF5 file"),
    "no-data-group": (
        lambda path: h5py.File(path, "w").close() or path,
        "HDF5 {path}: not a robomimic dataset (no `data` group",
    ),
    "unknown-env": (
        with_env_args(env_name="Stack"),
        "HDF5 {path}: env_name 'Stack' is not a robomimic task; robomimic's are Lift, PickPlaceCan",
    ),
    "not-robosuite": (with_env_args(type=2), "env_args type=2, not a robosuite dataset"),
    "raw-demo-file": (
        lambda path: write(path, RobomimicFile(with_obs=False)),
        "HDF5 {path}: has no observations (a raw demo.hdf5, MuJoCo states only); "
        "robomimic's dataset_states_to_obs.py extracts them",
    ),
    "missing-key": (without("robot0_eef_quat"), "HDF5 {path}: data/demo_2 lacks obs/robot0_eef_quat"),
    "missing-camera": (without("agentview_image", IMAGES), "lacks obs/agentview_image"),
    "object-size": (
        lambda path: write(path, RobomimicFile(cameras=(), object_size=9)),
        "obs/object has shape (6, 9); the env's is (6, 10)",
    ),
    "action-size": (
        lambda path: write(path, RobomimicFile(env_name="TwoArmTransport", cameras=(), object_size=41)),
        "actions of shape (7,); TwoArmTransport's are (14,)",
    ),
}


@pytest.mark.parametrize("make, message", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_file_is_one_line_naming_it(tmp_path, make, message):
    path = tmp_path / "image.hdf5"
    make(path)

    with pytest.raises(ConfigError) as error:
        plan_conversion(path, tmp_path / "out")

    assert message.format(path=path) in str(error.value)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()


BAD_OPTIONS = {
    "unknown-filter-key": (
        {"filter_key": "tain"},
        "--filter_key=tain: not in {path}; its filter keys: train, valid",
    ),
    "no-masks": (
        {"filter_key": "train", "spec": RobomimicFile(cameras=(), masks={})},
        "--filter_key=train: not in {path}; the file has no `mask` group",
    ),
    "max-episodes": ({"max_episodes": 0}, "--max_episodes=0: must be an integer >= 1"),
}


@pytest.mark.parametrize("options, message", BAD_OPTIONS.values(), ids=BAD_OPTIONS.keys())
def test_a_bad_option_is_one_line_naming_it(tmp_path, options, message):
    path = write(tmp_path / "image.hdf5", options.pop("spec", LOW_DIM))

    with pytest.raises(ConfigError) as error:
        plan_conversion(path, tmp_path / "out", **options)

    assert message.format(path=path) in str(error.value)


def test_an_existing_out_dir_is_refused_and_left_alone(tmp_path):
    path = write(tmp_path / "image.hdf5", LOW_DIM)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep")

    with pytest.raises(ConfigError, match="OUT_DIR .*out: already exists; choose a new directory"):
        plan_conversion(path, tmp_path / "out")
    assert (tmp_path / "out" / "mine.txt").read_text() == "keep"
