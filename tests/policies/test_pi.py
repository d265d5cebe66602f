"""π0 and π0.5 against what LeRobot 0.6.1 computed with the same weights, inputs and noise
(tests/fixtures/policies/pi0 and pi05, written by scripts/make_pi_fixtures.py with openpi's
dummy Gemma and a tiny tokenizer).

Both have LIBERO's layout (cameras `image` 56x112 and `image2` 56x56, resized with centred
padding to 224; 8-d state; 7-d actions); `pi0` adds a blank camera and normalises by mean/std,
`pi05` by quantiles, with the discretised state in its prompt. Both are loaded as LeRobot users
load them: `get_policy_class(type).from_pretrained(dir, config=cfg)` and
`make_pre_post_processors(cfg, pretrained_path=dir)`.
"""

import dataclasses

import pytest
import torch

from lerobot.configs.checkpoint import CheckpointError
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import CliError, parse_config
from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.factory import get_policy_class, make_pre_post_processors
from tests.policies.float64_arithmetic import Float64Arithmetic
from tests.policies.pi_checkpoints import FIXTURES, NAMES, expected, materialize, raw_step

EXACT = {"atol": 1e-5, "rtol": 0}
GRADIENTS = {"atol": 1e-4, "rtol": 0}


@pytest.fixture(scope="module")
def pi_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pi")
    return {name: materialize(name, root / name) for name in NAMES}


@dataclasses.dataclass
class Loaded:
    cfg: PreTrainedConfig
    policy: torch.nn.Module
    pre: object
    post: object


def load(directory, **overrides) -> Loaded:
    """LeRobot's public API: config, policy class, from_pretrained, processors."""
    cfg = dataclasses.replace(PreTrainedConfig.from_pretrained(directory), device="cpu", **overrides)
    policy = get_policy_class(cfg.type).from_pretrained(directory, config=cfg)
    pre, post = make_pre_post_processors(cfg, pretrained_path=directory)
    return Loaded(cfg, policy, pre, post)


def fresh(batch):
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


@pytest.mark.parametrize("name", NAMES)
def test_actions_match_lerobot(pi_dirs, name):
    """Preprocessing (π0: newline and tokens; π0.5: the quantile-normalised state written into
    the prompt), the chunk for given noise, the actions executed across a chunk boundary with
    LeRobot's global-generator noise for a batch of two, and one seeded row."""
    recorded, meta = expected(name)
    loaded = load(pi_dirs[name])
    assert not loaded.policy.training
    for step in (0, 1):
        batch = loaded.pre(raw_step(recorded, meta, step))
        for key, value in recorded.items():
            if key.startswith(f"normalized.{step}."):
                torch.testing.assert_close(batch[key.removeprefix(f"normalized.{step}.")], value, **EXACT)
    batch = loaded.pre(raw_step(recorded, meta, 0))
    chunk = loaded.policy.predict_action_chunk(fresh(batch), noise=recorded["noise"].clone())
    torch.testing.assert_close(chunk, recorded["chunk.normalized"], **EXACT)
    torch.testing.assert_close(loaded.post(chunk), recorded["chunk.unnormalized"], **EXACT)

    steps = range(meta["n_steps"])
    loaded.policy.reset()
    torch.manual_seed(7)
    actions = [
        loaded.post(loaded.policy.select_action(loaded.pre(raw_step(recorded, meta, i)))) for i in steps
    ]
    torch.testing.assert_close(torch.stack(actions), recorded["select_action.seed_7"], **EXACT)

    loaded.policy.reset(env_ids=[0], seeds=[99])  # LeRobot: torch.manual_seed(99), one env
    first_row = slice(0, 1)
    actions = [
        loaded.post(loaded.policy.select_action(loaded.pre(raw_step(recorded, meta, i, first_row))))
        for i in steps
    ]
    torch.testing.assert_close(torch.stack(actions), recorded["select_action.seed_99.row_0"], **EXACT)

    loaded.policy.reset(env_ids=[0], seeds=[99])  # the rollout's shortcut inside a chunk
    actions = []
    for i in steps:
        action = loaded.policy.actions_without_observation(1)
        if action is None:
            action = loaded.policy.select_action(loaded.pre(raw_step(recorded, meta, i, first_row)))
        actions.append(loaded.post(action))
    torch.testing.assert_close(torch.stack(actions), recorded["select_action.seed_99.row_0"], **EXACT)


