"""π0 and π0.5 through the commands users run, on real simulators, with the tiny checkpoints.

`lerobot-eval --policy.path=<π checkpoint> --env.type=libero ...` (LeRobot's LIBERO camera keys,
no --rename_map), `lerobot-train --policy.path=<π0.5 checkpoint>` (fine-tuning, in-loop LIBERO
evaluation, then lerobot-eval on the result) and `lerobot-train --policy.type=pi0|pi05` with
openpi's dummy Gemma (in-loop Meta-World evaluation). PaliGemma's tokenizer resolves, offline,
to a hub cache holding the tiny fixture tokenizer under google/paligemma-3b-pt-224. Episodes are
kept short and images small (LIBERO renders about 3 steps per second in software).
"""

import json

import pytest
import torch

from lerobot.policies.pi.modeling import PiFlowPolicy
from lerobot.scripts import lerobot_eval, lerobot_train
from tests.policies.pi_checkpoints import TOKENIZER_DIR, materialize
from tests.policies.smolvla_checkpoints import populate_hub_cache, write_libero_dataset

SHORT_LIBERO = (
    "--env.task_ids=[0]",
    "--env.episode_length=3",
    "--env.observation_height=64",
    "--env.observation_width=64",
)
ONE_EPISODE = ("--eval.n_episodes=1", "--eval.batch_size=1", "--eval.use_async_envs=false")
LIBERO_TASK_0 = "pick up the black bowl between the plate and the ramekin and place it on the plate"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    populate_hub_cache(cache, "google/paligemma-3b-pt-224", TOKENIZER_DIR)
    return cache


@pytest.fixture(autouse=True)
def _single_torch_thread(one_torch_thread):
    """Tiny models: see `one_torch_thread` in tests/conftest.py."""


@pytest.fixture
def policy_calls(monkeypatch) -> list[tuple[dict, torch.Tensor]]:
    """Every (batch, action) of a π policy's select_action in this test, in call order."""
    calls = []
    select_action = PiFlowPolicy.select_action

    def recording(self, batch, noise=None):
        action = select_action(self, batch, noise)
        calls.append((batch, action.clone()))
        return action

    monkeypatch.setattr(PiFlowPolicy, "select_action", recording)
    return calls


def eval_info(directory) -> dict:
    return json.loads((directory / "eval_info.json").read_text())


def tokens_seen(batch: dict) -> list[int]:
    tokens, mask = batch["observation.language.tokens"][0], batch["observation.language.attention_mask"][0]
    return tokens[mask].tolist()


@pytest.mark.slow
def test_pi0_checkpoint_on_libero_through_lerobot_eval(tmp_path, policy_calls):
    """The user's command on LeRobot's tiny π0: both cameras under LIBERO's keys plus the blank
    one, the instruction with its newline in PaliGemma-style tokens, n_action_steps=2 (a new
    chunk every other step), results, video and the settings in the provenance."""
    from transformers import AutoTokenizer

    out = tmp_path / "eval"
    argv = [
        f"--policy.path={materialize('pi0', tmp_path / 'pi0')}",
        "--env.type=libero",
        "--env.task=libero_spatial",
        "--policy.n_action_steps=2",
        "--policy.device=cpu",
        f"--output_dir={out}",
        *ONE_EPISODE,
        *SHORT_LIBERO,
    ]
    assert lerobot_eval.main(argv) == 0
    info = eval_info(out)
    [episode] = info["per_episode"]
    assert (episode["n_steps"], episode["failure_reason"]) == (3, None)
    assert (out / "videos/libero_spatial_0/eval_episode_0.mp4").is_file()
    policy = info["provenance"]["config"]["policy"]
    assert (policy["type"], policy["n_action_steps"], policy["chunk_size"]) == ("pi0", 2, 10)
    assert (policy["image_resolution"], policy["dtype"], policy["num_inference_steps"]) == (
        [224, 224],
        "float32",
        10,
    )

    batch = policy_calls[0][0]
    assert sorted(k for k in batch if k.startswith("observation.images.")) == [
        "observation.images.image",
        "observation.images.image2",
    ]
    ids = AutoTokenizer.from_pretrained(TOKENIZER_DIR)(LIBERO_TASK_0 + "\n", max_length=16, truncation=True)
    assert tokens_seen(batch) == ids["input_ids"]
    # Steps 0 and 2 start a chunk; step 1 acts from the queue without a batch.
    assert len(policy_calls) == 2 and all(a.shape == (1, 7) for _, a in policy_calls)


