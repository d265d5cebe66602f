"""Write the π0 / π0.5 reference fixtures under tests/fixtures/policies/ (run once, by hand).

Like scripts/make_smolvla_fixtures.py this runs in a scratch environment with LeRobot 0.6.1,
never a dependency of this project:

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python "lerobot[pi]==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_pi_fixtures.py

LeRobot 0.6.1 builds π0 only from openpi's `gemma_300m` and `gemma_2b` (the smallest legal model
has about 1.3 B parameters), and reads its tokenizer from the gated hub repo
google/paligemma-3b-pt-224. There is no hub here and the fixtures must stay small, so this
script, inside the scratch environment only:
- adds openpi's `dummy` Gemma (width 64, depth 4, MLP 128, 8 heads, 1 KV head of 16) to
  LeRobot's variant table, and for models of that width a vocabulary of 512 and a SigLIP tower
  of hidden 32, MLP 64, 1 layer, 2 heads, patch 14 (224 px -> 256 image tokens), projection 64;
- builds a small Gemma-like tokenizer directory (`pi_tokenizer/`: byte-level BPE trained with
  the `tokenizers` library on benchmark instructions and the π0.5 prompt's words; <pad>, <eos>,
  <bos>, <unk> as ids 0-3; <bos> prepended) and makes LeRobot's processor factories name it
  instead of the hub repo. Saved files name it by its repository-relative path
  (`TOKENIZER_PLACEHOLDER`); the tests rewrite that to the absolute path.

Then, per fixture, it builds a random policy with LeRobot's classes, saves it with LeRobot's
writers (config.json, model.safetensors, processor pipelines and statistics), loads it back
through LeRobot's public API (`PI0Policy.from_pretrained(dir, config=cfg)`,
`make_pre_post_processors(cfg, pretrained_path=dir)`) and records in `expected.safetensors`
what that computes from fixed inputs: preprocessed batches, the chunk for given noise, the
actions `select_action` executes after `torch.manual_seed` (a batch of two, and one row), the
training loss after `torch.manual_seed(5)` with every gradient, and the chunk of the same
weights loaded with `dtype=bfloat16` (LeRobot's mixed layout), computed with each op in float64
rounded to its dtype (tests/policies/float64_arithmetic.py): with the CPU's own bfloat16 kernels
that chunk changes with the CPU (by up to 3.9e-3 between the kernels of one Xeon).

`--bf16-only` records just that chunk (and the layout) again into the committed fixtures and
keeps everything else as it was: rebuilding the rest on another machine, or with other versions
of `tokenizers` and torch, changes the tokenizer's merges and the weights' last bits. The scratch
environment needs `transformers` then too (`lerobot[pi]` brings it).

`pi_full_size_layout.json` records LeRobot's full-size models (gemma_2b PaliGemma with SigLIP
So400m/14, gemma_300m expert, LIBERO's features), built on the meta device with no weights:
every state-dict entry's shape and its dtype in the bfloat16 layout, per-layer entries written
once with the number of layers, and the parameter count. `--full-size-only` writes just that.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "policies"
TOKENIZER_DIR = OUT / "pi_tokenizer"
TOKENIZER_PLACEHOLDER = "tests/fixtures/policies/pi_tokenizer"
BATCH = 2
N_STEPS = 7
TASKS = [
    "pick up the black bowl and place it on the plate",
    # Words the tokenizer never saw fall back to bytes; "_" and the newline are cleaned by
    # π0.5's prompt step, and π0's newline step must not add a second newline.
    "wave hello to the camera_then push the puck to the goal\n",
]
CORPUS_FILES = ("src/lerobot/envs/libero/tasks.json", "src/lerobot/envs/metaworld/tasks.json")
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]
# Upscaled by exactly 2 and 4 to 224 px: torch 2.11 (LeRobot's) and 2.15 (ours) resize by other
# factors (3.5x) differently in the last bit, which bfloat16 rounding would magnify.
CAMERAS = {"observation.images.image": (3, 56, 112), "observation.images.image2": (3, 56, 56)}
STATE_DIM, ACTION_DIM = 8, 7
DUMMY_WIDTH = 64
BF16_CHUNK = "bf16.float64_arithmetic.chunk.normalized"


# -- the scratch-only additions to LeRobot -----------------------------------------------------


def add_dummy_variant() -> None:
    """openpi's dummy Gemma, and the vocabulary and SigLIP tower agreed for models of its width."""
    from lerobot.policies.pi_gemma import PaliGemmaForConditionalGenerationWithPiGemma, PiGemmaForCausalLM

    import lerobot.policies.pi0.modeling_pi0 as pi0_modeling
    import lerobot.policies.pi05.modeling_pi05 as pi05_modeling

    real_variant = pi0_modeling.get_gemma_config

    def get_gemma_config(variant: str):
        if variant == "dummy":
            return pi0_modeling.GemmaConfig(
                width=DUMMY_WIDTH, depth=4, mlp_dim=128, num_heads=8, num_kv_heads=1, head_dim=16
            )
        return real_variant(variant)

    class TinyPaliGemma(PaliGemmaForConditionalGenerationWithPiGemma):
        def __init__(self, config):
            if config.text_config.hidden_size == DUMMY_WIDTH:
                config.text_config.vocab_size = 512
                config._vocab_size = 512
                vision = config.vision_config
                vision.hidden_size, vision.intermediate_size = 32, 64
                vision.num_hidden_layers, vision.num_attention_heads = 1, 2
                vision.patch_size, vision.projection_dim = 14, DUMMY_WIDTH
            super().__init__(config)

    class TinyExpert(PiGemmaForCausalLM):
        def __init__(self, config, **kwargs):
            if config.hidden_size == DUMMY_WIDTH:
                config.vocab_size = 512
            super().__init__(config, **kwargs)

    for module in (pi0_modeling, pi05_modeling):
        module.get_gemma_config = get_gemma_config
        module.PaliGemmaForConditionalGenerationWithPiGemma = TinyPaliGemma
        module.PiGemmaForCausalLM = TinyExpert


