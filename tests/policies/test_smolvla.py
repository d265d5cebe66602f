"""SmolVLA against what LeRobot 0.6.1 computed with the same weights, inputs and noise
(tests/fixtures/policies/smolvla*, written by scripts/make_smolvla_fixtures.py).

`smolvla` has LIBERO's layout (two cameras, one of them not square, plus a blank one; 8-d state;
7-d actions) and smolvla_base's settings; `smolvla_variant` has those smolvla_base does not use
(half as many expert layers, image delimiter tokens, "longest" padding, a padded prefix, Aloha
conventions). Both are loaded as LeRobot users load them: `get_policy_class("smolvla")
.from_pretrained(dir, config=cfg)` and `make_pre_post_processors(cfg, pretrained_path=dir)`.
"""

import dataclasses

import pytest
import torch

from lerobot.configs.checkpoint import CheckpointError
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import CliError, parse_config
from lerobot.policies.factory import get_policy_class, make_policy, make_pre_post_processors
from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
from lerobot.policies.smolvla.loading import read_config
from tests.policies.smolvla_checkpoints import NAMES, expected, materialize, raw_step

EXACT = {"atol": 1e-5, "rtol": 0}
GRADIENTS = {"atol": 1e-4, "rtol": 0}


@pytest.fixture(scope="module")
def smolvla_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("smolvla")
    return {name: materialize(name, root / name) for name in NAMES}


@dataclasses.dataclass
class Loaded:
    cfg: SmolVLAConfig
    policy: torch.nn.Module
    pre: object
    post: object


def load(directory, **overrides) -> Loaded:
    """LeRobot's public API: config, policy class, from_pretrained, processors."""
    cfg = dataclasses.replace(read_config(directory), device="cpu", **overrides)
    policy = get_policy_class("smolvla").from_pretrained(directory, config=cfg)
    pre, post = make_pre_post_processors(cfg, pretrained_path=directory)
    return Loaded(cfg, policy, pre, post)


def fresh(batch):
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


@pytest.mark.parametrize("name", NAMES)
def test_actions_and_chunks_match_lerobot(smolvla_dirs, name):
    """Preprocessing (newline, tokens, normalised state), the chunk for LeRobot's noise, the
    actions executed across a chunk boundary, and one seeded row without given noise."""
    recorded, meta = expected(name)
    loaded = load(smolvla_dirs[name])
    assert not loaded.policy.training
    batch = loaded.pre(raw_step(recorded, meta, 0))
    for key, value in recorded.items():
        if key.startswith("normalized.0."):
            torch.testing.assert_close(batch[key.removeprefix("normalized.0.")], value, **EXACT)
    chunk = loaded.policy.predict_action_chunk(fresh(batch), noise=recorded["noise"].clone())
    torch.testing.assert_close(chunk, recorded["chunk.normalized"], **EXACT)
    torch.testing.assert_close(loaded.post(chunk), recorded["chunk.unnormalized"], **EXACT)

    loaded.policy.reset()
    noise = recorded["noise"]
    steps = range(meta["n_steps"])
    actions = [
        loaded.post(loaded.policy.select_action(loaded.pre(raw_step(recorded, meta, i)), noise))
        for i in steps
    ]
    torch.testing.assert_close(torch.stack(actions), recorded["select_action"], **EXACT)

    loaded.policy.reset(env_ids=[0], seeds=[99])  # LeRobot: torch.manual_seed(99), one env
    first_row = slice(0, 1)
    actions = [
        loaded.post(loaded.policy.select_action(loaded.pre(raw_step(recorded, meta, i, first_row))))
        for i in steps
    ]
    torch.testing.assert_close(torch.stack(actions), recorded["select_action.seed_99.row_0"], **EXACT)


