"""LeRobot 0.6.1 checkpoints in PushT's and ALOHA's shapes give LeRobot's actions, and evaluate.

Fixtures (scripts/make_pusht_aloha_fixtures.py): `diffusion_pusht`, a small random Diffusion
Policy with LeRobot's PushT inputs (96x96 image, 2-d state, 2-d action, 84x84 crop), and
`act_aloha`, a small random ACT with ALOHA's (top camera, 14-d state and action). Their inputs
come from `seeded_inputs`, drawn the same way on both sides.
"""

import json

import pytest
import torch

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.policies.factory import make_policy, make_pre_post_processors
from lerobot.scripts.lerobot_eval import main
from tests.policies import seeded_inputs
from tests.policies.checkpoints import expected, materialize

# Actions in pixels (PushT, up to 512) or radians (ALOHA): float32 rounding of LeRobot's arithmetic.
TOLERANCE = {"atol": 1e-4, "rtol": 1e-6}
CHUNK_SEED, EPISODE_SEED = 1234, 99


@pytest.fixture(scope="module")
def benchmark_checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("benchmark_checkpoints")
    return {name: materialize(name, root / name) for name in ("diffusion_pusht", "act_aloha")}


def load(path, env_type: str):
    cfg = parse_config(
        EvalPipelineConfig, [f"--env.type={env_type}", f"--policy.path={path}", "--policy.device=cpu"]
    )
    return make_policy(cfg.policy, cfg.env), *make_pre_post_processors(cfg.policy)


def as_env_batch(step: dict[str, torch.Tensor], rows: slice = slice(None)) -> dict[str, torch.Tensor]:
    """Pixels as float in [0, 1], as the rollout hands them to the preprocessor."""
    return {k: (v[rows].float() / 255.0 if v.dtype == torch.uint8 else v[rows]) for k, v in step.items()}


def test_both_sides_drew_the_same_inputs():
    assert torch.equal(
        seeded_inputs.steps_digest(seeded_inputs.pusht_steps()), expected("diffusion_pusht")["inputs_sha256"]
    )
    assert torch.equal(
        seeded_inputs.steps_digest(seeded_inputs.aloha_steps()), expected("act_aloha")["inputs_sha256"]
    )


def test_diffusion_pusht_chunk_from_fixed_noise_matches_lerobot(benchmark_checkpoints):
    """LeRobot: `torch.manual_seed(1234)`, then the chunk from fixed initial noise (its DDPM
    steps draw their noise from the global generator); ours: a generator seeded 1234."""
    recorded = expected("diffusion_pusht")
    policy, pre, post = load(benchmark_checkpoints["diffusion_pusht"], "pusht")
    steps = [pre(as_env_batch(s)) for s in seeded_inputs.pusht_steps()[:2]]
    history = {k: torch.stack([steps[0][k], steps[1][k]], dim=1) for k in policy.config.input_features}
    generator = torch.Generator().manual_seed(CHUNK_SEED)
    chunk = policy.predict_action_chunk(history, noise=recorded["noise"].clone(), generator=generator)
    torch.testing.assert_close(post(chunk), recorded["chunk.unnormalized"], **TOLERANCE)


def test_diffusion_pusht_seeded_episode_matches_lerobot(benchmark_checkpoints):
    """One env, episode seed 99 (LeRobot: `torch.manual_seed(99)`), ten steps: two chunks."""
    recorded = expected("diffusion_pusht")
    policy, pre, post = load(benchmark_checkpoints["diffusion_pusht"], "pusht")
    policy.reset(env_ids=[0], seeds=[EPISODE_SEED])
    actions = [
        post(policy.select_action(pre(as_env_batch(s, slice(0, 1))))) for s in seeded_inputs.pusht_steps()
    ]
    torch.testing.assert_close(torch.stack(actions), recorded["select_action.single_row"], **TOLERANCE)


def test_act_aloha_actions_match_lerobot_across_a_chunk_boundary(benchmark_checkpoints):
    recorded = expected("act_aloha")
    policy, pre, post = load(benchmark_checkpoints["act_aloha"], "aloha")
    policy.reset()
    actions = [post(policy.select_action(pre(as_env_batch(s)))) for s in seeded_inputs.aloha_steps()]
    torch.testing.assert_close(torch.stack(actions), recorded["select_action"], **TOLERANCE)


@pytest.mark.parametrize(
    ("name", "env_flags"),
    [
        ("diffusion_pusht", ["--env.type=pusht"]),
        # At the checkpoint's own 480x640: another size is refused, as LeRobot's data never has it.
        ("act_aloha", ["--env.type=aloha", "--env.task=AlohaTransferCube-v0"]),
    ],
)
def test_checkpoint_evaluates_unchanged(tmp_path, benchmark_checkpoints, name, env_flags):
    out = tmp_path / "out"
    flags = [f"--policy.path={benchmark_checkpoints[name]}", "--policy.device=cpu", "--env.episode_length=3"]
    assert main([*flags, *env_flags, "--eval.n_episodes=1", f"--output_dir={out}"]) == 0
    info = json.loads((out / "eval_info.json").read_text())
    [episode] = info["per_episode"]
    assert episode["n_steps"] == 3 and episode["seed"] == 1000
    assert (out / episode["video_path"]).is_file() or (tmp_path / episode["video_path"]).is_file()