@pytest.mark.parametrize("name", NAMES)
def test_training_loss_and_gradients_match_lerobot(pi_dirs, name):
    """One batch after torch.manual_seed(5) (noise, then time, from the global generator): the
    loss, its per-dimension and per-sample forms, every gradient, and which parameters train
    by default, with train_expert_only and with freeze_vision_encoder."""
    recorded, meta = expected(name)
    policy = load(pi_dirs[name]).policy
    batch = {k.removeprefix("train.batch."): v for k, v in recorded.items() if k.startswith("train.batch.")}
    batch.update(loaded_images(recorded, meta))
    policy.train()
    torch.manual_seed(5)
    loss, info = policy.forward(fresh(batch))
    loss.backward()
    torch.testing.assert_close(loss.detach(), recorded["train.loss_seed_5"], **EXACT)
    torch.testing.assert_close(torch.tensor(info["loss_per_dim"]), recorded["train.loss_per_dim"], **EXACT)
    assert info["loss"] == pytest.approx(meta["loss"], abs=1e-5)
    with_grad = sorted(n for n, p in policy.named_parameters() if p.grad is not None)
    assert with_grad == meta["with_grad"]
    for param_name, param in policy.named_parameters():
        if param.grad is None:
            continue
        grad, key = param.grad.flatten(), f"grad.{param_name}"
        if key in recorded:
            torch.testing.assert_close(param.grad, recorded[key], **GRADIENTS)
            continue
        torch.testing.assert_close(grad[:64], recorded[f"{key}.head"], **GRADIENTS)
        torch.testing.assert_close(grad[-64:], recorded[f"{key}.tail"], **GRADIENTS)
        torch.testing.assert_close(grad.double().sum(), recorded[f"{key}.sum"], **GRADIENTS)
        torch.testing.assert_close(grad.double().norm(), recorded[f"{key}.norm"], **GRADIENTS)
    torch.manual_seed(5)
    per_sample, _ = policy.forward(fresh(batch), reduction="none")
    torch.testing.assert_close(per_sample.detach(), recorded["train.per_sample_seed_5"], **EXACT)

    for label, flags in (
        ("defaults", {}),
        ("expert_only", {"freeze_vision_encoder": True, "train_expert_only": True}),
        ("vision_frozen", {"freeze_vision_encoder": True}),
    ):
        trained = load(pi_dirs[name], **flags).policy
        assert sorted(n for n, p in trained.named_parameters() if p.requires_grad) == meta["trainable"][label]


def loaded_images(recorded, meta) -> dict[str, torch.Tensor]:
    """The training batch's cameras: step 0's pixels in [0, 1] (images are not normalised)."""
    return {k: v for k, v in raw_step(recorded, meta, 0).items() if k.startswith("observation.images.")}


def test_predict_action_chunk_takes_lerobots_sampler_keywords(pi_dirs):
    """LeRobot's π passes predict_action_chunk's keywords to its sampler: `num_steps` gives the
    chunk of a policy configured with that many steps; real-time chunking's change nothing
    (RTC is off); a keyword no sampler reads is refused, naming the ones that count."""
    recorded, meta = expected("pi0")
    loaded, two_steps = load(pi_dirs["pi0"]), load(pi_dirs["pi0"], num_inference_steps=2)
    batch = loaded.pre(raw_step(recorded, meta, 0))
    noise = recorded["noise"]
    chunk = loaded.policy.predict_action_chunk(fresh(batch), noise=noise.clone(), num_steps=2)
    torch.testing.assert_close(
        chunk, two_steps.policy.predict_action_chunk(fresh(batch), noise=noise.clone())
    )
    assert not torch.allclose(chunk, recorded["chunk.normalized"], atol=1e-3)
    rtc = {"inference_delay": 2, "prev_chunk_left_over": None, "execution_horizon": 5}
    chunk = loaded.policy.predict_action_chunk(fresh(batch), noise=noise.clone(), **rtc)
    torch.testing.assert_close(chunk, recorded["chunk.normalized"], **EXACT)
    with pytest.raises(TypeError, match="num_step; it takes noise, execution_horizon, .*num_steps"):
        loaded.policy.predict_action_chunk(fresh(batch), num_step=2)


