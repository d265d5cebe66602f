"""metaworld_expert's action noise: seeded per episode, so a noisy expert is a reproducible checkpoint."""

import numpy as np
import pytest
import torch

from lerobot.policies.metaworld_expert.configuration_metaworld_expert import MetaworldExpertConfig
from lerobot.policies.metaworld_expert.modeling_metaworld_expert import MetaworldExpertPolicy
from lerobot.utils.constants import ENV_TASK, OBS_ENV_STATE

pytest.importorskip("metaworld")


def actions(policy, seeds, n_rows):
    policy.reset(env_ids=list(range(n_rows)), seeds=seeds)
    state = torch.zeros(n_rows, 39)
    return policy.select_action({OBS_ENV_STATE: state, ENV_TASK: ["reach-v3"] * n_rows}).numpy()


def test_noise_depends_on_the_episode_seed_not_the_batch():
    noisy = MetaworldExpertPolicy(MetaworldExpertConfig(action_noise=0.3))
    alone = actions(noisy, [1003], 1)
    beside_others = actions(noisy, [1001, 1002, 1003], 3)
    np.testing.assert_array_equal(alone[0], beside_others[2])
    plain = actions(MetaworldExpertPolicy(MetaworldExpertConfig()), [1003], 1)
    assert not np.array_equal(alone, plain)


def test_negative_noise_is_refused_naming_the_flag():
    with pytest.raises(ValueError, match="--policy.action_noise=-1"):
        MetaworldExpertConfig(action_noise=-1)
