"""Meta-World env: task resolution, observations, rendering and seeding (real simulator)."""

import gc
import os
import signal
import sys

import numpy as np
import pytest

from lerobot.envs.factory import make_env, make_env_config
from lerobot.envs.metaworld import MetaworldEnv, MetaworldEnvConfig
from lerobot.envs.metaworld.tasks import resolve_task_groups
from lerobot.processor.observation import observation_to_batch
from lerobot.utils.errors import ConfigError
from lerobot.utils.signals import Interrupted, interrupts_as_exceptions

SMALL = {"observation_height": 64, "observation_width": 64}


def test_groups_follow_the_difficulty_split():
    groups = resolve_task_groups("easy,medium,hard,very_hard,mt50")
    assert {name: len(tasks) for name, tasks in groups.items()} == {
        "easy": 28,
        "medium": 11,
        "hard": 6,
        "very_hard": 5,
        "mt50": 50,
    }
    assert sorted(groups["mt50"]) == sorted(
        groups["easy"] + groups["medium"] + groups["hard"] + groups["very_hard"]
    )


def test_tasks_accept_both_spellings_and_comma_lists():
    assert resolve_task_groups("push-v3") == {"push-v3": ["push-v3"]}
    assert resolve_task_groups("metaworld-push-v3, reach-v3") == {
        "metaworld-push-v3": ["push-v3"],
        "reach-v3": ["reach-v3"],
    }


def test_a_prefixed_task_keeps_its_spelling_in_results_and_video_folders():
    """LeRobot writes `metaworld-push-v3_0`; CI and scripts key on that name."""
    [task] = MetaworldEnvConfig(task="metaworld-push-v3").tasks()
    assert (task.group, task.task_id, task.name) == ("metaworld-push-v3", 0, "push-v3")
    assert task.video_folder == "metaworld-push-v3_0"
    assert task.description == "Push the puck to a goal"


def test_unknown_task_lists_the_choices_and_suggests_one():
    with pytest.raises(
        ConfigError,
        match=r"^--env.task='psuh-v3': unknown Meta-World task or group; did you mean 'push-v3'\? groups: easy, medium, hard, very_hard, mt50; tasks: assembly-v3",
    ):
        MetaworldEnvConfig(task="psuh-v3")


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"obs_type": "depth"}, "--env.obs_type='depth': must be one of pixels, pixels_agent_pos, state"),
        (
            {"camera_names": ["nope"]},
            "--env.camera_names=['nope']: give distinct names among corner, corner2, corner3",
        ),
        (
            {"camera_names": "corner9"},
            "--env.camera_names='corner9': give distinct names among corner, corner2, corner3, topview, "
            "behindGripper, gripperPOV as a list, e.g. --env.camera_names='[corner,corner2]'",
        ),
        (
            {"task": "libero_10"},
            "--env.task='libero_10': a LIBERO suite, not a Meta-World task; use --env.type=libero",
        ),
        ({"fps": 0}, "--env.fps=0: must be a positive frame rate"),
        ({"observation_height": 0}, "--env.observation_height=0"),
        ({"episode_length": 501}, "--env.episode_length=501: must be in 1..500"),
    ],
)
def test_bad_settings_name_the_flag(kwargs, flag):
    with pytest.raises(ConfigError) as err:
        MetaworldEnvConfig(**kwargs)
    assert str(err.value).startswith(flag)
    assert "\n" not in str(err.value)


def test_env_config_is_selected_by_type_name():
    cfg = make_env_config("metaworld", task="reach-v3")
    assert isinstance(cfg, MetaworldEnvConfig) and cfg.type == "metaworld"
    with pytest.raises(ConfigError, match=r"--env.type='nope': unknown env type; choose one of .*metaworld"):
        make_env_config("nope")