def use_local_tokenizer() -> None:
    """LeRobot's π processor factories name google/paligemma-3b-pt-224; name the tiny one."""
    import lerobot.policies.pi0.processor_pi0 as pi0_processor
    import lerobot.policies.pi05.processor_pi05 as pi05_processor

    from lerobot.processor import TokenizerProcessorStep

    def local_tokenizer_step(**kwargs):
        kwargs["tokenizer_name"] = str(TOKENIZER_DIR)
        return TokenizerProcessorStep(**kwargs)

    pi0_processor.TokenizerProcessorStep = local_tokenizer_step
    pi05_processor.TokenizerProcessorStep = local_tokenizer_step


def with_dummy_variants(config):
    """LeRobot's config validation knows only the real variants: set the dummy one after it."""
    config.paligemma_variant = "dummy"
    config.action_expert_variant = "dummy"
    return config


def replaced(config, **changes):
    """`dataclasses.replace` past LeRobot's variant check."""
    real = {"paligemma_variant": "gemma_2b", "action_expert_variant": "gemma_300m"}
    return with_dummy_variants(dataclasses.replace(config, **real, **changes))


# -- the tokenizer ---------------------------------------------------------------------------


def corpus() -> list[str]:
    """Every benchmark instruction this repository knows, and the words of π0.5's prompt."""
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
    numbers = " ".join(str(i) for i in range(256))
    texts += [f"Task: {t}, State: {numbers};\nAction: " for t in texts[:50]]
    return texts


