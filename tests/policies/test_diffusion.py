"""Diffusion Policy against actions LeRobot 0.6.1 computed with the same weights and noise.

Fixtures: `diffusion` (DDPM, 100 steps, GroupNorm backbone, 84x84 centre crop),
`diffusion_ddim` (DDIM, 10 steps, BatchNorm backbone, two cameras resized then cropped, env state),
and `diffusion_pusht` (PushT's shapes) with its noise.safetensors: LeRobot's actions for a given
`noise` argument (scripts/make_noise_fixtures.py).
"""

import pytest
import torch
from safetensors.torch import load_file

from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy, center_crop
from lerobot.policies.factory import make_pre_post_processors
from tests.policies import seeded_inputs
from tests.policies.checkpoints import ENV_FLAGS, FIXTURES, expected, load, materialize, raw_step

TOLERANCE = {"atol": 1e-5, "rtol": 0}
NAMES = ("diffusion", "diffusion_ddim")
N_STEPS = 10  # n_action_steps=8: the second chunk starts at step 8
CHUNK_SEED, EPISODE_SEED = 1234, 99


def load_fixture(checkpoints, name, *flags):
    return load(checkpoints[name], *flags, env_flags=ENV_FLAGS[name])


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_loads_and_inputs_normalise_as_in_lerobot(checkpoints, name):
    recorded = expected(name)
    loaded = load_fixture(checkpoints, name)
    assert isinstance(loaded.policy, DiffusionPolicy)
    batch = loaded.preprocessor(raw_step(recorded, 0))
    compared = [k for k in batch if f"normalized.0.{k}" in recorded]
    assert len(compared) == len(loaded.cfg.policy.input_features)
    for key in compared:
        torch.testing.assert_close(batch[key], recorded[f"normalized.0.{key}"], **TOLERANCE)


@pytest.mark.parametrize("name", NAMES)
def test_chunk_from_fixed_noise_matches_lerobot(checkpoints, name):
    """Initial noise given; DDPM's per-step noise from a generator seeded as LeRobot's global one."""
    recorded = expected(name)
    loaded = load_fixture(checkpoints, name)
    steps = [loaded.preprocessor(raw_step(recorded, i)) for i in (0, 1)]
    history = {k: torch.stack([steps[0][k], steps[1][k]], dim=1) for k in loaded.cfg.policy.input_features}
    generator = torch.Generator().manual_seed(CHUNK_SEED)
    chunk = loaded.policy.predict_action_chunk(history, noise=recorded["noise"].clone(), generator=generator)
    torch.testing.assert_close(chunk, recorded["chunk.normalized"], **TOLERANCE)
    torch.testing.assert_close(loaded.postprocessor(chunk), recorded["chunk.unnormalized"], **TOLERANCE)


@pytest.mark.parametrize("name", NAMES)
def test_seeded_episode_matches_lerobot_after_manual_seed(checkpoints, name):
    """One env, episode seed 99: our per-row generator replays LeRobot's torch.manual_seed(99) run,
    observation history and two chunks included."""
    recorded = expected(name)
    loaded = load_fixture(checkpoints, name)
    loaded.policy.reset(env_ids=[0], seeds=[EPISODE_SEED])
    actions = torch.stack([loaded.act(raw_step(recorded, i, rows=slice(0, 1))) for i in range(N_STEPS)])
    torch.testing.assert_close(actions, recorded["select_action.single_row"], **TOLERANCE)


def test_a_rows_actions_depend_on_its_seed_not_on_its_batch(checkpoints):
    """Row 1 restarts at step 2 with seed 5: it then acts as a lone env seeded 5, while row 0
    (seed 99) keeps its history, queue and noise stream, as if row 1 did not exist."""
    name = "diffusion_ddim"
    recorded = expected(name)
    pair, lone, other = (load_fixture(checkpoints, name, "--policy.n_action_steps=3") for _ in range(3))
    pair.policy.reset(env_ids=[0, 1], seeds=[EPISODE_SEED, 3])
    other.policy.reset(env_ids=[0], seeds=[EPISODE_SEED])
    lone.policy.reset(env_ids=[0], seeds=[5])
    for i in range(N_STEPS):
        if i == 2:
            pair.policy.reset(env_ids=[1], seeds=[5])
        both = pair.act(raw_step(recorded, i))
        torch.testing.assert_close(
            both[:1], other.act(raw_step(recorded, i, rows=slice(0, 1))), atol=1e-5, rtol=1e-5
        )
        if i >= 2:
            torch.testing.assert_close(
                both[1:], lone.act(raw_step(recorded, i, rows=slice(1, 2))), atol=1e-5, rtol=1e-5
            )