def test_factory_is_lazy_and_knows_spaces_without_a_simulator():
    cfg = MetaworldEnvConfig(task="easy", **SMALL)
    envs = make_env(cfg, n_envs=2, use_async_envs=True)
    assert list(envs) == ["easy"] and len(envs["easy"]) == 28
    env = envs["easy"][0]
    assert not env.started
    assert env.single_observation_space["pixels"].shape == (64, 64, 3)
    assert env.single_action_space.shape == (4,)
    assert env.metadata["task_description"] == "Press a button" and env.metadata["render_fps"] == 80
    single = MetaworldEnv("push-v3")
    assert single._sim is None  # constructing an env builds no simulator


def test_agent_pos_is_the_hand_position_and_gripper_opening(metaworld):
    """The 4-d state of LeRobot's Meta-World data: the first four entries of the full state.
    (Keys, shapes and dtypes against `policy_features()`: tests/envs/test_contract.py.)"""
    env = MetaworldEnvConfig(task="push-v3", **SMALL).env_factory("push-v3")()
    try:
        obs, _ = env.reset(seed=0)
        np.testing.assert_array_equal(obs["agent_pos"], obs["environment_state"][:4])
        assert env.task_description == "Push the puck to a goal"
    finally:
        env.close()


def test_several_cameras_become_images_dot_name(metaworld):
    cfg = MetaworldEnvConfig(task="reach-v3", camera_names=["corner2", "topview"], **SMALL)
    env = cfg.env_factory("reach-v3")()
    try:
        obs, _ = env.reset(seed=1)
        batch = observation_to_batch({"pixels": {k: v[None] for k, v in obs["pixels"].items()}})
        assert set(batch) == {"observation.images.corner2", "observation.images.topview"}
        assert set(batch) < set(cfg.policy_features())
    finally:
        env.close()


def test_state_observation_is_the_full_state_vector(metaworld):
    env = MetaworldEnvConfig(task="reach-v3", obs_type="state").env_factory("reach-v3")()
    try:
        obs, _ = env.reset(seed=1)
        assert set(obs) == {"agent_pos", "environment_state"} and obs["agent_pos"].shape == (39,)
    finally:
        env.close()


def test_corner2_is_upright_and_pixel_identical_to_metaworld_rendering(metaworld):
    """Our renderer must give exactly what LeRobot's datasets hold: Meta-World's own
    offscreen render of the moved corner2 camera, rotated 180 degrees."""
    from gymnasium.envs.mujoco.mujoco_rendering import MujocoRenderer

    env = MetaworldEnv("push-v3", observation_height=96, observation_width=96)
    try:
        obs, _ = env.reset(seed=3)
        sim = env._sim
        reference = MujocoRenderer(
            sim.model, sim.data, camera_id=sim.model.camera("corner2").id, width=96, height=96
        )
        try:
            expected = np.flip(reference.render("rgb_array"), (0, 1))
        finally:
            reference.close()
        np.testing.assert_array_equal(obs["pixels"], expected)
        # Upright: the red robot base sits in the bottom-left corner, not in the top-right one.
        redness = lambda patch: (patch[..., 0].astype(int) - patch[..., 1].astype(int)).mean()  # noqa: E731
        assert redness(obs["pixels"][-24:, :16]) > 40 > redness(obs["pixels"][:24, -16:])
    finally:
        env.close()


def test_another_seed_places_object_and_goal_elsewhere(metaworld):
    """(The same seed giving the same start, whatever ran before: tests/envs/test_contract.py.)"""
    env = MetaworldEnv("pick-place-v3", obs_type="state")
    try:
        first, _ = env.reset(seed=11)
        other, _ = env.reset(seed=12)
        assert not np.array_equal(first["environment_state"], other["environment_state"])
    finally:
        env.close()


