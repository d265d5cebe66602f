"""Write the LeRobot 0.6.1 reference fixtures for PushT and ALOHA (run once, by hand).

Two steps, in two environments:

1. With this project's environment, the scripted ALOHA actions that step 2 replays in LeRobot's
   env (our `aloha_scripted` policy on transfer-cube, seed 1000; a few start-pose steps on
   insertion):

       .venv/bin/python scripts/make_pusht_aloha_fixtures.py --scripted-actions

2. With LeRobot 0.6.1 in a scratch virtual environment outside this repository (never a
   dependency of this project), and the simulators this project pins:

       uv venv -p 3.12 /tmp/pushtaloha-ref
       uv pip install -p /tmp/pushtaloha-ref/bin/python "lerobot[diffusion,pusht,aloha]==0.6.1" \\
           mujoco==3.3.0 dm-control==1.0.28
       /tmp/pushtaloha-ref/bin/python scripts/make_pusht_aloha_fixtures.py

   It writes, under tests/fixtures/:
   - policies/diffusion_pusht/ and policies/act_aloha/: small random Diffusion (PushT's
     shapes) and ACT (ALOHA's shapes) policies saved by LeRobot's own `save_pretrained`,
     backbones split off as in scripts/make_policy_fixtures.py, and `expected.safetensors`
     with LeRobot's actions. The inputs are not stored: they are drawn from a seeded CPU
     generator (`seeded_inputs`, the same code in the tests), with a digest to check that both
     sides drew the same;
   - envs/pusht_lerobot.npz and envs/aloha_lerobot.npz: what LeRobot's own env (its `make_env`,
     a vector env, reset with one seed per env as its eval does) returned for fixed actions:
     states, rewards, successes, PushT's images, and digests of ALOHA's top-camera images.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
ACTIONS = FIXTURES / "envs" / "aloha_scripted_actions.npz"
TRANSFER_SEED = 1000
INSERTION_SEED = 1000
INSERTION_STEPS = 3
PUSHT_SEEDS = (1000, 1001)
PUSHT_STEPS = 8


def load_sibling(name: str):
    """Import a helper module of this repository by path (its package is also called lerobot)."""
    path = REPO / name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def digest(frame: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()


# --- step 1: our scripted actions ---------------------------------------------------------
def write_scripted_actions() -> None:
    """Our aloha_scripted policy's actions for one transfer-cube episode, run in our env."""
    import torch

    from lerobot.envs.aloha import AlohaEnv
    from lerobot.policies.aloha_scripted.configuration_aloha_scripted import AlohaScriptedConfig
    from lerobot.policies.aloha_scripted.modeling_aloha_scripted import AlohaScriptedPolicy

    env = AlohaEnv("AlohaTransferCube-v0", obs_type="state")
    policy = AlohaScriptedPolicy(AlohaScriptedConfig())
    obs, _ = env.reset(seed=TRANSFER_SEED)
    actions = []
    for _ in range(env.episode_length):
        batch = {
            "observation.environment_state": torch.from_numpy(obs["environment_state"][None]),
            "env_task": ["AlohaTransferCube-v0"],
        }
        actions.append(policy.select_action(batch)[0].numpy())
        obs, reward, terminated, _, _ = env.step(actions[-1])
        if terminated:
            break
    env.close()
    print(f"transfer-cube seed {TRANSFER_SEED}: {len(actions)} steps, last reward {reward}")
    start_pose = np.tile(actions[0], (INSERTION_STEPS, 1))
    ACTIONS.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(ACTIONS, transfer_cube=np.stack(actions), insertion=start_pose)


# --- step 2: LeRobot's policies -----------------------------------------------------------
def seeded_inputs():
    return load_sibling("tests/policies/seeded_inputs.py")