@pytest.mark.parametrize("name", NAMES)
def test_training_loss_and_gradients_match_lerobot(smolvla_dirs, name):
    """One batch, fine-tuning everything LeRobot lets train: the loss for given noise and time,
    every gradient, the loss with noise and time drawn after torch.manual_seed(5), and which
    parameters train under the CI's flags and under the defaults."""
    recorded, meta = expected(name)
    loaded = load(smolvla_dirs[name])
    policy = loaded.policy
    batch = {k.removeprefix("train.batch."): v for k, v in recorded.items() if k.startswith("train.batch.")}
    policy.train()
    loss, _ = policy.forward(fresh(batch), noise=recorded["train.noise"], time=recorded["train.time"])
    loss.backward()
    torch.testing.assert_close(loss.detach(), recorded["train.loss"], **EXACT)
    compared = 0
    for param_name, param in policy.named_parameters():
        if param.grad is None:
            continue
        compared += 1
        grad = param.grad.flatten()
        key = f"grad.{param_name}"
        if key in recorded:
            torch.testing.assert_close(param.grad, recorded[key], **GRADIENTS)
            continue
        torch.testing.assert_close(grad[:64], recorded[f"{key}.head"], **GRADIENTS)
        torch.testing.assert_close(grad[-64:], recorded[f"{key}.tail"], **GRADIENTS)
        torch.testing.assert_close(grad.double().sum(), recorded[f"{key}.sum"], **GRADIENTS)
        torch.testing.assert_close(grad.double().norm(), recorded[f"{key}.norm"], **GRADIENTS)
    trainable = meta["trainable"]["freeze_vision_encoder=false,train_expert_only=false"]
    assert compared == len(trainable)
    assert sorted(n for n, p in policy.named_parameters() if p.requires_grad) == trainable

    torch.manual_seed(5)
    seeded, _ = policy.forward(fresh(batch))
    torch.testing.assert_close(seeded.detach(), recorded["train.loss_seed_5"], **EXACT)

    defaults = load(smolvla_dirs[name], freeze_vision_encoder=True, train_expert_only=True).policy
    assert (
        sorted(n for n, p in defaults.named_parameters() if p.requires_grad) == meta["trainable"]["defaults"]
    )


def test_per_sample_loss_is_each_samples_loss_over_its_real_steps(smolvla_dirs):
    """`forward(..., reduction="none")`, LeRobot's per-sample form (for RA-BC weighting): row i's
    value is the loss of row i alone, padded steps left out; the info has LeRobot's keys."""
    recorded, _ = expected("smolvla")
    policy = load(smolvla_dirs["smolvla"]).policy
    batch = {k.removeprefix("train.batch."): v for k, v in recorded.items() if k.startswith("train.batch.")}
    batch["action_is_pad"] = torch.zeros_like(batch["action_is_pad"])
    batch["action_is_pad"][1, -3:] = True
    noise, time = recorded["train.noise"], recorded["train.time"]
    with torch.no_grad():
        per_sample, info = policy.forward(fresh(batch), noise=noise, time=time, reduction="none")
        alone = [
            policy.forward({k: v[i : i + 1] for k, v in batch.items()}, noise[i : i + 1], time[i : i + 1])[0]
            for i in range(2)
        ]
    torch.testing.assert_close(per_sample, torch.stack(alone), **EXACT)
    assert set(info) == {
        "losses_after_forward",
        "losses_after_in_ep_bound",
        "losses_after_rm_padding",
        "loss",
    }
    assert info["loss"] == pytest.approx(float(per_sample.mean()))


def test_load_vlm_weights_holds_lerobots_bfloat16_layout(smolvla_dirs):
    """With load_vlm_weights=true LeRobot runs the VLM and the expert in bfloat16 (not the
    expert's cross-attention k/v, nor SmolVLA's projections): same dtypes, same chunk."""
    recorded, meta = expected("smolvla")
    loaded = load(smolvla_dirs["smolvla"], load_vlm_weights=True)
    dtypes = [t.dtype == torch.bfloat16 for _, t in sorted(loaded.policy.state_dict().items())]
    assert dtypes == recorded["bf16.dtypes"].tolist() and any(dtypes) and not all(dtypes)
    batch = loaded.pre(raw_step(recorded, meta, 0))
    chunk = loaded.policy.predict_action_chunk(batch, noise=recorded["noise"].clone())
    torch.testing.assert_close(chunk, recorded["bf16.chunk.normalized"], **EXACT)


def test_rows_refill_together_in_one_prefix_pass_and_restart_alone(smolvla_dirs, monkeypatch):
    """The VLM prefix runs once per chunk for all rows that need one; a row reset mid-chunk
    restarts alone and then acts exactly like a fresh policy seeing the same inputs."""
    recorded, meta = expected("smolvla")
    loaded, alone = load(smolvla_dirs["smolvla"]), load(smolvla_dirs["smolvla"])
    calls = []
    vlm = loaded.policy.model.vlm_with_expert
    original = vlm.fill_prefix_cache
    monkeypatch.setattr(vlm, "fill_prefix_cache", lambda *a: calls.append(a[0].shape[0]) or original(*a))

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