def test_different_seeds_give_different_actions(checkpoints):
    recorded = expected("diffusion")
    loaded = load_fixture(checkpoints, "diffusion", "--policy.num_inference_steps=10")
    loaded.policy.reset(env_ids=[0, 1], seeds=[1, 2])
    same_obs = {k: v[:1].expand(2, *v.shape[1:]) for k, v in raw_step(recorded, 0).items()}
    actions = loaded.act(same_obs)
    assert not torch.allclose(actions[0], actions[1])


# --- the `noise` argument, against LeRobot's diffusion_pusht actions ---------------------------
NOISE_RECORD = FIXTURES / "diffusion_pusht" / "noise.safetensors"
DDIM = {"noise_scheduler_type": "DDIM", "num_inference_steps": 10}  # actions: inputs and noise alone


@pytest.fixture(scope="module")
def pusht_checkpoint(tmp_path_factory):
    return materialize("diffusion_pusht", tmp_path_factory.mktemp("diffusion_pusht"))


def load_as_lerobot_user(path, **overrides):
    """Our DiffusionPolicy.from_pretrained and preprocessor, called as the fixture script calls
    LeRobot's; the normalised PushT steps of `seeded_inputs`, pixels in [0, 1]."""
    config = PreTrainedConfig.from_pretrained(path)
    for field, value in overrides.items():
        setattr(config, field, value)
    policy = DiffusionPolicy.from_pretrained(path, config=config)
    preprocessor, _ = make_pre_post_processors(config, pretrained_path=path)
    steps = [
        preprocessor({k: v.float() / 255.0 if v.dtype == torch.uint8 else v for k, v in step.items()})
        for step in seeded_inputs.pusht_steps()
    ]
    return policy, steps


def test_select_action_starts_each_chunk_from_the_given_noise_as_lerobot(pusht_checkpoint):
    """DDIM, two envs, ten steps (two chunks): `select_action(batch, noise=noise)` gives LeRobot's."""
    recorded = load_file(NOISE_RECORD)
    assert torch.equal(seeded_inputs.steps_digest(seeded_inputs.pusht_steps()), recorded["inputs_sha256"])
    policy, steps = load_as_lerobot_user(pusht_checkpoint, **DDIM)
    policy.reset()
    actions = torch.stack([policy.select_action(step, noise=recorded["noise"].clone()) for step in steps])
    torch.testing.assert_close(actions, recorded["ddim.select_action"], **TOLERANCE)


def test_predict_action_chunk_reads_the_history_select_action_keeps_as_lerobot(pusht_checkpoint):
    """A fresh policy predicts from the batch's own history; after select_action, from the
    history it keeps (the batch's values are not read), both from the given noise."""
    recorded = load_file(NOISE_RECORD)
    policy, steps = load_as_lerobot_user(pusht_checkpoint, **DDIM)
    history = {k: torch.stack([steps[0][k], steps[1][k]], dim=1) for k in policy.config.input_features}
    policy.reset()
    chunk = policy.predict_action_chunk(history, noise=recorded["noise"].clone())
    torch.testing.assert_close(chunk, recorded["ddim.chunk"], **TOLERANCE)
    policy.reset()
    for step in steps[:3]:
        policy.select_action(step, noise=recorded["noise"].clone())
    chunk = policy.predict_action_chunk(steps[2], noise=recorded["noise"].clone())
    torch.testing.assert_close(chunk, recorded["ddim.chunk_after_select_action"], **TOLERANCE)


def test_given_noise_with_ddpm_steps_from_the_rows_seed_matches_lerobot(pusht_checkpoint):
    """The checkpoint as saved (DDPM, 100 steps), one env: the initial sample is the given noise,
    the later steps' noise comes from the row's generator, seeded as LeRobot's global one."""
    recorded = load_file(NOISE_RECORD)
    policy, steps = load_as_lerobot_user(pusht_checkpoint)
    policy.reset(env_ids=[0], seeds=[EPISODE_SEED])
    noise = recorded["noise"][:1]
    first_row = [{k: v[:1] if isinstance(v, torch.Tensor) else v for k, v in s.items()} for s in steps]
    actions = [policy.select_action(step, noise=noise.clone()) for step in first_row]
    torch.testing.assert_close(torch.stack(actions), recorded["ddpm.select_action.row_0"], **TOLERANCE)


def test_center_crop_pads_small_images_and_rounds_offsets_half_to_even():
    """torchvision's CenterCrop, whose offsets use Python's round(): 2.5 -> 2, 1.5 -> 2."""
    image = torch.arange(6 * 6, dtype=torch.float32).view(1, 1, 6, 6)
    assert center_crop(image, (1, 1)).item() == 2 * 6 + 2
    assert center_crop(image[..., :5, :5], (2, 2)).flatten().tolist() == [14.0, 15.0, 20.0, 21.0]
    padded = center_crop(torch.ones(1, 1, 2, 2), (4, 4))
    assert padded.shape == (1, 1, 4, 4) and padded.sum() == 4 and padded[0, 0, 1:3, 1:3].sum() == 4
