"""What the π0 / π0.5 benchmarks share: configs on LIBERO's features, preprocessed batches, and a
random checkpoint written tensor by tensor.

Full size is what LeRobot's checkpoints are: a gemma_2b PaliGemma with SigLIP So400m/14 and a
gemma_300m action expert (4.14 B parameters for π0.5, 4.03 B for π0, as LeRobot 0.6.1 builds
them: tests/fixtures/policies/pi_full_size_layout.json). Nothing is downloaded:
the networks are built from the variant tables in lerobot.policies.pi.configuration, and
the tokenizer is the tiny fixture one (its ids are valid in any vocabulary).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
TOKENIZER_DIR = REPO / "tests" / "fixtures" / "policies" / "pi_tokenizer"
LIBERO_CAMERAS = ("observation.images.image", "observation.images.image2")
STATE_DIM, ACTION_DIM = 8, 7
PROMPT_TOKENS = 60
"""Real tokens of a π0.5 LIBERO prompt (instruction and 8 state values), of tokenizer_max_length."""
VARIANTS = {
    "full": {"paligemma_variant": "gemma_2b", "action_expert_variant": "gemma_300m"},
    "dummy": {"paligemma_variant": "dummy", "action_expert_variant": "dummy"},
}
SAFETENSORS_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def pi_config(policy_type: str = "pi05", variant: str = "full", device: str = "cpu", **settings):
    """A π config on LIBERO's features (two 256 px cameras, 8-d state, 7-d actions), executing
    10 actions per chunk as LeRobot's LIBERO results do."""
    import lerobot.policies  # noqa: F401  (registers pi0 and pi05)
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import make_policy_config

    inputs = {key: PolicyFeature(FeatureType.VISUAL, (3, 256, 256)) for key in LIBERO_CAMERAS}
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
    settings = {"n_action_steps": 10, **VARIANTS[variant], **settings}
    return make_policy_config(
        policy_type,
        input_features=inputs,
        output_features={"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))},
        device=device,
        **settings,
    )


def build(config, device: str | torch.device):
    """A random-weight policy built straight on `device`, in eval mode."""
    from lerobot.policies.factory import get_policy_class

    torch.manual_seed(0)
    with torch.device(device):
        policy = get_policy_class(config.type)(config)
    policy.model.paligemma_with_expert.reset_buffers()
    return policy.eval()


def build_on_meta(config):
    from lerobot.policies.factory import get_policy_class

    with torch.device("meta"):
        return get_policy_class(config.type)(config)


def libero_batch(n_rows: int, device, config, seed: int = 0) -> dict[str, torch.Tensor]:
    """A preprocessed LIBERO batch: 256 px cameras in [0, 1] (resized to 224 by the model), a
    normalised state, `PROMPT_TOKENS` real tokens padded to tokenizer_max_length."""
    from lerobot.policies.pi.configuration import GEMMA_VARIANTS

    vocab = GEMMA_VARIANTS[config.paligemma_variant].vocab_size
    length = config.tokenizer_max_length
    g = torch.Generator().manual_seed(seed)
    batch = {key: torch.rand((n_rows, 3, 256, 256), generator=g) for key in LIBERO_CAMERAS}
    batch["observation.state"] = torch.rand((n_rows, STATE_DIM), generator=g) * 2 - 1
    batch["observation.language.tokens"] = torch.randint(0, vocab, (n_rows, length), generator=g)
    mask = torch.zeros((n_rows, length), dtype=torch.bool)
    mask[:, : min(PROMPT_TOKENS, length)] = True
    batch["observation.language.attention_mask"] = mask
    return {k: v.to(device) for k, v in batch.items()}


def parameter_count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def bytes_by_dtype(module: torch.nn.Module) -> dict[str, int]:
    out: dict[str, int] = {}
    for tensor in module.state_dict().values():
        name = str(tensor.dtype).removeprefix("torch.")
        out[name] = out.get(name, 0) + tensor.numel() * tensor.element_size()
    return out


def write_random_checkpoint(config, directory: Path) -> int:
    """config.json and a model.safetensors of random values (normal, std 0.02) in the config's
    dtype layout, written one tensor at a time so the writer never holds the model; returns the
    file's size."""
    from lerobot.configs.policies import encode_policy_config

    policy = build_on_meta(config)
    state = policy.state_dict()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(encode_policy_config(config), indent=4))
    header, offset = {}, 0
    for name, tensor in state.items():
        n_bytes = tensor.numel() * tensor.element_size()
        header[name] = {
            "dtype": SAFETENSORS_DTYPES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + n_bytes],
        }
        offset += n_bytes
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    g = torch.Generator().manual_seed(0)
    path = directory / "model.safetensors"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for tensor in state.values():
            rows = tensor.reshape(tensor.shape[0] if tensor.ndim else 1, -1)
            step = max(1, (1 << 26) // max(1, rows.shape[1]))  # at most 64 M values at a time
            for start in range(0, rows.shape[0], step):
                block = torch.randn(min(step, rows.shape[0] - start), rows.shape[1], generator=g) * 0.02
                f.write(block.to(tensor.dtype).view(torch.uint8).numpy().tobytes())
    return path.stat().st_size
