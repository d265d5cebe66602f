"""ACT against actions LeRobot 0.6.1 computed with the same weights (tests/fixtures/policies/act)."""

import pytest
import torch

from lerobot.policies.act.modeling_act import ACTPolicy
from tests.policies.checkpoints import expected, load, raw_step

TOLERANCE = {"atol": 1e-5, "rtol": 0}
N_STEPS = 7


@pytest.fixture(scope="module")
def recorded():
    return expected("act")


def test_checkpoint_loads_with_strict_keys_and_inputs_normalise_as_in_lerobot(checkpoints, recorded):
    loaded = load(checkpoints["act"])
    assert isinstance(loaded.policy, ACTPolicy) and not loaded.policy.training
    batch = loaded.preprocessor(raw_step(recorded, 0))
    for key in ("observation.image", "observation.state"):
        torch.testing.assert_close(batch[key], recorded[f"normalized.0.{key}"], **TOLERANCE)


def test_chunk_matches_lerobot(checkpoints, recorded):
    loaded = load(checkpoints["act"])
    chunk = loaded.policy.predict_action_chunk(loaded.preprocessor(raw_step(recorded, 0)))
    torch.testing.assert_close(chunk, recorded["chunk.normalized"], **TOLERANCE)
    torch.testing.assert_close(loaded.postprocessor(chunk), recorded["chunk.unnormalized"], **TOLERANCE)


def test_executed_actions_match_lerobot_across_a_chunk_boundary(checkpoints, recorded):
    """n_action_steps=5: steps 0-4 come from the first chunk, steps 5-6 from a new one."""
    loaded = load(checkpoints["act"])
    loaded.policy.reset()
    actions = torch.stack([loaded.act(raw_step(recorded, i)) for i in range(N_STEPS)])
    torch.testing.assert_close(actions, recorded["select_action"], **TOLERANCE)


def test_temporal_ensembling_matches_lerobot(checkpoints, recorded):
    loaded = load(checkpoints["act"], "--policy.temporal_ensemble_coeff=0.01", "--policy.n_action_steps=1")
    loaded.policy.reset()
    actions = torch.stack([loaded.act(raw_step(recorded, i)) for i in range(N_STEPS)])
    torch.testing.assert_close(actions, recorded["temporal_ensemble"], **TOLERANCE)


@pytest.mark.parametrize(
    "flags", [(), ("--policy.temporal_ensemble_coeff=0.01", "--policy.n_action_steps=1")]
)
def test_resetting_one_row_restarts_that_row_only(checkpoints, recorded, flags):
    """Row 1 starts a new episode at step 3: from then on it acts exactly like a fresh policy
    that sees the same observations, while row 0 keeps executing its chunk."""
    batch_policy, fresh_policy = load(checkpoints["act"], *flags), load(checkpoints["act"], *flags)
    batch_policy.policy.reset(env_ids=[0, 1], seeds=[0, 1])
    before = [batch_policy.act(raw_step(recorded, i)) for i in range(3)]
    batch_policy.policy.reset(env_ids=[1], seeds=[7])
    fresh_policy.policy.reset(env_ids=[0], seeds=[7])
    for i in range(3, N_STEPS):
        both = batch_policy.act(raw_step(recorded, i))
        alone = fresh_policy.act(raw_step(recorded, i, rows=slice(1, 2)))
        torch.testing.assert_close(both[1:], alone, atol=1e-5, rtol=1e-5)
        before.append(both)
    uninterrupted = load(checkpoints["act"], *flags)
    uninterrupted.policy.reset()
    row0 = torch.stack([uninterrupted.act(raw_step(recorded, i))[0] for i in range(N_STEPS)])
    torch.testing.assert_close(torch.stack(before)[:, 0], row0, atol=1e-5, rtol=1e-5)


def test_n_action_steps_is_overridable_from_the_command_line(checkpoints, recorded):
    """With n_action_steps=1 the policy predicts every step: each action is its chunk's first."""
    loaded = load(checkpoints["act"], "--policy.n_action_steps=1")
    assert loaded.cfg.policy.n_action_steps == 1 and loaded.cfg.policy.chunk_size == 10
    loaded.policy.reset()
    for i in range(3):
        batch = loaded.preprocessor(raw_step(recorded, i))
        first = loaded.postprocessor(loaded.policy.predict_action_chunk(batch)[:, 0])
        torch.testing.assert_close(loaded.act(raw_step(recorded, i)), first)