@pytest.mark.parametrize("name", NAMES)
def test_bfloat16_layout_matches_lerobot(pi_dirs, name):
    """dtype=bfloat16: the Gemma weights in bfloat16, SigLIP, the projector and every norm in
    float32 (LeRobot's layout), and the same chunk (rotary frequencies held in bfloat16 too).

    Both chunks are computed with each op in float64 rounded to the dtype it returns
    (tests/policies/float64_arithmetic.py), which keeps every rounding the layout makes and
    gives the same bits on any x86 CPU. With the CPU's own bfloat16 kernels the chunk depends on
    the CPU: LeRobot's, recorded that way elsewhere, differed by up to 2.9e-3 (π0) and 1.3e-3
    (π0.5) from what LeRobot itself gave on a Xeon with AMX, which ours matched bit for bit;
    switching that Xeon's kernels moved it by up to 3.9e-3, the float32 chunk is 9.6e-3 away
    and holding the rotary frequencies in float32 moves it 4.2e-3."""
    recorded, meta = expected(name)
    loaded = load(pi_dirs[name], dtype="bfloat16")
    state = loaded.policy.state_dict()
    dtypes = [state[k].dtype == torch.bfloat16 for k in sorted(state)]
    assert dtypes == recorded["bf16.dtypes"].tolist() and any(dtypes) and not all(dtypes)
    batch = loaded.pre(raw_step(recorded, meta, 0))
    with Float64Arithmetic():
        chunk = loaded.policy.predict_action_chunk(batch, noise=recorded["noise"].clone())
    torch.testing.assert_close(chunk, recorded["bf16.float64_arithmetic.chunk.normalized"], **EXACT)


def test_rows_refill_together_in_one_prefix_pass_and_restart_alone(pi_dirs, monkeypatch):
    """The VLM prefix runs once per chunk for all rows that need one; a row reset mid-chunk
    restarts alone and then acts exactly like a fresh policy seeing the same inputs."""
    recorded, meta = expected("pi05")
    loaded, alone = load(pi_dirs["pi05"]), load(pi_dirs["pi05"])
    calls = []
    network = loaded.policy.model.paligemma_with_expert
    original = network.fill_prefix_cache
    monkeypatch.setattr(network, "fill_prefix_cache", lambda *a: calls.append(a[0].shape[0]) or original(*a))

    def act(steps, policy=loaded, rows=slice(None)):
        return [
            policy.post(policy.policy.select_action(policy.pre(raw_step(recorded, meta, i, rows))))
            for i in steps
        ]

    loaded.policy.reset(env_ids=[0, 1], seeds=[3, 4])
    act(range(2))
    loaded.policy.reset(env_ids=[1], seeds=[7])
    alone.policy.reset(env_ids=[0], seeds=[7])
    both = act(range(2, meta["n_steps"]))
    single = act(range(2, meta["n_steps"]), alone, slice(1, 2))
    torch.testing.assert_close(torch.stack(both)[:, 1:], torch.stack(single), **EXACT)
    # n_action_steps=5: both rows at step 0, row 1 again at step 2, row 0 at step 5.
    assert calls == [2, 1, 1]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--policy.n_action_steps=11"],
            "--policy.n_action_steps=11: must be between 1 and --policy.chunk_size=10",
        ),
        (["--policy.dtype=float16"], "--policy.dtype='float16': must be one of bfloat16, float32"),
        (
            ["--policy.paligemma_variant=gemma_300m"],
            "--policy.paligemma_variant='gemma_300m': must be one of gemma_2b, dummy (LeRobot 0.6.1",
        ),
        (
            ["--policy.action_expert_variant=gemma_300m"],
            "--policy.action_expert_variant='gemma_300m': its attention heads do not match",
        ),
        (
            ["--policy.image_resolution=[224,256]"],
            "--policy.image_resolution=[224, 256]: PaliGemma needs a square",
        ),
        (
            ["--policy.use_relative_actions=true"],
            "--policy.use_relative_actions=true: relative actions are not",
        ),
    ],
)
def test_bad_settings_fail_in_one_line_naming_the_flag(pi_dirs, flags, message):
    argv = [f"--policy.path={pi_dirs['pi0']}", "--env.type=libero", "--env.task=libero_spatial", *flags]
    with pytest.raises(CliError) as error:
        parse_config(EvalPipelineConfig, argv)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_checkpoint_weights_that_do_not_fit_fail_in_one_line(tmp_path):
    from safetensors.torch import load_file, save_file

    broken = materialize("pi05", tmp_path / "broken")
    state = load_file(broken / "model.safetensors")
    del state["model.time_mlp_in.bias"]
    state["model.state_proj.weight"] = torch.zeros(64, 32)  # π0's, not π0.5's
    save_file(state, broken / "model.safetensors")
    with pytest.raises(
        CheckpointError,
        match=r"model.safetensors does not fit the config: 1 missing key\(s\) \(e.g. model.time_mlp_in.bias\); "
        r"1 unexpected key\(s\) \(e.g. model.state_proj.weight\)",
    ):
        load(broken)