def build_tokenizer(directory: Path) -> None:
    """A Gemma-like tokenizer directory as AutoTokenizer reads it, a few tens of kB."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=420, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(corpus(), trainer)
    bpe.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bpe.token_to_id("<bos>"))]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>", unk_token="<unk>"
    )
    assert len(tokenizer) <= 512, len(tokenizer)
    tokenizer.save_pretrained(directory)


# -- inputs ----------------------------------------------------------------------------------


def features():
    from lerobot.configs import FeatureType, PolicyFeature

    inputs = {key: PolicyFeature(FeatureType.VISUAL, shape) for key, shape in CAMERAS.items()}
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
    return inputs, {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}


def dataset_stats() -> dict[str, dict[str, torch.Tensor]]:
    """Plausible statistics with quantiles (π0.5 normalises state and actions by q01/q99)."""
    g = torch.Generator().manual_seed(7)

    def stats(shape):
        mean = torch.rand(shape, generator=g) * 0.4 - 0.2
        std = torch.rand(shape, generator=g) * 0.3 + 0.2
        return {
            "mean": mean,
            "std": std,
            "min": mean - 2 * std,
            "max": mean + 2 * std,
            "q01": mean - 1.8 * std,
            "q99": mean + 1.9 * std,
        }

    out = {key: stats((3, 1, 1)) for key in CAMERAS}
    out["observation.state"] = stats((STATE_DIM,))
    out["action"] = stats((ACTION_DIM,))
    return out


def raw_steps(seed: int) -> list[dict[str, torch.Tensor]]:
    """Env-side observations: uint8 pixels (B, 3, H, W) and float states (some beyond q01..q99)."""
    g = torch.Generator().manual_seed(seed)
    steps = []
    for _ in range(N_STEPS):
        step = {
            key: torch.randint(0, 256, (BATCH, *shape), generator=g, dtype=torch.uint8)
            for key, shape in CAMERAS.items()
        }
        step["observation.state"] = torch.randn((BATCH, STATE_DIM), generator=g) * 0.6
        steps.append(step)
    return steps


def preprocess(pre, step: dict[str, torch.Tensor], rows: slice = slice(None)) -> dict[str, torch.Tensor]:
    """LeRobot's preprocessor on one step; pixels become float in [0, 1] first, as in its eval."""
    batch = {
        k: (v.float().div(255.0) if v.dtype == torch.uint8 else v.clone())[rows] for k, v in step.items()
    }
    batch["task"] = list(TASKS)[rows]
    out = pre(batch)
    return {k: v for k, v in out.items() if isinstance(v, torch.Tensor)}


def fresh(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in batch.items()}


# -- saving and recording --------------------------------------------------------------------


