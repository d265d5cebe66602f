"""The scripted ALOHA policy: its geometry, its per-row plans, and that it solves transfer-cube."""

import json

import numpy as np
import pytest
import torch

from lerobot.envs.aloha.env import AlohaEnv
from lerobot.policies.aloha_scripted.configuration_aloha_scripted import AlohaScriptedConfig
from lerobot.policies.aloha_scripted.modeling_aloha_scripted import AlohaScriptedPolicy
from lerobot.policies.aloha_scripted.waypoints import (
    CLOSED,
    CUBE_HALF_SIZE,
    OPEN,
    Waypoint,
    interpolate,
    multiply,
    quaternion,
    rotate,
    transfer_cube_plan,
)
from lerobot.scripts.lerobot_eval import main


def test_quaternions_rotate_as_right_handed_turns():
    np.testing.assert_allclose(
        rotate(quaternion((0, 0, 1), 90), np.array([1.0, 0, 0])), [0, 1, 0], atol=1e-12
    )
    np.testing.assert_allclose(
        rotate(quaternion((0, 1, 0), 90), np.array([1.0, 0, 0])), [0, 0, -1], atol=1e-12
    )
    turn = multiply(quaternion((0, 0, 1), 90), quaternion((0, 0, 1), 90))
    np.testing.assert_allclose(rotate(turn, np.array([1.0, 0, 0])), [-1, 0, 0], atol=1e-12)


def test_interpolation_is_linear_between_waypoints_and_holds_outside():
    q = quaternion((1, 0, 0), 0)
    waypoints = (Waypoint(10, np.zeros(3), q, OPEN), Waypoint(20, np.array([1.0, 2.0, 3.0]), q, CLOSED))
    position, _, opening = interpolate(waypoints, 15)
    np.testing.assert_allclose(position, [0.5, 1.0, 1.5])
    assert opening == pytest.approx(0.5)
    assert interpolate(waypoints, 0)[2] == OPEN and interpolate(waypoints, 99)[2] == CLOSED


def test_transfer_plan_grasps_the_resting_cube_then_hands_it_over():
    plan = transfer_cube_plan(np.array([0.1, 0.5, 0.05]))  # gym-aloha drops the cube from 3 cm up
    closing = next(w for w in plan.right if w.opening == CLOSED)
    np.testing.assert_allclose(closing.position, [0.1, 0.5, CUBE_HALF_SIZE])
    handed_over = plan.revise(np.array([0.0, 0.49, 0.24]))
    assert handed_over.left[-1].opening == CLOSED and handed_over.right[-1].opening == OPEN
    assert handed_over.revise is None


def test_needs_the_object_poses_and_the_task():
    policy = AlohaScriptedPolicy(AlohaScriptedConfig())
    with pytest.raises(
        ValueError, match="needs 'observation.environment_state' and 'env_task'.*--env.type=aloha"
    ):
        policy.select_action({"observation.state": torch.zeros(1, 14)})
    with pytest.raises(ValueError, match="no script for task 'push-v3'"):
        policy.select_action({"observation.environment_state": torch.zeros(1, 14), "env_task": ["push-v3"]})


def test_resetting_a_row_replans_that_row_only():
    env = AlohaEnv("AlohaTransferCube-v0", obs_type="state")
    try:
        starts = [env.reset(seed=seed)[0]["environment_state"] for seed in (1, 2)]
    finally:
        env.close()
    policy = AlohaScriptedPolicy(AlohaScriptedConfig(), n_steps=20)
    batch = {
        "observation.environment_state": torch.from_numpy(np.stack(starts)),
        "env_task": ["AlohaTransferCube-v0"] * 2,
    }
    first = [policy.select_action(batch) for _ in range(3)]
    policy.reset(env_ids=[1], seeds=[5])
    after = policy.select_action(batch)
    torch.testing.assert_close(after[1], first[0][1])  # row 1 starts its plan again
    assert not torch.equal(after[0], first[0][0])  # row 0 carries on with its fourth step


@pytest.mark.slow
def test_solves_transfer_cube(tmp_path):
    """Two episodes in two async workers, without cameras: both succeed (50 out of 50 episodes,
    measured from seed 1000)."""
    out = tmp_path / "out"
    flags = ["--policy.type=aloha_scripted", "--env.type=aloha", "--env.task=AlohaTransferCube-v0"]
    flags += [
        "--env.obs_type=state",
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        "--eval.max_episodes_rendered=0",
    ]
    assert main([*flags, f"--output_dir={out}"]) == 0
    info = json.loads((out / "eval_info.json").read_text())
    assert [e["success"] for e in info["per_episode"]] == [True, True]
    assert info["overall"]["avg_max_reward"] == 4.0
