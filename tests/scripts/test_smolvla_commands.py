"""The SmolVLA commands of the CI we grew from, run on real simulators with tiny checkpoints.

The seeds' jobs evaluate `pepijn223/smolvla_libero` and `pepijn223/smolvla_metaworld` and
fine-tune `lerobot/smolvla_base` on `lerobot/libero` for one step with an in-loop evaluation.
Here those repo ids resolve, offline, to a hub cache holding LeRobot's tiny fixture checkpoint
(smolvla_base), checkpoints trained here (the two evaluated ones: each run is compared with the
in-loop evaluation of its training) and a small LIBERO-shaped dataset. The seeds' flags are kept as
they are, except `--policy.device=cuda` (CPU here) and the output directory; flags that keep
episodes short and images small are added (LIBERO renders about 3 steps per second in software).
"""

import json

import pytest
import torch

from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy
from lerobot.scripts import lerobot_eval, lerobot_train
from tests.configs.test_train_flags import SEEDS_TRAIN_COMMAND
from tests.policies.smolvla_checkpoints import (
    VLM_DIR,
    materialize,
    populate_hub_cache,
    write_libero_dataset,
)

LIBERO_CAMERAS = '{"agentview_image": "camera1", "robot0_eye_in_hand_image": "camera2"}'
SHORT_LIBERO = (
    "--env.task_ids=[0]",
    "--env.episode_length=3",
    "--env.observation_height=64",
    "--env.observation_width=64",
)
SHORT_METAWORLD = ("--env.episode_length=5", "--env.observation_height=64", "--env.observation_width=64")


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture(autouse=True)
def _single_torch_thread(one_torch_thread):
    """Tiny models: see `one_torch_thread` in tests/conftest.py."""


def eval_info(directory) -> dict:
    return json.loads((directory / "eval_info.json").read_text())


@pytest.fixture
def policy_calls(monkeypatch) -> list[tuple[dict, torch.Tensor]]:
    """Every (batch, action) of SmolVLAPolicy.select_action in this test, in call order."""
    calls = []
    select_action = SmolVLAPolicy.select_action

    def recording(self, batch, noise=None):
        action = select_action(self, batch, noise)
        calls.append((batch, action.clone()))
        return action

    monkeypatch.setattr(SmolVLAPolicy, "select_action", recording)
    return calls


@pytest.mark.slow
def test_seeds_libero_train_then_eval_commands(tmp_path, hub_cache, policy_calls):
    """The seeds' LIBERO job: one fine-tuning step of smolvla_base's stand-in (LeRobot's tiny
    fixture) on lerobot/libero's stand-in, its in-loop evaluation, then lerobot-eval on the
    checkpoint as pepijn223/smolvla_libero: the same seeded episode gets the same actions, and
    the policy sees both cameras under the checkpoint's names (the blank one is the model's) and
    the task description tokenised with its newline."""
    populate_hub_cache(hub_cache, "lerobot/smolvla_base", materialize("smolvla", tmp_path / "base"))
    populate_hub_cache(hub_cache, "lerobot/libero", write_libero_dataset(tmp_path / "libero"), "dataset")
    out = tmp_path / "train-smoke"
    seeds = [f"--output_dir={out}" if arg.startswith("--output_dir=") else arg for arg in SEEDS_TRAIN_COMMAND]
    train_argv = [*seeds, *SHORT_LIBERO]
    assert lerobot_train.main(train_argv) == 0
    assert eval_info(out / "eval/step_1")["overall"]["n_episodes"] == 1
    checkpoint = out / "checkpoints/last/pretrained_model"
    saved = json.loads((checkpoint / "policy_preprocessor.json").read_text())
    assert [s["registry_name"] for s in saved["steps"]] == [
        "rename_observations_processor",
        "to_batch_processor",
        "smolvla_new_line_processor",
        "tokenizer_processor",
        "device_processor",
        "normalizer_processor",
    ]
    in_loop = [action for _, action in policy_calls]
    policy_calls.clear()

    populate_hub_cache(hub_cache, "pepijn223/smolvla_libero", checkpoint)
    eval_out = tmp_path / "eval-artifacts"
    eval_argv = [
        "--policy.path=pepijn223/smolvla_libero",
        "--env.type=libero",
        "--env.task=libero_spatial",
        "--eval.batch_size=1",
        "--eval.n_episodes=1",
        "--eval.use_async_envs=false",
        "--policy.device=cpu",
        f"--env.camera_name_mapping={LIBERO_CAMERAS}",
        "--policy.empty_cameras=1",
        f"--output_dir={eval_out}",
        *SHORT_LIBERO,
    ]
    assert lerobot_eval.main(eval_argv) == 0
    [episode] = eval_info(eval_out)["per_episode"]
    assert (episode["n_steps"], episode["failure_reason"]) == (3, None)
    assert (eval_out / "videos/libero_spatial_0/eval_episode_0.mp4").is_file()
    torch.testing.assert_close([a for _, a in policy_calls], in_loop, atol=0, rtol=0)

    batch = policy_calls[0][0]
    assert sorted(k for k in batch if k.startswith("observation.images.")) == [
        "observation.images.camera1",
        "observation.images.camera2",
    ]
    from transformers import AutoTokenizer

    description = "pick up the black bowl between the plate and the ramekin and place it on the plate\n"
    ids = AutoTokenizer.from_pretrained(VLM_DIR)(description, max_length=16, truncation=True)["input_ids"]
    tokens, mask = batch["observation.language.tokens"][0], batch["observation.language.attention_mask"][0]
    assert tokens[mask].tolist() == ids and len(tokens) == 16