def save_checkpoint(policy, pre, post, directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    policy.save_pretrained(directory)
    pre.save_pretrained(directory)
    post.save_pretrained(directory)
    (directory / "README.md").unlink(missing_ok=True)


def replace_tokenizer_path(directory: Path, old: str, new: str) -> None:
    for name in ("config.json", "policy_preprocessor.json"):
        path = directory / name
        path.write_text(path.read_text().replace(old, new))


def load_public(policy_class, config, directory: Path):
    """The policy and processors as LeRobot users load a checkpoint."""
    from lerobot.policies.factory import make_pre_post_processors

    policy = policy_class.from_pretrained(directory, config=config)
    policy.eval()
    pre, post = make_pre_post_processors(config, pretrained_path=str(directory))
    return policy, pre, post


def gradient_summary(name: str, grad: torch.Tensor, edge: int = 64) -> dict[str, torch.Tensor]:
    """A gradient small enough to commit: whole when small, else its first and last `edge`
    values with its sum and norm."""
    flat = grad.flatten()
    if flat.numel() <= 4 * edge:
        return {f"grad.{name}": grad}
    return {
        f"grad.{name}.head": flat[:edge],
        f"grad.{name}.tail": flat[-edge:],
        f"grad.{name}.sum": flat.double().sum(),
        f"grad.{name}.norm": flat.double().norm(),
    }


def record_actions(policy, pre, post, steps, tensors: dict) -> None:
    normalized = [preprocess(pre, s) for s in steps]
    tensors.update({f"normalized.0.{k}": v for k, v in normalized[0].items() if k not in CAMERAS})
    tensors.update({f"normalized.1.{k}": v for k, v in normalized[1].items() if k not in CAMERAS})
    g = torch.Generator().manual_seed(21)
    noise = torch.randn((BATCH, policy.config.chunk_size, policy.config.max_action_dim), generator=g)
    tensors["noise"] = noise
    with torch.no_grad():
        policy.reset()
        chunk = policy.predict_action_chunk(fresh(normalized[0]), noise=noise.clone())
        tensors["chunk.normalized"], tensors["chunk.unnormalized"] = chunk, post(chunk)
        policy.reset()
        torch.manual_seed(7)  # both rows draw their noise from the global generator
        tensors["select_action.seed_7"] = torch.stack(
            [post(policy.select_action(preprocess(pre, s))) for s in steps]
        )
        policy.reset()
        torch.manual_seed(99)  # one env, seeded as an episode would be
        first = slice(0, 1)
        tensors["select_action.seed_99.row_0"] = torch.stack(
            [post(policy.select_action(preprocess(pre, s, first))) for s in steps]
        )


def record_training(policy, pre, steps, tensors: dict) -> dict:
    """Loss and gradients of one batch after torch.manual_seed(5) (noise, then time)."""
    g = torch.Generator().manual_seed(31)
    batch = preprocess(pre, steps[0])
    chunk_size = policy.config.chunk_size
    batch["action"] = torch.randn((BATCH, chunk_size, ACTION_DIM), generator=g)
    tensors.update({f"train.batch.{k}": v for k, v in batch.items() if k not in CAMERAS})
    policy.train()
    policy.zero_grad(set_to_none=True)
    torch.manual_seed(5)
    loss, info = policy.forward(fresh(batch))
    loss.backward()
    tensors["train.loss_seed_5"] = loss.detach()
    tensors["train.loss_per_dim"] = torch.tensor(info["loss_per_dim"])
    for name, param in policy.named_parameters():
        if param.grad is not None:
            tensors.update(gradient_summary(name, param.grad.detach().float()))
    torch.manual_seed(5)
    per_sample, _ = policy.forward(fresh(batch), reduction="none")
    tensors["train.per_sample_seed_5"] = per_sample.detach()
    policy.eval()
    return {
        "loss": info["loss"],
        "with_grad": sorted(n for n, p in policy.named_parameters() if p.grad is not None),
    }


def trainable(policy_class, config, directory: Path) -> dict[str, list[str]]:
    frozen = replaced(config, freeze_vision_encoder=True, train_expert_only=True)
    vision_frozen = replaced(config, freeze_vision_encoder=True)
    out = {}
    for label, cfg in (("defaults", config), ("expert_only", frozen), ("vision_frozen", vision_frozen)):
        policy = policy_class.from_pretrained(directory, config=cfg)
        out[label] = sorted(n for n, p in policy.named_parameters() if p.requires_grad)
    return out


def float64_arithmetic():
    """tests/policies/float64_arithmetic.py's mode, imported by path: this repository's own
    package is also called lerobot."""
    path = REPO / "tests" / "policies" / "float64_arithmetic.py"
    spec = importlib.util.spec_from_file_location("float64_arithmetic", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Float64Arithmetic()


def record_bf16(policy_class, config, directory: Path, pre, steps, noise, tensors: dict) -> None:
    """The same checkpoint loaded with dtype=bfloat16: LeRobot's mixed layout, and its chunk
    with each op in float64 rounded to its dtype (the same bits on any x86 CPU)."""
    bf16_config = replaced(config, dtype="bfloat16")
    policy = policy_class.from_pretrained(directory, config=bf16_config)
    policy.eval()
    state = policy.state_dict()
    tensors["bf16.dtypes"] = torch.tensor([state[k].dtype == torch.bfloat16 for k in sorted(state)])
    batch = preprocess(pre, steps[0])
    with torch.no_grad(), float64_arithmetic():
        tensors[BF16_CHUNK] = policy.predict_action_chunk(batch, noise=noise.clone())


def rerecord_bf16(name: str, config_class, policy_class, settings: dict) -> None:
    """`--bf16-only`: the bfloat16 entries of fixture `name` recorded again from its committed
    checkpoint and inputs; every other entry and the metadata kept as they are."""
    from safetensors import safe_open

    from lerobot.policies.factory import make_pre_post_processors

    path = OUT / name / "expected.safetensors"
    tensors = load_file(path)
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata()
    layout = tensors["bf16.dtypes"]
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / name
        shutil.copytree(OUT / name, directory)
        replace_tokenizer_path(directory, TOKENIZER_PLACEHOLDER, str(TOKENIZER_DIR))
        config = fixture_config(config_class, settings)
        pre, _ = make_pre_post_processors(config, pretrained_path=str(directory))
        step = {k.removeprefix("raw.0."): v for k, v in tensors.items() if k.startswith("raw.0.")}
        tensors.pop("bf16.chunk.normalized", None)  # the chunk of the CPU's own kernels
        record_bf16(policy_class, config, directory, pre, [step], tensors["noise"], tensors)
    assert torch.equal(tensors["bf16.dtypes"], layout), f"{name}: LeRobot's bfloat16 layout changed"
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, metadata=metadata)
    print(f"{name}: {BF16_CHUNK} recorded again")


def fixture_config(config_class, settings: dict):
    """A fresh config, as a user's `PreTrainedConfig.from_pretrained` would give."""
    inputs, outputs = features()
    return with_dummy_variants(
        config_class(input_features=inputs, output_features=outputs, device="cpu", **settings)
    )


def make_fixture(name: str, config_class, policy_class, **settings) -> None:
    from lerobot.policies.factory import make_pre_post_processors

    config = fixture_config(config_class, settings)
    torch.manual_seed(0)
    policy = policy_class(config)
    pre, post = make_pre_post_processors(config, dataset_stats=dataset_stats())
    directory = OUT / name
    save_checkpoint(policy, pre, post, directory)

    loaded_config = fixture_config(config_class, settings)
    policy, pre, post = load_public(policy_class, loaded_config, directory)
    saved = load_file(directory / "model.safetensors")
    embed = "model.paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight"
    embed_kept = torch.equal(policy.state_dict()[embed], saved[embed])
    print(f"{name}: from_pretrained keeps the saved embed_tokens: {embed_kept}")

    steps = raw_steps(seed=11)
    tensors: dict[str, torch.Tensor] = {}
    for i, raw in enumerate(steps):
        tensors.update({f"raw.{i}.{k}": v for k, v in raw.items()})
    record_actions(policy, pre, post, steps, tensors)
    training = record_training(policy, pre, steps, tensors)
    meta = {
        "tasks": TASKS,
        "n_steps": N_STEPS,
        "loss": training["loss"],
        "with_grad": training["with_grad"],
        "trainable": trainable(policy_class, loaded_config, directory),
        "embed_tokens_from_file": embed_kept,
    }
    record_bf16(policy_class, loaded_config, directory, pre, steps, tensors["noise"], tensors)
    replace_tokenizer_path(directory, str(TOKENIZER_DIR), TOKENIZER_PLACEHOLDER)
    flat = {k: v.detach().cpu().clone().contiguous() for k, v in tensors.items()}
    save_file(flat, directory / "expected.safetensors", metadata={"info": json.dumps(meta)})


# -- full-size layouts -------------------------------------------------------------------------

LAYER_INDEX = re.compile(r"\.layers\.\d+\.")


def full_size_layout(config_class, policy_class) -> dict:
    """LeRobot's full-size model on the meta device: parameter count, float32 default, and
    `pattern -> [shape, dtype in the bfloat16 layout, number of layers]`."""
    from lerobot.configs.types import FeatureType, PolicyFeature

    inputs = {
        key: PolicyFeature(FeatureType.VISUAL, (3, 256, 256))
        for key in ("observation.images.image", "observation.images.image2")
    }
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    states = {}
    for dtype in ("float32", "bfloat16"):
        config = config_class(input_features=inputs, output_features=outputs, device="cpu", dtype=dtype)
        with torch.device("meta"), meta_stays_put():
            policy = policy_class(config)
        states[dtype] = {
            n: (list(t.shape), str(t.dtype).removeprefix("torch.")) for n, t in policy.state_dict().items()
        }
        count = sum(p.numel() for p in policy.parameters())
    assert list(states["float32"]) == list(states["bfloat16"])
    assert {dt for _, dt in states["float32"].values()} == {"float32"}
    entries: dict[str, list] = {}
    for name, (shape, dtype) in states["bfloat16"].items():
        pattern = LAYER_INDEX.sub(".layers.{i}.", name)
        if pattern in entries:
            assert entries[pattern][:2] == [shape, dtype], f"{name} differs from its other layers"
            entries[pattern][2] += 1
        else:
            entries[pattern] = [shape, dtype, 1]
    return {"parameters": count, "float32_layout": "float32", "state_dict": entries}


@contextlib.contextmanager
def meta_stays_put():
    """LeRobot's constructors end with `.to(config.device)`, which a meta model cannot do; keep
    the dtype changes (the bfloat16 layout), drop the move."""
    original = torch.nn.Module.to

    def dtype_only(module, *args, **kwargs):
        _, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        return module if dtype is None else original(module, dtype=dtype)

    torch.nn.Module.to = dtype_only
    try:
        yield
    finally:
        torch.nn.Module.to = original


def one_entry_a_line(layouts: dict) -> str:
    """JSON with one state-dict entry a line, so that a diff names the entry that changed."""
    models = []
    for name, layout in layouts.items():
        entries = ",\n".join(f"   {json.dumps(k)}: {json.dumps(v)}" for k, v in layout["state_dict"].items())
        head = {k: v for k, v in layout.items() if k != "state_dict"}
        fields = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
        fields.append(f'  "state_dict": {{\n{entries}\n  }}')
        models.append(f" {json.dumps(name)}: {{\n" + ",\n".join(fields) + "\n }")
    text = "{\n" + ",\n".join(models) + "\n}\n"
    assert json.loads(text) == layouts
    return text


def write_full_size_layouts(classes: dict) -> None:
    layouts = {name: full_size_layout(*pair) for name, pair in classes.items()}
    (OUT / "pi_full_size_layout.json").write_text(one_entry_a_line(layouts))
    for name, layout in layouts.items():
        print(f"{name} full size: {layout['parameters']:,d} parameters, {len(layout['state_dict'])} patterns")


def fixture_settings() -> dict[str, tuple[type, type, dict]]:
    """name -> (LeRobot's config class, its policy class, the config's settings)."""
    from lerobot.policies.pi0.configuration_pi0 import PI0Config
    from lerobot.policies.pi0.modeling_pi0 import PI0Policy
    from lerobot.policies.pi05.configuration_pi05 import PI05Config
    from lerobot.policies.pi05.modeling_pi05 import PI05Policy

    return {
        # LIBERO's layout: two cameras (neither 224 px, one not square: resize with centred
        # padding), a blank third; 8-d state, 7-d actions; π0's mean/std statistics.
        "pi0": (
            PI0Config,
            PI0Policy,
            {"empty_cameras": 1, "chunk_size": 10, "n_action_steps": 5, "tokenizer_max_length": 16},
        ),
        # π0.5's defaults: quantile statistics, the state written into the prompt; fewer
        # denoising steps and no blank camera.
        "pi05": (
            PI05Config,
            PI05Policy,
            {"chunk_size": 10, "n_action_steps": 5, "num_inference_steps": 4, "tokenizer_max_length": 72},
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-size-only", action="store_true", help="write only pi_full_size_layout.json")
    parser.add_argument(
        "--bf16-only", action="store_true", help="record only the bfloat16 layout and chunk again"
    )
    args = parser.parse_args()
    import lerobot

    print(f"lerobot {lerobot.__version__} from {Path(lerobot.__file__).parent}")
    if Path(lerobot.__file__).resolve().is_relative_to(REPO):
        sys.exit("run this with the scratch environment's python, not this repository's")
    settings = fixture_settings()
    if not args.bf16_only:
        write_full_size_layouts({name: classes[:2] for name, classes in settings.items()})
    if args.full_size_only:
        return 0
    # One thread, as the tests run: bfloat16 matrix products round differently with more.
    torch.set_num_threads(1)
    add_dummy_variant()
    use_local_tokenizer()
    if args.bf16_only:
        for name, (config_class, policy_class, fields) in settings.items():
            rerecord_bf16(name, config_class, policy_class, fields)
        return 0
    build_tokenizer(TOKENIZER_DIR)
    for name, (config_class, policy_class, fields) in settings.items():
        make_fixture(name, config_class, policy_class, **fields)
    for path in sorted(OUT.rglob("*")):
        if path.is_file() and str(path.relative_to(OUT)).startswith("pi"):
            print(f"{path.stat().st_size:>10,d}  {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