@pytest.mark.parametrize("task", ["push-v3", "assembly-v3"])
def test_simulator_set_up_matches_metaworld_mt1(metaworld, task):
    """We skip building MT1 (seconds per task) but must simulate exactly what it sets up."""
    from lerobot.envs.metaworld.env import _build_simulator
    from lerobot.envs.metaworld.tasks import CORNER2_POSITION

    benchmark = metaworld.MT1(task, seed=42)
    reference = benchmark.train_classes[task]()
    reference.set_task(benchmark.train_tasks[0])
    reference.model.cam_pos[reference.model.camera("corner2").id] = CORNER2_POSITION
    reference._freeze_rand_vec, reference.seeded_rand_vec = False, True
    ours = _build_simulator(task)
    try:
        actions = np.random.default_rng(0).uniform(-1, 1, (5, 4)).astype(np.float32)
        for seed in (0, 7):
            reference.seed(seed)
            ours.seed(seed)
            np.testing.assert_array_equal(reference.reset()[0], ours.reset()[0])
            for action in actions:
                expected, got = reference.step(action), ours.step(action)
                np.testing.assert_array_equal(expected[0], got[0])
                assert expected[1] == got[1]
    finally:
        reference.close()
        ours.close()


def test_fast_render_changes_pixels_but_not_the_simulation(metaworld):
    """Opt-in only: it drops shadows, reflections and anti-aliasing, which policies notice."""
    default = MetaworldEnv("push-v3", observation_height=64, observation_width=64)
    fast = MetaworldEnv("push-v3", observation_height=64, observation_width=64, fast_render=True)
    try:
        obs_default, _ = default.reset(seed=2)
        obs_fast, _ = fast.reset(seed=2)
        np.testing.assert_array_equal(obs_default["environment_state"], obs_fast["environment_state"])
        assert obs_fast["pixels"].shape == obs_default["pixels"].shape
        assert not np.array_equal(obs_fast["pixels"], obs_default["pixels"])
    finally:
        default.close()
        fast.close()


def test_a_single_camera_name_or_a_comma_list_is_accepted():
    assert MetaworldEnvConfig(camera_names="corner2").camera_names == ["corner2"]
    assert MetaworldEnvConfig(camera_names="[corner2,topview]").camera_names == ["corner2", "topview"]


def test_a_step_without_images_renders_nothing(metaworld, monkeypatch):
    """What the blind step saves: the camera render. (That it simulates the same step, with
    black images, and that render() still shows the real view: tests/envs/test_contract.py.)"""
    env = MetaworldEnv("push-v3", observation_height=64, observation_width=64)
    try:
        env.reset(seed=4)
        renders = []
        original = MetaworldEnv._render_camera
        monkeypatch.setattr(
            MetaworldEnv, "_render_camera", lambda self, cam: renders.append(cam) or original(self, cam)
        )
        for action in np.random.default_rng(1).uniform(-1, 1, (2, 4)).astype(np.float32):
            env.step_without_images(action)
        assert renders == []
        env.step(np.zeros(4, np.float32))
        assert renders == ["corner2"]
    finally:
        env.close()


def test_a_stop_signal_while_the_renderer_is_built_waits_for_it(metaworld, monkeypatch):
    """Ctrl-C raised inside mujoco.Renderer's constructor left one without its _mjr_context,
    whose __del__ printed "Exception ignored ... AttributeError" after lerobot-eval had saved
    its episodes: an env in the main process now finishes its command first, as a worker does."""
    import mujoco.renderer

    real = mujoco.renderer._render

    class InterruptedWhileBuilding:
        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def MjrContext(*args, **kwargs):  # noqa: N802  (mujoco's name)
            context = real.MjrContext(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, mid-construction
            return context

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    monkeypatch.setattr(mujoco.renderer, "_render", InterruptedWhileBuilding())
    env = make_env(MetaworldEnvConfig(task="reach-v3", **SMALL), n_envs=1, use_async_envs=False)["reach-v3"][
        0
    ]
    with interrupts_as_exceptions(), pytest.raises(Interrupted):
        env.reset_at([0], seeds=[0])
    env.close()
    gc.collect()
    assert [f"{u.exc_type.__name__}: {u.exc_value}" for u in unraisable] == []
