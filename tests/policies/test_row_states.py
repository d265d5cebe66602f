"""Rows move between batches with `save_rows`/`restore_rows` and continue exactly where they were.

This is what lets one policy server batch the rows of many clients: a row's actions must not
depend on which rows share its call or at which position it sits. Each policy is driven
twice over the same per-row observations and episode starts: once as one fixed batch (as a
local evaluation runs it), once with its rows shuffled and split over several calls per step.
"""

import pytest
import torch

from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.policies.random.modeling_random import RandomPolicy
from tests.policies.checkpoints import ENV_FLAGS, load

N_ROWS, N_STEPS = 3, 9
# Episode starts: (step, row) -> seed. Row 1 starts a second episode mid-run, off the chunk grid.
STARTS = {(0, 0): 10, (0, 1): 11, (0, 2): 12, (3, 1): 20, (6, 2): 21}
# Per step, the calls of the moved run: row ids in batch order.
CALLS = [[[2, 0], [1]], [[1, 2, 0]], [[0], [2], [1]]]


def observation(features: dict, step: int, row: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1000 * step + row)
    out = {}
    for key, feature in features.items():
        out[key] = torch.rand(tuple(feature.shape), generator=generator)
    return out


def stack(rows: list[dict]) -> dict[str, torch.Tensor]:
    return {key: torch.stack([row[key] for row in rows]) for key in rows[0]}


def drive_fixed(policy, act, features) -> dict[tuple[int, int], torch.Tensor]:
    actions = {}
    for step in range(N_STEPS):
        starting = [row for row in range(N_ROWS) if (step, row) in STARTS]
        if starting:
            policy.reset(env_ids=starting, seeds=[STARTS[step, row] for row in starting])
        batch = stack([observation(features, step, row) for row in range(N_ROWS)])
        for row, action in enumerate(act(batch)):
            actions[step, row] = action
    return actions


def drive_moved(policy, act, features) -> dict[tuple[int, int], torch.Tensor]:
    actions, states = {}, {}
    for step in range(N_STEPS):
        for rows in CALLS[step % len(CALLS)]:
            policy.restore_rows([None if (step, row) in STARTS else states.get(row) for row in rows])
            starting = [i for i, row in enumerate(rows) if (step, row) in STARTS]
            if starting:
                policy.reset(env_ids=starting, seeds=[STARTS[step, rows[i]] for i in starting])
            batch = stack([observation(features, step, row) for row in rows])
            for row, action in zip(rows, act(batch), strict=True):
                actions[step, row] = action
            states.update(zip(rows, policy.save_rows(range(len(rows))), strict=True))
    return actions


def assert_same(fixed, moved):
    assert fixed.keys() == moved.keys()
    for key in fixed:
        torch.testing.assert_close(moved[key], fixed[key], rtol=1e-5, atol=1e-6, msg=f"step, row = {key}")


CASES = {
    "act": ("act", ()),
    "act_temporal_ensemble": ("act", ("--policy.temporal_ensemble_coeff=0.01", "--policy.n_action_steps=1")),
    "diffusion_ddim": ("diffusion_ddim", ()),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_checkpoint_rows_continue_in_any_batch(checkpoints, case):
    name, flags = case
    loaded = load(checkpoints[name], *flags, env_flags=ENV_FLAGS[name])
    features = loaded.cfg.policy.input_features
    fixed = drive_fixed(loaded.policy, loaded.act, features)
    loaded.policy.reset()
    assert_same(fixed, drive_moved(loaded.policy, loaded.act, features))


def test_random_rows_keep_their_generators():
    policy = RandomPolicy(RandomConfig(device="cpu"), -torch.ones(2).numpy(), torch.ones(2).numpy())
    features = {"observation.state": type("F", (), {"shape": (2,)})()}
    fixed = drive_fixed(policy, policy.select_action, features)
    policy.reset()
    assert_same(fixed, drive_moved(policy, policy.select_action, features))


def test_a_policy_without_row_state_support_says_so():
    from lerobot.policies.pretrained import PreTrainedPolicy

    class Stateful(PreTrainedPolicy):
        name = "stateful"

        def reset(self, env_ids=None, seeds=None): ...

        def select_action(self, batch): ...

    with pytest.raises(NotImplementedError, match="'stateful' cannot move its per-row state"):
        Stateful(RandomConfig()).save_rows([0])