def test_lerobot_eval_parses_the_checkpoint_with_the_seeds_flags(smolvla_dirs):
    argv = [
        f"--policy.path={smolvla_dirs['smolvla']}",
        "--env.type=metaworld",
        '--rename_map={"observation.image": "observation.images.camera1"}',
        "--policy.empty_cameras=2",
        "--policy.n_action_steps=10",
        "--policy.device=cpu",
        "--policy.use_amp=false",
    ]
    cfg = parse_config(EvalPipelineConfig, argv)
    policy = cfg.policy
    assert isinstance(policy, SmolVLAConfig) and (policy.n_action_steps, policy.empty_cameras) == (10, 2)
    assert make_policy(policy).config.n_action_steps == 10
    # The blank cameras are declared when the policy is built, as LeRobot's validate_features does.
    assert [k for k in policy.image_features if "empty_camera" in k] == [
        "observation.images.empty_camera_0",
        "observation.images.empty_camera_1",
    ]
    # Meta-World's 4-d state would not fit LIBERO's 8-d checkpoint: the state must be present,
    # its length is the policy's business (padded to max_state_dim), as in LeRobot.
    with pytest.raises(CliError, match="map at least one"):
        parse_config(EvalPipelineConfig, argv[:2] + ["--policy.device=cpu"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--policy.n_action_steps=11"],
            "--policy.n_action_steps=11: must be between 1 and --policy.chunk_size=10",
        ),
        (["--policy.use_cache=false"], "--policy.use_cache=false: SmolVLA samples with the prefix"),
        (
            ["--policy.attention_mode=joint"],
            "--policy.attention_mode='joint': must be one of cross_attn, self_attn",
        ),
        (
            ["--policy.pad_language_to=short"],
            "--policy.pad_language_to='short': must be one of longest, max_length",
        ),
        (
            ["--policy.num_expert_layers=2"],
            "--policy.self_attn_every_n_layers=2: with --policy.num_expert_layers=2",
        ),
        (
            ["--policy.num_expert_layers=3"],
            "--policy.num_expert_layers=3: must divide --policy.num_vlm_layers=4",
        ),
    ],
)
def test_bad_settings_fail_in_one_line_naming_the_flag(smolvla_dirs, flags, message):
    argv = [
        f"--policy.path={smolvla_dirs['smolvla']}",
        "--env.type=libero",
        "--env.task=libero_spatial",
        *flags,
    ]
    with pytest.raises(CliError) as error:
        parse_config(EvalPipelineConfig, argv)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_missing_vlm_repo_offline_is_one_line_naming_it(smolvla_dirs, tmp_path, monkeypatch):
    """A real checkpoint names SmolVLM2 on the hub: offline and uncached, the error says which
    repo to fetch (LeRobot would need it too: it reads the VLM's config from there)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    directory = smolvla_dirs["smolvla"]
    cfg = dataclasses.replace(
        read_config(directory), vlm_model_name="HuggingFaceTB/SmolVLM2-500M-Video-Instruct"
    )
    with pytest.raises(CheckpointError) as error:
        get_policy_class("smolvla").from_pretrained(directory, config=cfg)
    message = str(error.value)
    assert message.startswith(
        "--policy.vlm_model_name=HuggingFaceTB/SmolVLM2-500M-Video-Instruct: HF_HUB_OFFLINE"
    )
    assert "not in the local cache" in message and "\n" not in message


def test_checkpoint_weights_that_do_not_fit_fail_in_one_line(smolvla_dirs, tmp_path):
    from safetensors.torch import load_file, save_file

    broken = materialize("smolvla", tmp_path / "broken")
    state = load_file(broken / "model.safetensors")
    del state["model.state_proj.bias"]
    save_file(state, broken / "model.safetensors")
    with pytest.raises(
        CheckpointError,
        match=r"model.safetensors does not fit the config: 1 missing key\(s\) \(e.g. model.state_proj.bias\)",
    ):
        load(broken)


def test_training_from_scratch_with_load_vlm_weights_starts_from_the_vlm(smolvla_dirs):
    """`--policy.type=smolvla --policy.load_vlm_weights=true`: the VLM's pretrained weights
    (its first num_vlm_layers text layers), in LeRobot's bfloat16 layout."""
    from safetensors.torch import load_file

    from tests.policies.smolvla_checkpoints import VLM_DIR

    cfg = dataclasses.replace(
        read_config(smolvla_dirs["smolvla"]), load_vlm_weights=True, pretrained_path=None
    )
    policy = get_policy_class("smolvla")(cfg)
    vlm_state = load_file(VLM_DIR / "model.safetensors")
    vlm = policy.model.vlm_with_expert.vlm
    for name in (
        "model.text_model.layers.3.mlp.up_proj.weight",
        "model.vision_model.embeddings.patch_embedding.weight",
    ):
        torch.testing.assert_close(vlm.state_dict()[name], vlm_state[name].to(torch.bfloat16), atol=0, rtol=0)
    assert "model.text_model.layers.4.mlp.up_proj.weight" not in vlm.state_dict()


