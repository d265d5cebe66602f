"""The scripted ManiSkill expert: its observation layouts, its kinematics and that it solves
each scripted task in the real simulator (physx_cpu, state only)."""

import numpy as np
import pytest
import torch

from lerobot.policies.maniskill_expert.configuration_maniskill_expert import ManiskillExpertConfig
from lerobot.policies.maniskill_expert.modeling_maniskill_expert import ManiskillExpertPolicy
from lerobot.policies.maniskill_expert.tasks import EXPERT_CONTROL_MODES, TASKS, kinematics

gym = pytest.importorskip("gymnasium")
pytest.importorskip("mani_skill", reason="the maniskill extra is not installed")

from lerobot.envs.maniskill.observation import flat_vector, leaf_names  # noqa: E402


def make_env(task: str):
    import mani_skill.envs  # noqa: F401  (registers the tasks)

    return gym.make(
        task,
        obs_mode="state_dict",
        sim_backend="physx_cpu",
        render_backend="cpu",
        control_mode=EXPERT_CONTROL_MODES[task],
    )


def batch_of(obs, task: str) -> dict:
    return {
        "observation.state": torch.from_numpy(flat_vector(obs["agent"]))[None],
        "observation.environment_state": torch.from_numpy(flat_vector(obs["extra"]))[None],
        "env_task": [task],
    }


def run_episode(env, policy: ManiskillExpertPolicy, task: str, seed: int) -> tuple[bool, int]:
    """(success, steps) within ManiSkill's registered step limit."""
    from mani_skill.utils.registration import REGISTERED_ENVS

    obs, _ = env.reset(seed=seed)
    policy.reset()
    for step in range(1, REGISTERED_ENVS[task].max_episode_steps + 1):
        obs, _, terminated, truncated, info = env.step(policy.select_action(batch_of(obs, task))[0].numpy())
        if bool(info["success"][0]):
            return True, step
        if bool(terminated[0]) or bool(truncated[0]):
            break
    return False, step


@pytest.mark.parametrize("task", list(TASKS))
def test_layouts_and_kinematics_match_the_real_env(task):
    """The extra-state table is ManiSkill's dict order, and the arm's forward kinematics from
    qpos put its tool frame where ManiSkill's TCP frame is (and, for the Panda, its point)."""
    env = make_env(task)
    try:
        obs, _ = env.reset(seed=0)
        assert leaf_names(obs["extra"]) == list(TASKS[task].extra_layout)
        qpos = obs["agent"]["qpos"][0].numpy().astype(np.float64)
        position, rotation, _ = kinematics(TASKS[task].arm).tool(qpos)
        tcp = env.unwrapped.agent.tcp_pose
        from lerobot.policies.maniskill_expert.scripts import quaternion_matrix

        np.testing.assert_allclose(
            rotation, quaternion_matrix(tcp.q[0].numpy().astype(np.float64)), atol=1e-5
        )
        tool_link = env.unwrapped.agent.robot.links_map[TASKS[task].arm.tool_link].pose
        expected = (
            tool_link.p[0].numpy() + quaternion_matrix(tool_link.q[0].numpy()) @ TASKS[task].arm.tool_point
        )
        np.testing.assert_allclose(position, expected, atol=1e-5)
    finally:
        env.close()


def test_unscripted_task_is_one_line_naming_the_scripted_ones():
    policy = ManiskillExpertPolicy(ManiskillExpertConfig())
    batch = {
        "observation.state": torch.zeros(1, 18),
        "observation.environment_state": torch.zeros(1, 24),
        "env_task": ["PegInsertionSide-v1"],
    }
    with pytest.raises(
        ValueError, match=r"no script for task 'PegInsertionSide-v1'; scripted tasks: PickCube-v1"
    ):
        policy.select_action(batch)


def test_needs_state_and_task():
    policy = ManiskillExpertPolicy(ManiskillExpertConfig())
    with pytest.raises(ValueError, match="needs 'observation.environment_state', 'env_task'"):
        policy.select_action({"observation.state": torch.zeros(1, 18)})


def test_rows_act_alone_and_save_and_load(tmp_path):
    """Two rows from two seeds act as each does alone; a saved policy loads back."""
    task = "PickCube-v1"
    env = make_env(task)
    try:
        starts = [batch_of(env.reset(seed=seed)[0], task) for seed in (1, 2)]
    finally:
        env.close()
    both = {key: torch.cat([s[key] for s in starts]) for key in starts[0] if key != "env_task"}
    both["env_task"] = [task, task]
    policy = ManiskillExpertPolicy(ManiskillExpertConfig())
    together = policy.select_action(both)
    for row, start in enumerate(starts):
        alone = ManiskillExpertPolicy(ManiskillExpertConfig()).select_action(start)
        torch.testing.assert_close(together[row], alone[0])
    policy.save_pretrained(tmp_path)
    assert isinstance(ManiskillExpertPolicy.from_pretrained(tmp_path), ManiskillExpertPolicy)


SEEDS = {task: range(3) for task in TASKS} | {"PickCubeSO100-v1": range(8)}
"""The SO-100 gets more: its success needs the arm to read as still while the jaws hold the
cube, which a too-tight grip breaks on some seeds only."""


@pytest.mark.slow
@pytest.mark.parametrize("task", list(TASKS))
def test_solves_each_task(task):
    """A few seeds per task, within ManiSkill's step limit (20 seeds each: see
    benchmarks/maniskill_expert_rates.py)."""
    env = make_env(task)
    policy = ManiskillExpertPolicy(ManiskillExpertConfig())
    try:
        results = [run_episode(env, policy, task, seed) for seed in SEEDS[task]]
    finally:
        env.close()
    assert all(success for success, _ in results), results


def test_a_run_the_scripts_cannot_act_in_is_refused_before_anything_starts():
    """for_env checks every task: scripted, and run in its script's control mode."""
    from lerobot.envs.maniskill import ManiskillEnvConfig
    from lerobot.policies.maniskill_expert.configuration_maniskill_expert import ManiskillExpertConfig
    from lerobot.policies.maniskill_expert.modeling_maniskill_expert import ManiskillExpertPolicy
    from lerobot.utils.errors import ConfigError

    config = ManiskillExpertConfig()
    so100 = ManiskillEnvConfig(task="PickCubeSO100-v1", obs_type="state")
    with pytest.raises(
        ConfigError, match=r"PickCubeSO100-v1 script acts in pd_joint_pos.*--env.control_mode=pd_joint_pos$"
    ):
        ManiskillExpertPolicy.for_env(config, so100)
    with pytest.raises(ConfigError, match=r"no script for task 'PullCube-v1'"):
        ManiskillExpertPolicy.for_env(config, ManiskillEnvConfig(task="PickCube,PullCube", obs_type="state"))
    fitting = ManiskillEnvConfig(task="PickCubeSO100-v1", obs_type="state", control_mode="pd_joint_pos")
    assert isinstance(ManiskillExpertPolicy.for_env(config, fitting), ManiskillExpertPolicy)
