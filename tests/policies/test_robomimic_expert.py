"""The scripted robomimic expert: its observation layouts, its one-line refusal of a task without
a script, its per-row state and that it solves Lift and Can in the real simulator (state only)."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from lerobot.policies.robomimic_expert.configuration_robomimic_expert import (
    SCRIPTED_TASKS,
    RobomimicExpertConfig,
)
from lerobot.policies.robomimic_expert.control import (
    about_z,
    pointing_down,
    quaternion_matrix,
    rotation_error,
)
from lerobot.policies.robomimic_expert.modeling_robomimic_expert import RobomimicExpertPolicy
from lerobot.policies.robomimic_expert.scripts import GraspGeometry, Scene, lined_up_yaw
from lerobot.policies.robomimic_expert.tasks import CAN_PLACE, TASKS
from lerobot.utils.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_a_cube_is_gripped_at_the_nearest_quarter_turn():
    """The gripper turns at most 45 degrees to line its fingers up with a cube's faces."""
    cube = GraspGeometry(grasp_height=0.0, hover=0.06, symmetric_yaw=np.pi / 2)
    scene = Scene(np.zeros(3), pointing_down(np.deg2rad(10.0)), np.zeros(3), about_z(np.deg2rad(80.0)))
    assert np.rad2deg(lined_up_yaw(cube, scene)) == pytest.approx(-10.0)
    round_object = GraspGeometry(grasp_height=0.0, hover=0.06, symmetric_yaw=None)
    assert np.rad2deg(lined_up_yaw(round_object, scene)) == pytest.approx(10.0)


def test_rotation_error_is_the_world_frame_turn_osc_pose_applies():
    """OSC_POSE turns the goal by the axis-angle input on the left of the current rotation."""
    current = pointing_down(0.3)
    turn = np.array([0.1, -0.2, 0.25])
    angle = np.linalg.norm(turn)
    x, y, z = turn / angle
    target = (
        quaternion_matrix(np.array([*(np.sin(angle / 2) * np.array([x, y, z])), np.cos(angle / 2)])) @ current
    )
    np.testing.assert_allclose(rotation_error(target, current), turn, atol=1e-9)


def batch(task: str, states: list[np.ndarray], environment_states: list[np.ndarray]) -> dict:
    return {
        "observation.state": torch.from_numpy(np.stack(states)).float(),
        "observation.environment_state": torch.from_numpy(np.stack(environment_states)).float(),
        "env_task": [task] * len(states),
    }


def test_unscripted_task_is_one_line_naming_the_scripted_ones():
    policy = RobomimicExpertPolicy(RobomimicExpertConfig())
    unscripted = batch("square", [np.zeros(9)], [np.zeros(14)])
    with pytest.raises(ValueError, match=r"no script for task 'square'; scripted tasks: lift, can$"):
        policy.select_action(unscripted)


def test_needs_state_and_task():
    policy = RobomimicExpertPolicy(RobomimicExpertConfig())
    with pytest.raises(ValueError, match="needs 'observation.environment_state', 'env_task'"):
        policy.select_action({"observation.state": torch.zeros(1, 9)})


UNSCRIPTED_RUN = (
    "--env.task=square: --policy.type=robomimic_expert has no script for it; scripted tasks: lift, can"
)


def test_a_run_with_an_unscripted_task_is_refused_by_for_env():
    """for_env reads the task list only: no simulator is built."""
    from lerobot.envs.robomimic import RobomimicEnvConfig

    config = RobomimicExpertConfig()
    for tasks in ("square", "lift,square"):
        with pytest.raises(ConfigError, match=f"^{re.escape(UNSCRIPTED_RUN)}$"):
            RobomimicExpertPolicy.for_env(config, RobomimicEnvConfig(task=tasks, obs_type="state"))
    scripted = RobomimicEnvConfig(task="lift,can", obs_type="state")
    assert isinstance(RobomimicExpertPolicy.for_env(config, scripted), RobomimicExpertPolicy)


def test_an_unscripted_run_exits_2_in_one_line_before_torch_or_the_simulator_loads(tmp_path):
    """lerobot-eval refuses it while parsing the command line, as it does any other bad flag."""
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from lerobot.scripts.lerobot_eval import main
        results = []
        for argv in (["--env.type=robomimic", "--env.task=lift,square"], ["--env.type=metaworld"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["--policy.type=robomimic_expert", *argv, "--output_dir={tmp_path}/never"])
            results.append([code, err.getvalue()])
        loaded = [m for m in ("torch", "numpy", "gymnasium", "robosuite", "mujoco") if m in sys.modules]
        print(json.dumps([results, loaded]))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True, env=env
    )
    results, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == []
    assert results == [
        [2, UNSCRIPTED_RUN + "\n"],
        [
            2,
            "--policy.type=robomimic_expert: scripts robomimic's tasks only, not --env.type=metaworld; "
            "use --env.type=robomimic\n",
        ],
    ]
    assert not (tmp_path / "never").exists()


def test_the_config_names_every_scripted_task():
    """The config checks runs against its own list, which must be the scripts' table."""
    assert tuple(TASKS) == SCRIPTED_TASKS


