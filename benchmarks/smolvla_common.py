"""What the SmolVLA benchmarks share: a full-size SmolVLA built locally, and LIBERO-shaped inputs.

No download: the VLM directory holds only a config.json with the sizes of
HuggingFaceTB/SmolVLM2-500M-Video-Instruct (SigLIP 768 wide, 12 layers, 512 px, patch 16; a
960-wide Llama decoder with 15 query and 5 key/value heads of 64, 32 layers, 49 280 tokens;
pixel shuffle by 4). With smolvla_base's settings (16 VLM layers, an expert 0.75 as wide) the
policy has about 450 M parameters, as the published checkpoint does.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

FULL_SIZE_VLM = {
    "architectures": ["SmolVLMForConditionalGeneration"],
    "model_type": "smolvlm",
    "image_token_id": 49190,
    "scale_factor": 4,
    "tie_word_embeddings": False,
    "text_config": {
        "model_type": "llama",
        "hidden_size": 960,
        "intermediate_size": 2560,
        "num_attention_heads": 15,
        "num_key_value_heads": 5,
        "head_dim": 64,
        "num_hidden_layers": 32,
        "vocab_size": 49280,
        "rms_norm_eps": 1e-5,
        "rope_theta": 100000.0,
        "max_position_embeddings": 8192,
        "pad_token_id": 2,
        "tie_word_embeddings": False,
    },
    "vision_config": {
        "model_type": "smolvlm_vision",
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "patch_size": 16,
        "image_size": 512,
    },
}
LIBERO_CAMERAS = ("observation.images.camera1", "observation.images.camera2")
STATE_DIM, ACTION_DIM, TOKENS = 8, 7, 48


def write_full_size_vlm(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(FULL_SIZE_VLM, indent=1))
    return directory


def full_size_config(vlm_dir: Path, load_vlm_weights: bool = False, device: str = "cpu"):
    """smolvla_base's settings on LIBERO's features: two cameras plus one blank, 8-d state."""
    import lerobot.policies  # noqa: F401  (registers smolvla)
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig

    inputs = {key: PolicyFeature(FeatureType.VISUAL, (3, 256, 256)) for key in LIBERO_CAMERAS}
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
    return SmolVLAConfig(
        input_features=inputs,
        output_features={"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))},
        vlm_model_name=str(vlm_dir),
        load_vlm_weights=load_vlm_weights,
        empty_cameras=1,
        pad_language_to="max_length",
        prefix_length=0,
        num_expert_layers=0,
        device=device,
    )


def libero_batch(n_rows: int, device: str | torch.device, seed: int = 0) -> dict[str, torch.Tensor]:
    """A preprocessed LIBERO batch: 256x256 cameras in [0, 1], a normalised state, 48 tokens."""
    g = torch.Generator().manual_seed(seed)
    batch = {key: torch.rand((n_rows, 3, 256, 256), generator=g) for key in LIBERO_CAMERAS}
    batch["observation.state"] = torch.randn((n_rows, STATE_DIM), generator=g)
    batch["observation.language.tokens"] = torch.randint(0, 49000, (n_rows, TOKENS), generator=g)
    mask = torch.zeros((n_rows, TOKENS), dtype=torch.bool)
    mask[:, :20] = True
    batch["observation.language.attention_mask"] = mask
    return {k: v.to(device) for k, v in batch.items()}


def parameter_count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def time_chunks(policy, batch: dict, repeats: int, amp_dtype: torch.dtype | None = None) -> float:
    """Median seconds of one `predict_action_chunk` (prefix once, num_steps expert passes)."""
    import statistics
    import time
    from contextlib import nullcontext

    device = next(policy.parameters()).device
    amp = torch.autocast(device.type, dtype=amp_dtype) if amp_dtype is not None else nullcontext()
    times = []
    with torch.inference_mode(), amp:
        for _ in range(repeats + 1):  # the first call warms up kernels and allocators
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            policy.predict_action_chunk(batch)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


TINY_VLM = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "policies" / "smolvla_vlm"
"""The tests' tiny SmolVLM (config and tokenizer), for CPU smoke runs of the in-the-loop case."""
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def write_metaworld_checkpoint(
    directory: Path, *, full_size: bool, image_size: int, n_action_steps: int
) -> Path:
    """A random SmolVLA that reads Meta-World's observations (one camera, 4-d state, 4-d
    actions), saved as lerobot-train saves one (config, weights, processors with the
    instruction tokenizer); full size (~450 M parameters) or on the tests' tiny VLM. The
    tokenizer is the tiny VLM's either way: its ids fit any vocabulary, and a task string's
    tokens cost the same."""
    import shutil

    import lerobot.policies  # noqa: F401  (registers smolvla)
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy
    from lerobot.processor.policy_processors import policy_pipelines
    from lerobot.training.checkpoints import save_pretrained

    vlm_dir = directory / "vlm"
    if full_size:
        write_full_size_vlm(vlm_dir)
    else:
        vlm_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(TINY_VLM / "config.json", vlm_dir / "config.json")
    for name in TOKENIZER_FILES:
        shutil.copy(TINY_VLM / name, vlm_dir / name)
    sizes = (
        {"resize_imgs_with_padding": (512, 512), "prefix_length": 0, "num_expert_layers": 0}
        if full_size
        else {"resize_imgs_with_padding": (64, 64), "num_vlm_layers": 4, "tokenizer_max_length": 16}
    )
    config = SmolVLAConfig(
        input_features={
            "observation.image": PolicyFeature(FeatureType.VISUAL, (3, image_size, image_size)),
            "observation.state": PolicyFeature(FeatureType.STATE, (4,)),
        },
        output_features={"action": PolicyFeature(FeatureType.ACTION, (4,))},
        vlm_model_name=str(vlm_dir),
        load_vlm_weights=False,
        chunk_size=max(n_action_steps, 10),
        n_action_steps=n_action_steps,
        empty_cameras=0,
        pad_language_to="max_length",
        device="cpu",
        **sizes,
    )
    torch.manual_seed(0)
    policy = SmolVLAPolicy(config, vlm_weights=False).eval()
    stats = {key: {"mean": torch.zeros(4), "std": torch.ones(4)} for key in ("observation.state", "action")}
    checkpoint = directory / "checkpoint"
    save_pretrained(policy, policy_pipelines(config, stats, config.task_steps()), checkpoint)
    return checkpoint