@pytest.mark.slow
def test_smolvla_from_scratch_then_the_seeds_metaworld_eval_command(tmp_path, hub_cache, policy_calls):
    """`--policy.type=smolvla` trained one step with an in-loop Meta-World evaluation, then the
    seeds' Meta-World command on its checkpoint: the same seeded episode, the same actions."""
    from lerobot.datasets.recorder import DatasetRecorder

    recorder = DatasetRecorder(tmp_path / "push", fps=10, task="push the puck to the goal")
    g = torch.Generator().manual_seed(0)
    for step in range(8):
        observation = {
            "pixels": torch.randint(0, 255, (64, 64, 3), generator=g, dtype=torch.uint8).numpy(),
            "agent_pos": torch.randn(4, generator=g).numpy(),
        }
        recorder.add_step(0, observation, torch.rand(4, generator=g).numpy() * 2 - 1, step)
    recorder.end_episode(0, keep=True)
    out = tmp_path / "train"
    train_argv = [
        "--policy.type=smolvla",
        f"--policy.vlm_model_name={VLM_DIR}",
        "--policy.num_vlm_layers=2",
        "--policy.chunk_size=10",
        "--policy.n_action_steps=5",
        "--policy.resize_imgs_with_padding=[64,64]",
        "--policy.tokenizer_max_length=16",
        "--policy.empty_cameras=2",
        "--policy.device=cpu",
        '--rename_map={"observation.image": "observation.images.camera1"}',
        f"--dataset.root={recorder.finish()}",
        "--env.type=metaworld",
        "--env.task=push-v3",
        *SHORT_METAWORLD,
        "--steps=1",
        "--batch_size=2",
        "--eval_freq=1",
        "--eval.n_episodes=1",
        "--eval.batch_size=1",
        f"--output_dir={out}",
    ]
    assert lerobot_train.main(train_argv) == 0
    [in_loop] = eval_info(out / "eval/step_1")["per_episode"]
    in_loop_actions = [action for _, action in policy_calls]
    policy_calls.clear()
    populate_hub_cache(hub_cache, "pepijn223/smolvla_metaworld", out / "checkpoints/last/pretrained_model")

    eval_out = tmp_path / "eval-artifacts"
    eval_argv = [
        "--policy.path=pepijn223/smolvla_metaworld",
        "--env.type=metaworld",
        "--env.task=metaworld-push-v3",
        "--eval.batch_size=1",
        "--eval.n_episodes=1",
        "--eval.use_async_envs=false",
        "--policy.device=cpu",
        '--rename_map={"observation.image": "observation.images.camera1"}',
        "--policy.empty_cameras=2",
        f"--output_dir={eval_out}",
        *SHORT_METAWORLD,
    ]
    assert lerobot_eval.main(eval_argv) == 0
    [episode] = eval_info(eval_out)["per_episode"]
    assert episode["n_steps"] == in_loop["n_steps"] == 5
    assert (episode["seed"], episode["sum_reward"]) == (in_loop["seed"], in_loop["sum_reward"])
    torch.testing.assert_close([a for _, a in policy_calls], in_loop_actions, atol=0, rtol=0)