def test_can_is_placed_inside_its_compartment():
    """robosuite's `not_in_bin` for the can (bin 2's corner at (0.1, 0.28), a quarter of the
    0.39 x 0.49 bin), with the can's 3.5 cm radius clear of the dividers (1 cm half-thick)."""
    x, y, z = CAN_PLACE
    assert 0.1 + 0.01 + 0.035 < x < 0.1 + 0.39 / 2 - 0.035
    assert 0.28 + 0.01 + 0.035 < y < 0.28 + 0.49 / 2 - 0.035
    assert 0.8 < z < 0.9


# --- the real simulator -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def robosuite():
    pytest.importorskip("robosuite", reason="the robomimic extra is not installed")
    from lerobot.envs.robosuite_support import import_robosuite

    return import_robosuite()


def make_env(task: str):
    from lerobot.envs.robomimic.env import RobomimicEnv

    return RobomimicEnv(task, cameras={})


@pytest.mark.parametrize("task", list(TASKS))
def test_layouts_match_robosuites_observations(robosuite, task):
    """Each field the expert reads is robosuite's observable of that name: `object-state` is
    the task's layout in order, and `observation.state` is eef position, quaternion, fingers."""
    env = make_env(task)
    raw_env = robosuite.make(env.spec_task.env_name, **env.make_kwargs())
    try:
        np.random.seed(0)
        raw = raw_env.reset()
        layout = TASKS[task].object_state_layout
        np.testing.assert_array_equal(np.concatenate([raw[name] for name, _ in layout]), raw["object-state"])
        assert [raw[name].shape[0] for name, _ in layout] == [size for _, size in layout]
        obs, _ = env.reset(seed=0)
        np.testing.assert_allclose(
            obs["agent_pos"],
            np.concatenate(
                [raw[key] for key in ("robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos")]
            ),
            atol=1e-6,
        )
        # The Panda starts pointing down, the pose the scripts hold (within a few degrees).
        start = quaternion_matrix(raw["robot0_eef_quat"])
        assert np.linalg.norm(rotation_error(pointing_down(0.0), start)) < np.deg2rad(15.0)
    finally:
        raw_env.close()
        env.close()


def first_observations(task: str, seeds: list[int]) -> list[dict]:
    env = make_env(task)
    try:
        return [env.reset(seed=seed)[0] for seed in seeds]
    finally:
        env.close()


def test_rows_act_alone(robosuite, tmp_path):
    """Two rows from two seeds act as each does alone; a saved policy loads back."""
    task = "lift"
    starts = first_observations(task, [1, 2])
    both = batch(task, [o["agent_pos"] for o in starts], [o["environment_state"] for o in starts])
    policy = RobomimicExpertPolicy(RobomimicExpertConfig())
    together = policy.select_action(both)
    for row, start in enumerate(starts):
        alone = RobomimicExpertPolicy(RobomimicExpertConfig())
        action = alone.select_action(batch(task, [start["agent_pos"]], [start["environment_state"]]))
        torch.testing.assert_close(together[row], action[0])
    assert policy.rows_reading_images(2) == []
    policy.save_pretrained(tmp_path)
    assert isinstance(RobomimicExpertPolicy.from_pretrained(tmp_path), RobomimicExpertPolicy)


def test_a_row_moved_to_another_slot_continues_its_episode(robosuite):
    """A row saved as it lifts the cube and restored into another slot of another policy acts
    as it would have in place; a fresh row, on the same observation, does not lift."""
    task = "lift"
    env = make_env(task)
    policy = RobomimicExpertPolicy(RobomimicExpertConfig())
    try:
        obs, _ = env.reset(seed=1)
        for _ in range(env.episode_length):
            saved = policy.save_rows([0])
            action = policy.select_action(batch(task, [obs["agent_pos"]], [obs["environment_state"]]))[0]
            if action[-1] > 0 and action[2] > 0.5:  # fingers closed, going up: the lift has begun
                break
            obs, *_ = env.step(action.numpy())
    finally:
        env.close()
    assert action[-1] == 1.0 and action[2] > 0.5
    moved = RobomimicExpertPolicy(RobomimicExpertConfig())
    moved.restore_rows([None, *saved])
    fresh_row, moved_row = moved.select_action(
        batch(task, [obs["agent_pos"]] * 2, [obs["environment_state"]] * 2)
    )
    torch.testing.assert_close(moved_row, action)
    assert fresh_row[2] < 0.5


def run_episode(env, policy: RobomimicExpertPolicy, task: str, seed: int) -> tuple[bool, int]:
    """(success, steps) within robomimic's horizon, ending at the first success."""
    obs, _ = env.reset(seed=seed)
    policy.reset()
    for step in range(1, env.episode_length + 1):
        action = policy.select_action(batch(task, [obs["agent_pos"]], [obs["environment_state"]]))[0]
        assert torch.all(action.abs() <= 1.0)
        obs, _, terminated, truncated, info = env.step(action.numpy())
        if info["is_success"]:
            return True, step
        if terminated or truncated:
            break
    return False, step


@pytest.mark.parametrize("task", list(TASKS))
def test_solves_each_task(robosuite, task):
    """A few seeds per task within robomimic's 400-step horizon (the 20-seed rates: see
    RobomimicExpertConfig)."""
    env = make_env(task)
    policy = RobomimicExpertPolicy(RobomimicExpertConfig())
    try:
        results = [run_episode(env, policy, task, seed) for seed in range(3)]
    finally:
        env.close()
    assert all(success for success, _ in results), results