@pytest.mark.slow
def test_pi05_finetuned_with_in_loop_libero_eval_then_lerobot_eval(tmp_path, hub_cache, policy_calls):
    """One fine-tuning step of LeRobot's tiny π0.5 on a LIBERO-shaped dataset with its in-loop
    evaluation, then lerobot-eval on the saved checkpoint: the pipeline is saved in LeRobot's
    π0.5 order (the state prompt after the normaliser), the same seeded episode gets the same
    actions, and the prompt holds the instruction and the discretised state."""
    from transformers import AutoTokenizer

    from lerobot.processor.language import state_bins

    out = tmp_path / "train"
    train_argv = [
        f"--policy.path={materialize('pi05', tmp_path / 'pi05')}",
        f"--dataset.root={write_libero_dataset(tmp_path / 'libero')}",
        "--dataset.episodes=[0]",
        "--env.type=libero",
        "--env.task=libero_spatial",
        "--policy.n_action_steps=2",
        "--policy.device=cpu",
        f"--output_dir={out}",
        "--steps=1",
        "--batch_size=2",
        "--eval_freq=1",
        "--save_freq=1",
        *ONE_EPISODE,
        *SHORT_LIBERO,
    ]
    assert lerobot_train.main(train_argv) == 0
    [in_loop] = eval_info(out / "eval/step_1")["per_episode"]
    checkpoint = out / "checkpoints/last/pretrained_model"
    saved = json.loads((checkpoint / "policy_preprocessor.json").read_text())
    assert [s["registry_name"] for s in saved["steps"]] == [
        "rename_observations_processor",
        "to_batch_processor",
        "normalizer_processor",
        "pi05_prepare_state_tokenizer_processor_step",
        "tokenizer_processor",
        "device_processor",
    ]
    assert saved["steps"][2]["state_file"] == "policy_preprocessor_step_2_normalizer_processor.safetensors"
    in_loop_calls = list(policy_calls)
    policy_calls.clear()

    eval_out = tmp_path / "eval"
    eval_argv = [f"--policy.path={checkpoint}", "--env.type=libero", "--env.task=libero_spatial",
                 "--policy.device=cpu", f"--output_dir={eval_out}", *ONE_EPISODE, *SHORT_LIBERO]  # fmt: skip
    assert lerobot_eval.main(eval_argv) == 0
    [episode] = eval_info(eval_out)["per_episode"]
    assert (episode["n_steps"], episode["seed"]) == (in_loop["n_steps"], in_loop["seed"]) == (3, 1000)
    torch.testing.assert_close([a for _, a in policy_calls], [a for _, a in in_loop_calls], atol=0, rtol=0)

    batch = policy_calls[0][0]
    bins = " ".join(str(b) for b in state_bins(batch["observation.state"])[0])
    prompt = f"Task: {LIBERO_TASK_0}, State: {bins};\nAction: "
    ids = AutoTokenizer.from_pretrained(TOKENIZER_DIR)(prompt, max_length=72, truncation=True)["input_ids"]
    assert tokens_seen(batch) == ids


@pytest.mark.slow
@pytest.mark.parametrize("policy_type", ["pi0", "pi05"])
def test_policy_type_trains_one_step_with_in_loop_metaworld_eval(tmp_path, hub_cache, policy_type):
    """`--policy.type=pi0|pi05` with openpi's dummy Gemma: one step on a Meta-World-shaped
    dataset (one camera, 4-d state; π0.5's quantiles come from the dataset), an in-loop
    evaluation, and a checkpoint LeRobot's loader reads (every LeRobot config key)."""
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
    argv = [
        f"--policy.type={policy_type}",
        "--policy.paligemma_variant=dummy",
        "--policy.action_expert_variant=dummy",
        "--policy.chunk_size=4",
        "--policy.n_action_steps=2",
        "--policy.num_inference_steps=2",
        "--policy.tokenizer_max_length=48",
        "--policy.device=cpu",
        f"--dataset.root={recorder.finish()}",
        "--env.type=metaworld",
        "--env.task=push-v3",
        "--env.episode_length=4",
        "--env.observation_height=64",
        "--env.observation_width=64",
        "--steps=1",
        "--batch_size=2",
        "--eval_freq=1",
        f"--output_dir={out}",
        *ONE_EPISODE,
    ]
    assert lerobot_train.main(argv) == 0
    [episode] = eval_info(out / "eval/step_1")["per_episode"]
    assert (episode["n_steps"], episode["failure_reason"]) == (4, None)
    config = json.loads((out / "checkpoints/last/pretrained_model/config.json").read_text())
    assert (config["type"], config["paligemma_variant"], config["chunk_size"]) == (policy_type, "dummy", 4)
    assert {"time_sampling_beta_alpha", "image_resolution", "rtc_config", "tokenizer_max_length"} <= set(
        config
    )