def make_diffusion_pusht(shared, inputs) -> None:
    import torch

    from lerobot.configs import FeatureType, PolicyFeature
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
    from lerobot.policies.factory import make_pre_post_processors

    config = DiffusionConfig(
        input_features={
            "observation.image": PolicyFeature(FeatureType.VISUAL, (3, 96, 96)),
            "observation.state": PolicyFeature(FeatureType.STATE, (2,)),
        },
        output_features={"action": PolicyFeature(FeatureType.ACTION, (2,))},
        device="cpu",
        pretrained_backbone_weights=None,
        crop_shape=(84, 84),
        n_obs_steps=2,
        horizon=16,
        n_action_steps=8,
        down_dims=(16, 32),
        kernel_size=3,
        n_groups=4,
        diffusion_step_embed_dim=16,
        spatial_softmax_num_keypoints=4,
    )
    torch.manual_seed(0)
    policy = DiffusionPolicy(config)
    shared.replace_backbone(policy)
    policy.eval()
    pre, post = make_pre_post_processors(config, dataset_stats=inputs.pusht_stats())
    directory = FIXTURES / "policies" / "diffusion_pusht"
    shared.save_checkpoint(policy, pre, post, directory)

    steps = inputs.pusht_steps()
    normalized = [shared.step_inputs(pre, s) for s in steps]
    noise = inputs.noise((shared.BATCH, config.horizon, 2), seed=21)
    history = {key: torch.stack([normalized[0][key], normalized[1][key]], dim=1) for key in normalized[0]}
    tensors = {"noise": noise, "inputs_sha256": inputs.steps_digest(steps)}
    with torch.no_grad():
        policy.reset()
        torch.manual_seed(1234)  # LeRobot's DDPM step draws its variance noise from the global generator
        tensors["chunk.unnormalized"] = post(policy.predict_action_chunk(dict(history), noise=noise.clone()))
        policy.reset()
        torch.manual_seed(99)
        single = [{k: v[:1] for k, v in n.items()} for n in normalized]
        tensors["select_action.single_row"] = torch.stack(
            [post(policy.select_action(dict(s))) for s in single]
        )
    shared.record(directory, inputs.as_tensors(tensors), {"chunk_seed": 1234, "episode_seed": 99})


def make_act_aloha(shared, inputs) -> None:
    import torch

    from lerobot.configs import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    config = ACTConfig(
        input_features={
            "observation.images.top": PolicyFeature(FeatureType.VISUAL, (3, 480, 640)),
            "observation.state": PolicyFeature(FeatureType.STATE, (14,)),
        },
        output_features={"action": PolicyFeature(FeatureType.ACTION, (14,))},
        device="cpu",
        pretrained_backbone_weights=None,
        chunk_size=10,
        n_action_steps=5,
        dim_model=32,
        n_heads=2,
        dim_feedforward=64,
        n_encoder_layers=2,
        n_decoder_layers=1,
        n_vae_encoder_layers=1,
        latent_dim=8,
    )
    torch.manual_seed(0)
    policy = ACTPolicy(config)
    shared.replace_backbone(policy)
    policy.eval()
    pre, post = make_pre_post_processors(config, dataset_stats=inputs.aloha_stats())
    directory = FIXTURES / "policies" / "act_aloha"
    shared.save_checkpoint(policy, pre, post, directory)

    steps = inputs.aloha_steps()
    normalized = [shared.step_inputs(pre, s) for s in steps]
    tensors = {"inputs_sha256": inputs.steps_digest(steps)}
    with torch.no_grad():
        policy.reset()
        tensors["select_action"] = torch.stack([post(policy.select_action(dict(n))) for n in normalized])
    shared.record(directory, inputs.as_tensors(tensors), {"n_steps": len(steps)})


# --- step 2: LeRobot's envs ---------------------------------------------------------------
def make_pusht_env_fixture() -> dict[str, np.ndarray]:
    from lerobot.envs.configs import PushtEnv
    from lerobot.envs.factory import make_env

    out: dict[str, np.ndarray] = {"seeds": np.array(PUSHT_SEEDS)}
    rng = np.random.default_rng(5)
    actions = rng.uniform(100, 400, (PUSHT_STEPS, len(PUSHT_SEEDS), 2)).astype(np.float32)
    out["actions"] = actions
    for obs_type in ("pixels_agent_pos", "environment_state_agent_pos"):
        envs = make_env(PushtEnv(obs_type=obs_type), n_envs=len(PUSHT_SEEDS), use_async_envs=False)
        env = envs["pusht"][0]
        obs, _ = env.reset(seed=list(PUSHT_SEEDS))
        observations, rewards, successes = [obs], [], []
        for action in actions:
            obs, reward, _, _, info = env.step(action)
            observations.append(obs)
            rewards.append(reward)
            successes.append(info["is_success"])
        env.close()
        for key in observations[0]:
            out[f"{obs_type}.{key}"] = np.stack([o[key] for o in observations], axis=1)
        out[f"{obs_type}.reward"] = np.stack(rewards, axis=1)
        out[f"{obs_type}.is_success"] = np.stack(successes, axis=1)
    return out