def test_relative_actions_in_the_saved_pipeline_are_refused(tmp_path):
    import json

    directory = materialize("pi0", tmp_path / "relative")
    path = directory / "policy_preprocessor.json"
    pipeline = json.loads(path.read_text())
    for step in pipeline["steps"]:
        if step["registry_name"] == "relative_actions_processor":
            step["config"]["enabled"] = True
    path.write_text(json.dumps(pipeline))
    cfg = dataclasses.replace(PreTrainedConfig.from_pretrained(directory), device="cpu")
    with pytest.raises(
        CheckpointError, match=r"relative_actions_processor is enabled \(actions relative to the state\)"
    ):
        make_pre_post_processors(cfg, pretrained_path=directory)


def libero_config(name: str, **settings) -> PreTrainedConfig:
    """`name`'s config on LIBERO's features (two 256 px cameras, 8-d state, 7-d actions)."""
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import make_policy_config

    inputs = {key: PolicyFeature(FeatureType.VISUAL, (3, 256, 256)) for key in ("observation.images.image", "observation.images.image2")}  # fmt: skip
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (8,))
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (7,))}
    return make_policy_config(name, input_features=inputs, output_features=outputs, device="cpu", **settings)


@pytest.mark.parametrize("name", NAMES)
def test_full_size_models_have_lerobots_layout(name):
    """LeRobot's checkpoints are gemma_2b + SigLIP So400m/14 + gemma_300m: our model of that size
    must have every one of their state-dict entries, shape and bfloat16-layout dtype (strict
    loading of a real checkpoint depends on it), built on the meta device: no weights, no
    download. The layout is what LeRobot 0.6.1 built (scripts/make_pi_fixtures.py)."""
    import json
    import re

    recorded = json.loads((FIXTURES / "pi_full_size_layout.json").read_text())[name]
    for dtype in ("float32", "bfloat16"):
        with torch.device("meta"):
            policy = get_policy_class(name)(libero_config(name, dtype=dtype))
        assert sum(p.numel() for p in policy.parameters()) == recorded["parameters"]
        layout: dict[str, list] = {}
        for key, tensor in policy.state_dict().items():
            entry = layout.setdefault(re.sub(r"\.layers\.\d+\.", ".layers.{i}.", key), [None, None, 0])
            entry[:2] = [list(tensor.shape), str(tensor.dtype).removeprefix("torch.")]
            entry[2] += 1
        expected_layout = {
            k: [shape, recorded["float32_layout"] if dtype == "float32" else entry_dtype, n]
            for k, (shape, entry_dtype, n) in recorded["state_dict"].items()
        }
        assert layout == expected_layout
