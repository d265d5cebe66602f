"""Write the SmolVLA reference fixtures under tests/fixtures/policies/ (run once, by hand).

Like scripts/make_policy_fixtures.py this runs in a scratch environment with LeRobot 0.6.1,
never a dependency of this project:

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python "lerobot[smolvla]==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_smolvla_fixtures.py

LeRobot's SmolVLA reads its VLM (config, tokenizer, processor and, with
`load_vlm_weights=true`, weights) from `vlm_model_name` with `from_pretrained`. There is no hub
here, so the script first builds a tiny SmolVLM directory (`smolvla_vlm/`: a SmolVLM config
with a few small layers, a byte-level BPE tokenizer trained with the `tokenizers` library on
benchmark instructions, SmolVLM's processor configs and random weights) and points
`vlm_model_name` at it. Saved files name it by its repository-relative path
(`VLM_PLACEHOLDER`); the tests rewrite that to the absolute path.

Then, per fixture, it builds a small random SmolVLA with LeRobot's classes, saves it with
LeRobot's writers (config.json, model.safetensors, processor pipelines and statistics) and
records in `expected.safetensors` what LeRobot computes from fixed inputs: preprocessed
batches, action chunks for given noise, the actions `select_action` executes, a seeded run, the
training loss for given noise and time with every gradient, and (`smolvla` only) the chunk with
`load_vlm_weights=true`, where LeRobot holds the VLM and the expert in bfloat16.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "policies"
VLM_DIR = OUT / "smolvla_vlm"
VLM_PLACEHOLDER = "tests/fixtures/policies/smolvla_vlm"
BATCH = 2
N_STEPS = 7
TASKS = [
    "pick up the black bowl and place it on the plate",
    # Unknown words fall back to bytes: longer than tokenizer_max_length, so it is truncated;
    # it already ends with a newline, which the newline step must not double.
    "wave hello to the camera, then push the puck to the goal\n",
]
CORPUS_FILES = ("src/lerobot/envs/libero/tasks.json", "src/lerobot/envs/metaworld/tasks.json")
SPECIAL_TOKENS = {
    "unk_token": "<|endoftext|>",
    "bos_token": "<|im_start|>",
    "pad_token": "<|im_end|>",
    "eos_token": "<end_of_utterance>",
}
# The named tokens SmolVLM's tokenizer carries (LeRobot reads fake/global image token ids).
IMAGE_TOKENS = {
    "fake_image_token": "<fake_token_around_image>",
    "global_image_token": "<global-img>",
    "image_token": "<image>",
    "end_of_utterance_token": "<end_of_utterance>",
}


def instructions() -> list[str]:
    """Every benchmark instruction this repository knows: the tokenizer's training corpus."""
    texts: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str) and " " in value:
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for name in CORPUS_FILES:
        walk(json.loads((REPO / name).read_text()))
    return texts


def build_tiny_vlm(directory: Path) -> None:
    """A SmolVLM directory as `from_pretrained` reads it, a few hundred kB in all."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    specials = sorted(set(SPECIAL_TOKENS.values()) | set(IMAGE_TOKENS.values()))
    bpe = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS["unk_token"]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(instructions(), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, **SPECIAL_TOKENS, extra_special_tokens=dict(IMAGE_TOKENS)
    )
    config = SmolVLMConfig(
        text_config={
            "model_type": "llama",
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "num_hidden_layers": 5,
            "vocab_size": len(tokenizer),
            "rms_norm_eps": 1e-5,
            "rope_theta": 100000.0,
            "max_position_embeddings": 512,
            "pad_token_id": tokenizer.pad_token_id,
            "tie_word_embeddings": False,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "patch_size": 16,
            "image_size": 64,
        },
        scale_factor=2,
        image_token_id=tokenizer.convert_tokens_to_ids(IMAGE_TOKENS["image_token"]),
    )
    torch.manual_seed(1)
    SmolVLMForConditionalGeneration(config).save_pretrained(directory)
    image_processor = SmolVLMImageProcessor(size={"longest_edge": 64}, max_image_size={"longest_edge": 64})
    processor = SmolVLMProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=SmolVLMVideoProcessor(),
        image_seq_len=4,
    )
    processor.save_pretrained(directory)


def features(cameras: dict[str, tuple[int, int, int]], state_dim: int, action_dim: int):
    from lerobot.configs import FeatureType, PolicyFeature

    inputs = {key: PolicyFeature(FeatureType.VISUAL, shape) for key, shape in cameras.items()}
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (state_dim,))
    return inputs, {"action": PolicyFeature(FeatureType.ACTION, (action_dim,))}


def dataset_stats(cameras, state_dim: int, action_dim: int) -> dict[str, dict[str, torch.Tensor]]:
    """Plausible statistics; image statistics exist but SmolVLA leaves images unnormalised."""
    g = torch.Generator().manual_seed(7)

    def stats(shape):
        mean = torch.rand(shape, generator=g) * 0.4 - 0.2
        std = torch.rand(shape, generator=g) * 0.3 + 0.2
        return {"mean": mean, "std": std, "min": mean - 2 * std, "max": mean + 2 * std}

    out = {key: stats((3, 1, 1)) for key in cameras}
    out["observation.state"] = stats((state_dim,))
    out["action"] = stats((action_dim,))
    return out


def raw_steps(cameras, state_dim: int, seed: int) -> list[dict[str, torch.Tensor]]:
    """Env-side observations: uint8 pixels (B, 3, H, W) and float states."""
    g = torch.Generator().manual_seed(seed)
    steps = []
    for _ in range(N_STEPS):
        step = {
            key: torch.randint(0, 256, (BATCH, *shape), generator=g, dtype=torch.uint8)
            for key, shape in cameras.items()
        }
        step["observation.state"] = torch.randn((BATCH, state_dim), generator=g) * 0.5
        steps.append(step)
    return steps


def preprocess(pre, step: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """LeRobot's preprocessor on one step; pixels become float in [0, 1] first, as in its eval."""
    batch = {k: v.float().div(255.0) if v.dtype == torch.uint8 else v.clone() for k, v in step.items()}
    batch["task"] = list(TASKS)
    out = pre(batch)
    return {k: v for k, v in out.items() if isinstance(v, torch.Tensor)}