def aloha_episode(task: str, seed: int, actions: np.ndarray, frames: int) -> dict[str, np.ndarray]:
    """One seeded episode of LeRobot's ALOHA env replaying `actions`; digests of the first
    `frames` top-camera images (the reset's included)."""
    from lerobot.envs.configs import AlohaEnv
    from lerobot.envs.factory import make_env

    env = make_env(AlohaEnv(task=task), n_envs=1, use_async_envs=False)["aloha"][0]
    obs, _ = env.reset(seed=[seed])
    states, rewards, successes = [obs["agent_pos"][0]], [], []
    digests = [digest(obs["pixels"]["top"][0])]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action[None])
        rewards.append(reward[0])
        # The vector env resets a finished env at once; the success is in the final info then.
        done = terminated[0] or truncated[0]
        successes.append(bool(info["final_info"]["is_success"][0]) if done else bool(info["is_success"][0]))
        if done:
            break
        states.append(obs["agent_pos"][0])
        if len(digests) < frames:
            digests.append(digest(obs["pixels"]["top"][0]))
    env.close()
    return {
        "agent_pos": np.stack(states),
        "reward": np.array(rewards),
        "is_success": np.array(successes),
        "top_sha256": np.array(digests),
    }


def make_aloha_env_fixture() -> dict[str, np.ndarray]:
    actions = np.load(ACTIONS)
    out: dict[str, np.ndarray] = {}
    episodes = {
        "transfer_cube": ("AlohaTransferCube-v0", TRANSFER_SEED, actions["transfer_cube"], 3),
        "insertion": ("AlohaInsertion-v0", INSERTION_SEED, actions["insertion"], INSERTION_STEPS + 1),
    }
    for name, (task, seed, episode_actions, frames) in episodes.items():
        for key, value in aloha_episode(task, seed, episode_actions, frames).items():
            out[f"{name}.{key}"] = value
        out[f"{name}.seed"] = np.array(seed)
        print(
            f"{task} seed {seed}: rewards up to {out[f'{name}.reward'].max()}, {len(out[f'{name}.reward'])} steps"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripted-actions", action="store_true", help="step 1, with this project's env")
    args = parser.parse_args()
    import lerobot

    ours = Path(lerobot.__file__).resolve().is_relative_to(REPO)
    if args.scripted_actions:
        if not ours:
            sys.exit("--scripted-actions runs with this repository's python (.venv/bin/python)")
        write_scripted_actions()
        return 0
    if ours:
        sys.exit("run this with the scratch environment's python, not this repository's")
    print(f"lerobot {lerobot.__version__} from {Path(lerobot.__file__).parent}")
    shared, inputs = load_sibling("scripts/make_policy_fixtures.py"), seeded_inputs()
    make_diffusion_pusht(shared, inputs)
    make_act_aloha(shared, inputs)
    (FIXTURES / "envs").mkdir(parents=True, exist_ok=True)
    np.savez_compressed(FIXTURES / "envs" / "pusht_lerobot.npz", **make_pusht_env_fixture())
    np.savez_compressed(FIXTURES / "envs" / "aloha_lerobot.npz", **make_aloha_env_fixture())
    meta = {"lerobot": lerobot.__version__, "made_by": "scripts/make_pusht_aloha_fixtures.py"}
    (FIXTURES / "envs" / "lerobot_envs.json").write_text(json.dumps(meta, indent=1) + "\n")
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and ("pusht" in str(path) or "aloha" in str(path)):
            print(f"{path.stat().st_size:>10,d}  {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
