"""ManiSkill3 (`--env.type=maniskill`): bad input, the tables against ManiSkill, fidelity to
ManiSkill's own loop, seeding through lerobot-eval, a killed worker, the task groups.

Everything runs the real simulator (physx_cpu; cameras through Mesa's lavapipe) at small
sizes: state observations except where cameras are the point, 32x32 cameras, 8 to 30 steps.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from lerobot.envs.maniskill import ManiskillEnvConfig
from lerobot.envs.maniskill.tasks import GROUPS, NEEDS_ASSETS, SO100_CONTROL_MODES, TASKS, task_sizes
from lerobot.utils.errors import ConfigError
from tests.envs import eval_runs
from tests.envs.eval_runs import outcomes

REPO = Path(__file__).resolve().parents[2]
OFFLINE_TASKS = ", ".join(TASKS)
"""How every error that refuses a task lists the offline ones."""


# --- bad input, before anything loads ----------------------------------------------------------
def one_line_error(**kwargs) -> str:
    with pytest.raises(ConfigError) as error:
        ManiskillEnvConfig(**kwargs)
    message = str(error.value)
    assert "\n" not in message, message
    return message


def test_an_unknown_task_suggests_one_and_lists_the_offline_tasks():
    message = one_line_error(task="PickCub", obs_type="state")
    assert message == (
        "--env.task='PickCub': unknown ManiSkill task; did you mean 'PickCube-v1'? "
        f"offline tasks: {OFFLINE_TASKS}; groups: offline, so100, panda"
    )


def test_a_task_that_needs_a_download_names_the_asset_and_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("MS_ASSET_DIR", str(tmp_path))  # nothing downloaded there
    message = one_line_error(task="PickSingleYCB-v1", obs_type="state")
    assert message.startswith("--env.task=PickSingleYCB-v1: needs ManiSkill's downloaded assets (ycb, ")
    assert "run `python -m mani_skill.utils.download_asset ycb`" in message
    assert str(tmp_path) in message and message.endswith(f"pick an offline task: {OFFLINE_TASKS}")


def test_a_control_mode_the_task_lacks_lists_its_control_modes():
    message = one_line_error(task="so100", control_mode="pd_ee_delta_pose", obs_type="state")
    assert message == (
        "--env.control_mode=pd_ee_delta_pose: PickCubeSO100-v1 has no such controller; its control "
        f"modes: {', '.join(SO100_CONTROL_MODES)}"
    )


CLI_CASES = {
    "unknown task": (["--env.task=PickCub"], "--env.task='PickCub': unknown ManiSkill task"),
    "needs a download": (
        ["--env.task=PickSingleYCB-v1"],
        "run `python -m mani_skill.utils.download_asset ycb`",
    ),
    "control mode": (
        ["--env.task=PushT", "--env.control_mode=pd_ee_delta_pose_align_x"],
        "--env.control_mode=pd_ee_delta_pose_align_x: PushT-v1 has no such controller; its control modes: "
        "pd_joint_delta_pos",
    ),
    "no Vulkan": (
        ["--env.task=PickCube", "--env.obs_type=pixels_agent_pos"],
        "--env.obs_type=pixels_agent_pos: ManiSkill's cameras need a Vulkan device and SAPIEN found none",
    ),
}
HEAVY = ("torch", "numpy", "gymnasium", "mani_skill", "sapien")
"""What refusing a command line must not import (tests/envs/test_contract.py's idea)."""


def test_bad_input_exits_2_in_one_line_before_torch_or_the_simulator_loads(tmp_path):
    """In a fresh interpreter with no Vulkan driver to find and an empty asset directory: each
    bad command line exits 2 with one line; the config with `--env.obs_type=state` still builds."""
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from lerobot.scripts.lerobot_eval import main
        from lerobot.envs.maniskill import ManiskillEnvConfig
        from lerobot.utils.errors import ConfigError
        cases = json.loads({json.dumps(json.dumps({k: v[0] for k, v in CLI_CASES.items()}))})
        results = {{}}
        for name, argv in cases.items():
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["--policy.type=random", "--env.type=maniskill", *argv,
                             "--output_dir={tmp_path}/never"])
            results[name] = [code, err.getvalue()]
        try:
            ManiskillEnvConfig(task="PickCube", obs_type="pixels_agent_pos")
            results["_pixels"] = None
        except ConfigError as error:
            results["_pixels"] = str(error)
        results["_state"] = ManiskillEnvConfig(task="PickCube", obs_type="state").task_names
        results["_loaded"] = [m for m in {HEAVY!r} if m in sys.modules]
        print(json.dumps(results))
        """
    )
    env = {**os.environ, "VK_ICD_FILENAMES": "/nonexistent.json", "MS_ASSET_DIR": str(tmp_path / "assets")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True, env=env
    )
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results.pop("_loaded") == []
    assert results.pop("_state") == ["PickCube-v1"]
    pixels = results.pop("_pixels")
    assert pixels is not None and "\n" not in pixels
    assert "scripts/install_vulkan.sh" in pixels and "mesa-vulkan-drivers" in pixels
    assert pixels.endswith("or use --env.obs_type=state, which needs none")
    for name, (_, expected) in CLI_CASES.items():
        code, stderr = results[name]
        lines = stderr.strip().splitlines()
        assert code == 2, (name, stderr)
        assert len(lines) == 1 and expected in lines[0], (name, stderr)
    assert results["no Vulkan"][1].strip() == pixels
    assert not (tmp_path / "never").exists()


# --- the tables against ManiSkill ---------------------------------------------------------------
def make_tasks_script():
    """scripts/make_maniskill_tasks.py, imported as a module."""
    path = REPO / "scripts" / "make_maniskill_tasks.py"
    spec = importlib.util.spec_from_file_location("make_maniskill_tasks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # up to 20 s a task: a scene reset per control mode (11 for a Panda)
@pytest.mark.parametrize("task", ["PickCube-v1", "TwoRobotPickCube-v1", "SO100GraspCube-v1"])
def test_the_sizes_table_is_what_maniskill_says(task):
    """Rebuilt from ManiSkill (every control mode's scene reset once) as the script writes it."""
    committed = json.loads((REPO / "src/lerobot/envs/maniskill/spaces.json").read_text())[task]
    rebuilt = json.loads(json.dumps(make_tasks_script().task_sizes(task)))  # tuples as JSON lists
    assert rebuilt == committed


@pytest.mark.slow  # 16 s alone, 35 s beside another worker on a loaded 2-core machine
def test_the_task_table_agrees_with_maniskills_registry():
    """Step limits from the registry (no scene); each task's robots, control modes, default
    control mode and cameras from its scene as ManiSkill builds it (not reset, no render)."""
    import mani_skill.envs  # noqa: F401  (registers the tasks)
    from mani_skill.utils.registration import REGISTERED_ENVS

    assert len(TASKS) == 17
    assert {name: REGISTERED_ENVS[name].max_episode_steps for name in TASKS} == {
        name: task.max_steps for name, task in TASKS.items()
    }
    for name, task in TASKS.items():
        env = gym.make(name, obs_mode="state_dict", sim_backend="physx_cpu", render_backend="cpu")
        try:
            sim = env.unwrapped
            agents = getattr(sim.agent, "agents", [sim.agent])  # a two-arm task's MultiAgent
            assert [tuple(agent.supported_control_modes) for agent in agents] == [task.control_modes] * len(
                agents
            ), name
            assert {agent.control_mode for agent in agents} == {task.default_control_mode}, name
            assert tuple(sim._sensor_configs) == task.cameras, name
            assert tuple(task_sizes(name).cameras) == task.cameras, name
        finally:
            env.close()


def test_every_registered_task_with_a_download_names_it():
    """A task ManiSkill registers with downloads is refused with those downloads named, not as
    an unknown task. (Robot and scene assets, e.g. PickCubeWidowXAI's, are listed by hand.)"""
    import mani_skill.envs  # noqa: F401  (registers the tasks)
    from mani_skill.utils.registration import REGISTERED_ENVS

    registered = {name: spec.asset_download_ids for name, spec in REGISTERED_ENVS.items()}
    for name, ids in registered.items():
        if ids:
            assert name in NEEDS_ASSETS, name
            assert sorted(asset.uid for asset in NEEDS_ASSETS[name]) == sorted(ids), name


# --- fidelity: our env against ManiSkill's own loop ---------------------------------------------
FIDELITY_STEPS = 30


@pytest.mark.parametrize(
    ("task", "obs_type"),
    [
        pytest.param("PickCube-v1", "pixels_agent_pos", marks=pytest.mark.slow),  # lavapipe: 18-34 s
        ("StackCube-v1", "state"),
        ("PickCubeSO100-v1", "state"),
    ],
)
def test_our_env_steps_exactly_as_maniskills_own_loop(task, obs_type):
    """Same seed, same fixed actions: the same observations (flat state and extra, camera
    images), rewards and success and fail flags, step by step, while neither has ended (ours
    stops at `fail`; ManiSkill's loop steps on)."""
    import mani_skill.envs  # noqa: F401  (registers the tasks)

    from lerobot.envs.maniskill.env import ManiskillEnv
    from lerobot.envs.maniskill.observation import camera_image, flat_vector

    cfg = ManiskillEnvConfig(
        task=task, obs_type=obs_type, observation_height=32, observation_width=32, render_size=32
    )
    ours = ManiskillEnv(**cfg.env_kwargs(task))
    theirs = gym.make(task, **ours.make_kwargs())
    ours.action_space.seed(5)
    actions = [ours.action_space.sample() for _ in range(FIDELITY_STEPS)]
    try:
        obs, info = ours.reset(seed=11)
        raw_obs, raw_info = theirs.reset(seed=11)
        assert_same_observation(obs, raw_obs, flat_vector, camera_image)
        assert info["is_success"] == bool(raw_info["success"][0])
        for t, action in enumerate(actions):
            obs, reward, terminated, truncated, info = ours.step(action)
            raw_obs, raw_reward, _, _, raw_info = theirs.step(action)
            assert_same_observation(obs, raw_obs, flat_vector, camera_image)
            assert reward == float(raw_reward[0]), t
            assert info["is_success"] == bool(raw_info["success"][0]), t
            assert bool(info.get("fail", False)) == bool(raw_info.get("fail", np.zeros(1))[0]), t
            if terminated or truncated:
                assert terminated == bool(info.get("fail", False)) and not truncated, t
                break
    finally:
        ours.close()
        theirs.close()
    if obs_type == "pixels_agent_pos":
        assert set(obs["pixels"]) == {"base_camera"} and obs["pixels"]["base_camera"].shape == (32, 32, 3)
        assert obs["pixels"]["base_camera"].std() > 0  # a rendered scene, not a blank frame


def assert_same_observation(obs: dict, raw_obs: dict, flat_vector, camera_image) -> None:
    np.testing.assert_array_equal(obs["agent_pos"], flat_vector(raw_obs["agent"]))
    np.testing.assert_array_equal(obs["environment_state"], flat_vector(raw_obs["extra"]))
    for camera, image in obs.get("pixels", {}).items():
        np.testing.assert_array_equal(image, camera_image(raw_obs["sensor_data"], camera))


# --- seeding through lerobot-eval ---------------------------------------------------------------
EVAL_FLAGS = [
    "--policy.type=random",
    "--env.type=maniskill",
    "--env.task=PickCube-v1",
    "--env.obs_type=state",
    "--env.episode_length=8",
    "--eval.n_episodes=4",
    "--eval.max_episodes_rendered=0",
]


def run_eval(out: Path, *extra: str) -> dict:
    return eval_runs.run_eval([*EVAL_FLAGS, *extra], out, n_episodes=4)


@pytest.fixture(scope="module")
def batch_1_run(tmp_path_factory) -> dict:
    return run_eval(tmp_path_factory.mktemp("batch1"), "--eval.batch_size=1")


def test_batch_1_episodes_are_seeded_one_after_another(batch_1_run):
    results = outcomes(batch_1_run)
    assert [(e, seed, steps) for e, seed, _, _, steps in results] == [(e, 1000 + e, 8) for e in range(4)]
    assert len({reward for *_, reward, _ in results}) == 4  # four different scenes
    assert batch_1_run["complete"] is True and batch_1_run["n_episodes_retried"] == 0


def test_batch_2_gives_the_episodes_of_batch_1(batch_1_run, tmp_path):
    assert outcomes(run_eval(tmp_path, "--eval.batch_size=2")) == outcomes(batch_1_run)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # one Ray instance per machine (tests/evaluation/run/test_ray_backend.py)
def test_the_ray_backend_gives_the_episodes_of_batch_1(batch_1_run, tmp_path):
    on_ray = run_eval(tmp_path, "--eval.backend=ray", "--eval.num_workers=1")
    assert outcomes(on_ray) == outcomes(batch_1_run) and on_ray["complete"] is True


# --- a killed worker ---------------------------------------------------------------------------
KILL_AT_CALL = 4
"""The policy call (of 8 per episode pair at batch 2) at which a worker is killed: mid-episode."""


@pytest.mark.slow
def test_a_worker_killed_mid_episode_reruns_the_episode_from_its_seed(batch_1_run, tmp_path, monkeypatch):
    """SIGKILL one env worker from inside the policy's 4th call, so the kill lands mid-episode
    whatever the machine's speed; that episode runs again from its seed, to the same result."""
    from lerobot.policies.random.modeling_random import RandomPolicy

    before = set(mp.active_children())
    select_action = RandomPolicy.select_action
    calls, killed = [0], []

    def select_action_then_kill(self, batch):
        calls[0] += 1
        if calls[0] == KILL_AT_CALL:
            workers = [p for p in mp.active_children() if p not in before and p.is_alive()]
            assert workers, "batch 2 runs at least one env in a worker process"
            os.kill(workers[0].pid, signal.SIGKILL)
            workers[0].join(timeout=60)
            killed.append(workers[0].exitcode)
        return select_action(self, batch)

    monkeypatch.setattr(RandomPolicy, "select_action", select_action_then_kill)
    info = run_eval(tmp_path, "--eval.batch_size=2")
    assert killed == [-signal.SIGKILL]
    assert outcomes(info) == outcomes(batch_1_run)
    assert info["complete"] is True and info["n_episodes_failed"] == 0
    assert info["n_episodes_retried"] == 1
    [retried] = [e for e in info["per_episode"] if e["retries"]]
    assert retried["episode_index"] in (0, 1) and retried["retries"] == 1


# --- groups ------------------------------------------------------------------------------------
def test_so100_is_one_group_of_the_two_so100_tasks():
    cfg = ManiskillEnvConfig(task="so100", obs_type="state")
    assert cfg.task_groups() == {"so100": ["PickCubeSO100-v1", "SO100GraspCube-v1"]}
    assert [(t.group, t.name, t.max_steps) for t in cfg.tasks()] == [
        ("so100", "PickCubeSO100-v1", 50),
        ("so100", "SO100GraspCube-v1", 64),
    ]


def test_offline_is_all_seventeen_tasks():
    cfg = ManiskillEnvConfig(task="offline", obs_type="state")
    assert cfg.task_groups() == {"offline": list(TASKS)} and len(cfg.task_names) == 17
    assert set(GROUPS["panda"]) | set(GROUPS["so100"]) < set(GROUPS["offline"])


def test_a_task_without_its_suffix_is_the_v1_task_under_its_full_name():
    cfg = ManiskillEnvConfig(task="PickCube", obs_type="state")
    assert cfg.task_groups() == {"PickCube-v1": ["PickCube-v1"]}
    assert ManiskillEnvConfig(task="PickCube, so100", obs_type="state").task_groups() == {
        "PickCube-v1": ["PickCube-v1"],
        "so100": ["PickCubeSO100-v1", "SO100GraspCube-v1"],
    }


# --- how an episode ends -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("terminate_on_success", "success", "fail", "steps", "ends"),
    [
        (False, True, False, 3, (False, False)),  # ManiSkill's protocol: run on to the step limit
        (True, True, False, 3, (True, False)),  # LeRobot's: end at the first success
        (False, False, True, 3, (True, False)),  # `fail` ends the episode, unsuccessful
        (False, True, False, 8, (False, True)),  # the step limit truncates
        (False, False, True, 8, (True, False)),  # a failure at the limit is a failure, not a truncation
    ],
)
def test_success_fail_and_the_step_limit_end_an_episode_as_documented(
    terminate_on_success, success, fail, steps, ends
):
    """The rule each step applies to ManiSkill's info (no scene needed: the env builds lazily),
    for the offline tasks never report `fail` themselves."""
    cfg = ManiskillEnvConfig(task="PickCube-v1", obs_type="state", episode_length=8)
    env = cfg.env_factory("PickCube-v1")()
    env.terminate_on_success = terminate_on_success
    raw_info = {"success": np.array([success]), "fail": np.array([fail]), "elapsed_steps": np.array([steps])}
    info, terminated, truncated = env.step_outcome(raw_info, steps)
    assert (terminated, truncated) == ends
    assert info["is_success"] is success and info["fail"] is fail and info["task"] == "PickCube-v1"
    assert "success" not in info