def fresh(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A deep copy: LeRobot's Aloha adaptation edits the state tensor in place."""
    return {k: v.clone() for k, v in batch.items()}


def relative_vlm_paths(directory: Path) -> None:
    """Replace the absolute tiny-VLM path LeRobot saved by the repository-relative one."""
    for name in ("config.json", "policy_preprocessor.json"):
        path = directory / name
        path.write_text(path.read_text().replace(str(VLM_DIR), VLM_PLACEHOLDER))


def save_checkpoint(policy, pre, post, directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    policy.save_pretrained(directory)
    pre.save_pretrained(directory)
    post.save_pretrained(directory)
    relative_vlm_paths(directory)
    (directory / "README.md").unlink(missing_ok=True)


def trainable_names(config, state_dict_source) -> list[str]:
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    policy = SmolVLAPolicy(config)
    policy.load_state_dict(state_dict_source.state_dict())
    return sorted(n for n, p in policy.named_parameters() if p.requires_grad)


def gradient_summary(name: str, grad: torch.Tensor, edge: int = 64) -> dict[str, torch.Tensor]:
    """A gradient small enough to commit: whole when small, else its first and last `edge`
    values with its sum and norm (any difference in the computation shows in these)."""
    flat = grad.flatten()
    if flat.numel() <= 4 * edge:
        return {f"grad.{name}": grad}
    return {
        f"grad.{name}.head": flat[:edge],
        f"grad.{name}.tail": flat[-edge:],
        f"grad.{name}.sum": flat.double().sum(),
        f"grad.{name}.norm": flat.double().norm(),
    }


def record_training(policy, tensors: dict, normalized: dict, action_dim: int, chunk_size: int) -> dict:
    """Loss and gradients of one batch for given noise and time, and a seeded loss."""
    g = torch.Generator().manual_seed(31)
    batch = fresh(normalized)
    batch["action"] = torch.randn((BATCH, chunk_size, action_dim), generator=g)
    batch["action_is_pad"] = torch.zeros((BATCH, chunk_size), dtype=torch.bool)
    batch["action_is_pad"][1, chunk_size - 3 :] = True
    noise = torch.randn((BATCH, chunk_size, policy.config.max_action_dim), generator=g)
    time = torch.tensor([0.3, 0.85])
    tensors.update({f"train.batch.{k}": v for k, v in batch.items()})
    tensors["train.noise"], tensors["train.time"] = noise, time
    policy.train()
    policy.zero_grad(set_to_none=True)
    loss, info = policy.forward(fresh(batch), noise=noise.clone(), time=time.clone())
    loss.backward()
    tensors["train.loss"] = loss.detach()
    for name, param in policy.named_parameters():
        if param.grad is not None:
            tensors.update(gradient_summary(name, param.grad.detach().float()))
    torch.manual_seed(5)  # noise, then time, from the global generator
    seeded, _ = policy.forward(fresh(batch))
    tensors["train.loss_seed_5"] = seeded.detach()
    policy.eval()
    return {k: float(v) for k, v in info.items()}


def make_fixture(name: str, cameras, state_dim: int, action_dim: int, bf16_check: bool, **settings) -> None:
    from lerobot.policies.factory import make_pre_post_processors
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    inputs, outputs = features(cameras, state_dim, action_dim)
    config = SmolVLAConfig(
        input_features=inputs,
        output_features=outputs,
        device="cpu",
        vlm_model_name=str(VLM_DIR),
        load_vlm_weights=False,
        resize_imgs_with_padding=(64, 64),
        freeze_vision_encoder=False,
        train_expert_only=False,
        **settings,
    )
    torch.manual_seed(0)
    policy = SmolVLAPolicy(config)
    policy.eval()
    pre, post = make_pre_post_processors(config, dataset_stats=dataset_stats(cameras, state_dim, action_dim))
    directory = OUT / name
    save_checkpoint(policy, pre, post, directory)

    steps = raw_steps(cameras, state_dim, seed=11)
    normalized = [preprocess(pre, s) for s in steps]
    tensors: dict[str, torch.Tensor] = {}
    for i, raw in enumerate(steps):
        tensors.update({f"raw.{i}.{k}": v for k, v in raw.items()})
    # Images pass the preprocessor unchanged (SmolVLA's VISUAL mode is IDENTITY): not stored twice.
    tensors.update({f"normalized.0.{k}": v for k, v in normalized[0].items() if k not in cameras})
    g = torch.Generator().manual_seed(21)
    noise = torch.randn((BATCH, config.chunk_size, config.max_action_dim), generator=g)
    tensors["noise"] = noise
    with torch.no_grad():
        policy.reset()
        chunk = policy.predict_action_chunk(fresh(normalized[0]), noise=noise.clone())
        tensors["chunk.normalized"], tensors["chunk.unnormalized"] = chunk, post(chunk)
        policy.reset()
        actions = [post(policy.select_action(fresh(n), noise=noise.clone())) for n in normalized]
        tensors["select_action"] = torch.stack(actions)
        policy.reset()
        torch.manual_seed(99)  # one env, seeded as an episode would be
        single = [{k: v[:1] for k, v in n.items()} for n in normalized]
        tensors["select_action.seed_99.row_0"] = torch.stack(
            [post(policy.select_action(fresh(s))) for s in single]
        )
    info = record_training(policy, tensors, normalized[0], action_dim, config.chunk_size)
    meta = {
        "tasks": TASKS,
        "n_steps": N_STEPS,
        "loss_info": info,
        "trainable": {
            "freeze_vision_encoder=false,train_expert_only=false": sorted(
                n for n, p in policy.named_parameters() if p.requires_grad
            ),
            "defaults": trainable_names(
                dataclasses.replace(config, freeze_vision_encoder=True, train_expert_only=True), policy
            ),
        },
    }
    if bf16_check:
        record_bf16(config, policy, tensors, normalized[0], noise)
    flat = {k: v.detach().cpu().clone().contiguous() for k, v in tensors.items()}
    save_file(flat, directory / "expected.safetensors", metadata={"info": json.dumps(meta)})


def record_bf16(config, policy, tensors: dict, normalized: dict, noise: torch.Tensor) -> None:
    """`load_vlm_weights=true`: LeRobot loads the VLM in bfloat16, then the checkpoint into it."""
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    bf16 = SmolVLAPolicy(dataclasses.replace(config, load_vlm_weights=True))
    bf16.load_state_dict(policy.state_dict())
    bf16.eval()
    tensors["bf16.dtypes"] = torch.tensor(
        [p.dtype == torch.bfloat16 for _, p in sorted(bf16.state_dict().items())]
    )
    with torch.no_grad():
        tensors["bf16.chunk.normalized"] = bf16.predict_action_chunk(fresh(normalized), noise=noise.clone())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    import lerobot

    print(f"lerobot {lerobot.__version__} from {Path(lerobot.__file__).parent}")
    if Path(lerobot.__file__).resolve().is_relative_to(REPO):
        sys.exit("run this with the scratch environment's python, not this repository's")
    build_tiny_vlm(VLM_DIR)
    # LIBERO's layout: two cameras (one not square: resize-with-pad), a blank third, 8-d state.
    make_fixture(
        "smolvla",
        cameras={"observation.images.camera1": (3, 48, 64), "observation.images.camera2": (3, 72, 72)},
        state_dim=8,
        action_dim=7,
        bf16_check=True,
        empty_cameras=1,
        num_vlm_layers=4,
        chunk_size=10,
        n_action_steps=5,
        tokenizer_max_length=16,
        pad_language_to="max_length",
        prefix_length=0,
    )
    # Settings smolvla_base does not use: fewer expert layers, image special tokens,
    # longest padding, a fixed prefix length, Aloha's state and action conventions.
    make_fixture(
        "smolvla_variant",
        cameras={"observation.images.top": (3, 64, 64)},
        state_dim=14,
        action_dim=14,
        bf16_check=False,
        num_vlm_layers=4,
        num_expert_layers=2,
        # 2 expert layers for 4 VLM layers join VLM layers 0 and 2. LeRobot indexes the expert's
        # cross-attention layers by expert layer and the self-attention ones by VLM layer, so
        # only settings where both agree run: here VLM layer 0 self-attends, the rest cross-attend.
        self_attn_every_n_layers=4,
        add_image_special_tokens=True,
        pad_language_to="longest",
        prefix_length=40,
        adapt_to_pi_aloha=True,
        chunk_size=6,
        n_action_steps=4,
        num_steps=4,
        tokenizer_max_length=12,
    )
    for path in sorted(OUT.rglob("*")):
        if path.is_file() and "smolvla" in str(path.relative_to(OUT)):
            print(f"{path.stat().st_size:>10,d}  {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
