import numpy as np
import pytest
import torch

from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.metaworld import MetaworldEnvConfig
from lerobot.policies.factory import make_policy
from lerobot.utils.constants import ENV_TASK, OBS_ENV_STATE, OBS_STATE


def state_batch(n_rows: int) -> dict:
    return {OBS_STATE: torch.zeros(n_rows, 4)}


def test_registry_lists_the_builtin_policies():
    assert {"random", "metaworld_expert"} <= set(PreTrainedConfig.get_known_choices())


def test_random_actions_are_seeded_per_row_not_per_batch():
    env_cfg = MetaworldEnvConfig(task="push-v3")
    cfg = PreTrainedConfig.get_choice_class("random")(device="cpu")
    wide, narrow = make_policy(cfg, env_cfg=env_cfg), make_policy(cfg, env_cfg=env_cfg)
    wide.reset(env_ids=[0, 1, 2], seeds=[5, 6, 7])
    narrow.reset(env_ids=[0], seeds=[6])
    wide_actions = torch.stack([wide.select_action(state_batch(3)) for _ in range(4)])
    narrow_actions = torch.stack([narrow.select_action(state_batch(1)) for _ in range(4)])
    torch.testing.assert_close(wide_actions[:, 1], narrow_actions[:, 0])
    assert wide_actions.abs().max() <= 1.0 and wide_actions.shape == (4, 3, 4)
    # resetting one row restarts that row only
    wide.reset(env_ids=[1], seeds=[6])
    torch.testing.assert_close(wide.select_action(state_batch(3))[1], wide_actions[0, 1])


def test_random_actions_are_numpys_uniform_draws_of_the_episode_seed():
    # The fast draw must keep the published random baselines: the same numbers as
    # np.random.default_rng(seed).uniform(low, high), step after step.
    env_cfg = MetaworldEnvConfig(task="push-v3")
    policy = make_policy(PreTrainedConfig.get_choice_class("random")(device="cpu"), env_cfg=env_cfg)
    policy.reset(env_ids=[0, 1], seeds=[11, 12])
    drawn = np.stack([policy.select_action(state_batch(2)).numpy() for _ in range(50)], axis=1)
    low, high = np.full(4, -1.0, np.float32), np.full(4, 1.0, np.float32)
    for row, seed in enumerate((11, 12)):
        rng = np.random.default_rng(seed)
        expected = np.stack([rng.uniform(low, high) for _ in range(50)]).astype(np.float32)
        np.testing.assert_array_equal(drawn[row], expected)


@pytest.mark.filterwarnings("ignore:Constant")
def test_expert_acts_per_row_task(metaworld):
    from lerobot.envs.metaworld import MetaworldEnv

    policy = make_policy(
        PreTrainedConfig.get_choice_class("metaworld_expert")(), env_cfg=MetaworldEnvConfig()
    )
    states = []
    for task in ("push-v3", "reach-v3"):
        env = MetaworldEnv(task, obs_type="state")
        states.append(env.reset(seed=0)[0]["environment_state"])
        env.close()
    batch = {OBS_ENV_STATE: torch.from_numpy(np.stack(states)), ENV_TASK: ["push-v3", "reach-v3"]}
    actions = policy.select_action(batch)
    assert actions.shape == (2, 4) and actions.abs().max() <= 1.0
    expected = metaworld.policies.SawyerReachV3Policy().get_action(states[1].astype(np.float64))
    np.testing.assert_allclose(actions[1].numpy(), np.clip(expected, -1, 1), rtol=1e-6)


def test_expert_explains_what_it_needs():
    policy = make_policy(
        PreTrainedConfig.get_choice_class("metaworld_expert")(), env_cfg=MetaworldEnvConfig()
    )
    with pytest.raises(
        ValueError, match="metaworld_expert needs 'observation.environment_state' and 'env_task'"
    ):
        policy.select_action(state_batch(1))