def test_bfloat16_autocast_masks_in_float32_and_stays_near_float32(smolvla_dirs):
    """`--policy.use_amp=true` runs the policy under autocast (bfloat16 on the CPU, float16 on
    CUDA), where the attention scores come out of a half-precision product; masking them with
    float32's lowest value overflowed it: an error at the first chunk on CUDA (seen on an H200
    under bfloat16 autocast), NaN actions on the CPU. As LeRobot does, the scores are cast to
    float32 before the mask."""
    recorded, meta = expected("smolvla")
    loaded = load(smolvla_dirs["smolvla"])
    batch = loaded.pre(raw_step(recorded, meta, 0))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        chunk = loaded.policy.predict_action_chunk(fresh(batch), noise=recorded["noise"].clone())
    assert chunk.dtype == torch.float32 and torch.isfinite(chunk).all()
    torch.testing.assert_close(chunk, recorded["chunk.normalized"], atol=0.1, rtol=0)


def test_rows_kept_aside_continue_as_in_one_batch(smolvla_dirs):
    """`save_rows`/`restore_rows` (a policy server's clients, `--eval.row_groups`): rows run
    one at a time, in alternating order, with their queued chunk and noise generator kept
    aside between calls, act exactly as the two rows of one batch."""
    recorded, meta = expected("smolvla")
    together, apart = load(smolvla_dirs["smolvla"]), load(smolvla_dirs["smolvla"])
    together.policy.reset(env_ids=[0, 1], seeds=[3, 4])
    steps = range(meta["n_steps"])
    both = [
        together.post(together.policy.select_action(together.pre(raw_step(recorded, meta, i)))) for i in steps
    ]
    states: dict[int, object] = {}
    alone: dict[int, list[torch.Tensor]] = {0: [], 1: []}
    for i in steps:
        for row in (1, 0) if i % 2 else (0, 1):
            apart.policy.restore_rows([states.get(row)])
            if i == 0:
                apart.policy.reset(env_ids=[0], seeds=[3 + row])
            batch = apart.pre(raw_step(recorded, meta, i, slice(row, row + 1)))
            alone[row].append(apart.post(apart.policy.select_action(batch))[0])
            [states[row]] = apart.policy.save_rows([0])
    for row in (0, 1):
        torch.testing.assert_close(torch.stack(alone[row]), torch.stack(both)[:, row], **EXACT)


@pytest.mark.slow
def test_served_smolvla_acts_as_local_and_is_asked_once_per_chunk(smolvla_dirs):
    """lerobot-serve-policy runs SmolVLA (its rows kept aside between requests): through
    `--policy.type=websocket`, the same actions as the local policy, with one request per
    chunk (n_action_steps 5 over the recording's steps)."""
    from lerobot.policies.websocket.configuration_websocket import WebsocketConfig
    from lerobot.policies.websocket.modeling_websocket import WebsocketPolicy
    from tests.remote import running_server

    recorded, meta = expected("smolvla")
    local, served = load(smolvla_dirs["smolvla"]), load(smolvla_dirs["smolvla"])
    steps = range(meta["n_steps"])
    local.policy.reset(env_ids=[0, 1], seeds=[3, 4])
    expected_actions = [
        local.post(local.policy.select_action(local.pre(raw_step(recorded, meta, i)))) for i in steps
    ]
    calls = []
    select = served.policy.select_action
    served.policy.select_action = lambda batch: calls.append(1) or select(batch)
    with running_server(served.policy, preprocessor=served.pre, postprocessor=served.post) as server:
        client = WebsocketPolicy(WebsocketConfig(port=server.port))
        client.reset(env_ids=[0, 1], seeds=[3, 4])
        actions = [client.select_action(raw_step(recorded, meta, i)) for i in steps]
        client.close()
    torch.testing.assert_close(torch.stack(actions), torch.stack(expected_actions), **EXACT)
    assert len(calls) == -(-meta["n_steps"] // served.cfg.n_action_steps)
