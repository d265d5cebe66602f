"""`--policy.path`: local directories, the hub cache, both statistics layouts, and bad input."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from lerobot.configs.checkpoint import CheckpointError
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import CliError, parse_config
from lerobot.policies.act.configuration_act import ACTConfig
from lerobot.policies.factory import make_policy, make_pre_post_processors
from lerobot.scripts.lerobot_eval import main
from lerobot.utils.device_utils import auto_device
from tests.policies.checkpoints import ENV_FLAGS, FIXTURES, expected, load, raw_step, write_legacy_layout
from tests.policies.smolvla_checkpoints import materialize as materialize_smolvla

REPO_ID = "lerobot-tests/act-tiny"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
META_WORLD_96 = ["--env.type=metaworld", *ENV_FLAGS["act"]]


def test_config_comes_from_the_checkpoint_and_flags_override_it(checkpoints):
    cfg = parse_config(
        EvalPipelineConfig,
        [
            *META_WORLD_96,
            f"--policy.path={checkpoints['act']}",
            "--policy.n_action_steps=2",
            "--policy.empty_cameras=1",
        ],
    )
    assert isinstance(cfg.policy, ACTConfig)
    assert (cfg.policy.chunk_size, cfg.policy.dim_model, cfg.policy.n_action_steps) == (10, 32, 2)
    assert cfg.policy.empty_cameras == 1
    assert cfg.policy.pretrained_path == str(checkpoints["act"].resolve())
    assert cfg.job_name == "metaworld_act"


def test_device_is_this_machines_best_unless_given(checkpoints):
    """The checkpoint was saved with device "cpu"; evaluation picks cuda, else mps, else cpu."""
    cfg = parse_config(EvalPipelineConfig, [*META_WORLD_96, f"--policy.path={checkpoints['act']}"])
    assert cfg.policy.device is None
    policy = make_policy(cfg.policy, env_cfg=cfg.env)
    assert next(policy.parameters()).device.type == auto_device()
    assert load(checkpoints["act"], "--policy.device=cpu").cfg.policy.device == "cpu"


@pytest.mark.parametrize("name", ["act", "diffusion"])
def test_older_layout_with_statistics_in_model_safetensors_acts_the_same(checkpoints, tmp_path, name):
    legacy = write_legacy_layout(checkpoints[name], tmp_path / name)
    assert not (legacy / "policy_preprocessor.json").exists()
    recorded = expected(name)
    current, old = load(checkpoints[name], env_flags=ENV_FLAGS[name]), load(legacy, env_flags=ENV_FLAGS[name])
    for loaded in (current, old):
        loaded.policy.reset(env_ids=[0, 1], seeds=[3, 4])
    for step in range(3):
        raw = raw_step(recorded, step)
        torch.testing.assert_close(old.act(raw), current.act(raw), atol=1e-6, rtol=0)


def populate_hub_cache(cache: Path, repo_id: str, checkpoint: Path) -> None:
    """The layout huggingface_hub writes: blobs by hash, a snapshot of symlinks, refs/main."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for path in checkpoint.iterdir():
        blob = repo / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
        shutil.copy(path, blob)
        (snapshot / path.name).symlink_to(os.path.relpath(blob, snapshot))


@pytest.mark.parametrize("cache_variable", ["HF_HUB_CACHE", "HF_HOME"])
@pytest.mark.parametrize("revision", [None, COMMIT])
def test_repo_id_loads_offline_from_the_hub_cache(
    checkpoints, tmp_path, monkeypatch, cache_variable, revision
):
    cache = tmp_path / "hub"
    populate_hub_cache(cache, REPO_ID, checkpoints["act"])
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv(cache_variable, str(cache if cache_variable == "HF_HUB_CACHE" else tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    flags = [f"--policy.revision={revision}"] if revision else []
    loaded = load(REPO_ID, *flags)
    assert (
        Path(loaded.cfg.policy.pretrained_path)
        == cache / f"models--{REPO_ID.replace('/', '--')}" / "snapshots" / COMMIT
    )
    assert loaded.cfg.policy.pretrained_revision == revision
    recorded = expected("act")
    chunk = loaded.policy.predict_action_chunk(loaded.preprocessor(raw_step(recorded, 0)))
    torch.testing.assert_close(chunk, recorded["chunk.normalized"], atol=1e-5, rtol=0)


def test_repo_id_offline_and_not_cached_fails_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = main(
        [*META_WORLD_96, "--policy.path=lerobot-tests/not-cached", f"--output_dir={tmp_path / 'out'}"]
    )
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert line.startswith(
        "--policy.path=lerobot-tests/not-cached: HF_HUB_OFFLINE is set and the checkpoint is not in the local cache"
    )


def test_empty_cameras_feed_black_frames_for_cameras_the_env_lacks(checkpoints):
    """The env's only camera is renamed away: without --policy.empty_cameras that is an error,
    with it the policy sees a black frame, normalised like any image."""
    rename = ['--rename_map={"observation.image": "observation.images.wrist"}']
    with pytest.raises(CliError, match="--rename_map=.*--policy.empty_cameras=N"):
        load(checkpoints["act"], *rename)
    loaded = load(checkpoints["act"], *rename, "--policy.empty_cameras=1")
    recorded = expected("act")
    state_only = {"observation.state": raw_step(recorded, 0)["observation.state"]}
    blank = {**state_only, "observation.image": torch.zeros(2, 3, 96, 96)}
    torch.testing.assert_close(
        loaded.preprocessor(state_only)["observation.image"], loaded.preprocessor(blank)["observation.image"]
    )
    assert loaded.act(state_only).shape == (2, 4)


def test_weights_that_do_not_fit_the_config_are_refused_in_one_line(checkpoints, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(checkpoints["act"], broken)
    state = load_file(broken / "model.safetensors")
    del state["model.action_head.bias"]
    state["model.extra.weight"] = torch.zeros(1)
    save_file(state, broken / "model.safetensors")
    with pytest.raises(CheckpointError) as missing:
        load(broken)
    assert (
        "1 missing key(s) (e.g. model.action_head.bias); 1 unexpected key(s) (e.g. model.extra.weight)"
        in str(missing.value)
    )
    config = json.loads((checkpoints["act"] / "config.json").read_text())
    shutil.copy(checkpoints["act"] / "model.safetensors", broken / "model.safetensors")
    (broken / "config.json").write_text(json.dumps({**config, "chunk_size": 12, "n_action_steps": 5}))
    with pytest.raises(
        CheckpointError,
        match=r"have other shapes than the config implies, e.g. model.decoder_pos_embed.weight \[10, 32\] vs \[12, 32\]",
    ):
        load(broken)
    assert "\n" not in str(missing.value)


def bad_checkpoints(root: Path) -> dict[str, tuple[list[str], str]]:
    """Command lines that must fail in one line at parse time, with the text they must show."""
    config = json.loads((FIXTURES / "act" / "config.json").read_text())

    def checkpoint(
        name: str, config_text: str | None, files: tuple[str, ...] = ("model.safetensors",)
    ) -> str:
        directory = root / name
        directory.mkdir()
        if config_text is not None:
            (directory / "config.json").write_text(config_text)
        for filename in files:
            (directory / filename).write_bytes(b"")
        return str(directory)

    a_file = root / "a_file.json"
    a_file.write_text("{}")
    act = json.dumps(config)
    good = checkpoint("good", act)
    return {
        "no such dir": ([f"--policy.path={root}/no/such/dir"], "no such directory (and not a hub repo id"),
        "a file": ([f"--policy.path={a_file}"], "is a file; pass the checkpoint directory"),
        "no config": ([f"--policy.path={checkpoint('empty', None)}"], "no config.json in"),
        "bad json": (
            [f"--policy.path={checkpoint('badjson', '{type: act')}"],
            "config.json is not valid JSON",
        ),
        "no type": ([f"--policy.path={checkpoint('notype', '{}')}"], "config.json has no 'type' field"),
        "field type": (
            [f"--policy.path={checkpoint('fieldtype', json.dumps({**config, 'chunk_size': 'ten'}))}"],
            "--policy.chunk_size=ten: expected a value of type int (the value comes from config.json of --policy.path=",
        ),
        "pi0_fast": (
            [f"--policy.path={checkpoint('pi0_fast', json.dumps({'type': 'pi0_fast'}))}"],
            "policy type 'pi0_fast' is not yet supported; this build loads act, diffusion, pi0, pi05, smolvla "
            "(not yet: pi0_fast,",
        ),
        "smolvla override": (
            [f"--policy.path={materialize_smolvla('smolvla', root / 'smolvla')}", "--policy.use_cache=false"],
            "--policy.use_cache=false: SmolVLA samples with the prefix",
        ),
        "unknown type": (
            [f"--policy.path={checkpoint('foo', json.dumps({'type': 'foo'}))}"],
            "policy type 'foo' is unknown",
        ),
        "pre-0.1 config": (
            [f"--policy.path={checkpoint('old', json.dumps({'type': 'act', 'input_shapes': {}}))}"],
            "declares no 'action' in output_features",
        ),
        "pickle only": (
            [f"--policy.path={checkpoint('pickle', act, ('pytorch_model.bin',))}"],
            "no model.safetensors in",
        ),
        "type conflict": ([f"--policy.path={good}", "--policy.type=diffusion"], "is of type 'act'"),
        "type without path": (
            ["--policy.type=act"],
            "--policy.type=act: needs trained weights; pass --policy.path=",
        ),
        "bad override": (
            [f"--policy.path={good}", "--policy.n_action_steps=50"],
            "--policy.n_action_steps=50: must be between 1 and --policy.chunk_size=10",
        ),
        "revision alone": (
            ["--policy.type=random", "--policy.revision=v1"],
            "--policy.revision=v1: only valid with --policy.path",
        ),
        "no camera": (
            [f"--policy.path={good}", "--env.obs_type=state"],
            "the checkpoint reads camera images (observation.image) and the env renders none; "
            "choose an --env.obs_type with images",
        ),
        "image size": (
            [f"--policy.path={good}"],
            "reads 'observation.image' with shape [3, 96, 96], the env gives [3, 480, 480]; render at its "
            "size with --env.observation_height=96 --env.observation_width=96",
        ),
        "action size": (
            [
                f"--policy.path={checkpoint('act7', json.dumps({**config, 'output_features': {'action': {'type': 'ACTION', 'shape': [7]}}}))}"
            ],
            "the checkpoint's actions have 7 values, the env takes 4; choose env settings",
        ),
        "state size": (
            [f"--policy.path={good}", "--env.obs_type=state", "--policy.empty_cameras=1"],
            "reads 'observation.state' with shape [4], the env gives [39]",
        ),
    }


def test_bad_checkpoints_fail_in_one_line_before_any_simulator(tmp_path):
    """Each case exits 2 with one line naming the flag; Meta-World is never imported, nor
    transformers (SmolVLA's config parses without it)."""
    cases = bad_checkpoints(tmp_path)
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from lerobot.scripts.lerobot_eval import main
        cases = json.loads({json.dumps(json.dumps({k: v[0] for k, v in cases.items()}))})
        results = {{}}
        for name, argv in cases.items():
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["--env.type=metaworld", *argv, "--output_dir={tmp_path}/never"])
            results[name] = [code, err.getvalue()]
        results["_started"] = [
            "metaworld" in sys.modules or "mujoco" in sys.modules, "transformers" in sys.modules
        ]
        print(json.dumps(results))
        """
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True, env=env
    )
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results.pop("_started") == [False, False]
    for name, (_, text) in cases.items():
        code, stderr = results[name]
        lines = stderr.strip().splitlines()
        assert code == 2, (name, stderr)
        assert len(lines) == 1, (name, stderr)
        assert text in lines[0], (name, lines[0])
    assert not (tmp_path / "never").exists()


def test_missing_processor_statistics_fail_in_one_line_before_any_output(checkpoints, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(checkpoints["act"], broken)
    (broken / "policy_preprocessor_step_3_normalizer_processor.safetensors").unlink()
    code = main([*META_WORLD_96, f"--policy.path={broken}", f"--output_dir={tmp_path / 'out'}"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert (
        "policy_preprocessor_step_3_normalizer_processor.safetensors (named in policy_preprocessor.json) is missing"
        in line
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "flags"),
    [("act", []), ("diffusion", ["--policy.num_inference_steps=10"]), ("diffusion_ddim", [])],
)
def test_lerobot_eval_runs_a_checkpoint_on_meta_world(checkpoints, tmp_path, name, flags):
    out = tmp_path / "out"
    argv = [
        f"--policy.path={checkpoints[name]}",
        "--env.type=metaworld",
        "--env.task=reach-v3",
        *ENV_FLAGS[name],
        "--env.episode_length=5",
        "--eval.n_episodes=1",
        "--eval.max_episodes_rendered=0",
        "--policy.device=cpu",
        *flags,
        f"--output_dir={out}",
    ]
    code = main(argv)
    assert code == 0
    info = json.loads((out / "eval_info.json").read_text())
    [episode] = info["per_episode"]
    assert episode["n_steps"] == 5 and episode["sum_reward"] > 0
    if name == "diffusion":  # sampling noise is seeded per episode: a rerun gives the same episode
        assert main([*argv[:-1], f"--output_dir={tmp_path / 'again'}"]) == 0
        [again] = json.loads((tmp_path / "again" / "eval_info.json").read_text())["per_episode"]
        assert again["sum_reward"] == episode["sum_reward"]


def test_builtin_policies_get_processors_that_only_place_tensors():
    """LeRobot code calls the processors of any policy: for a built-in they change no value."""
    cfg = parse_config(
        EvalPipelineConfig, ["--env.type=metaworld", "--policy.type=random", "--policy.device=cpu"]
    )
    pre, post = make_pre_post_processors(cfg.policy)
    batch = {"observation.state": torch.arange(4.0).reshape(1, 4), "task": ["push"]}
    out = pre(batch)
    assert out["task"] == ["push"] and torch.equal(out["observation.state"], batch["observation.state"])
    action = torch.ones(1, 4)
    assert torch.equal(post(action), action) and post(action).device.type == "cpu"


def broken_statistics(checkpoints, tmp_path, state_file: str, content: bytes | None) -> Path:
    """The ACT checkpoint with its normaliser statistics replaced by `content` (at `state_file`)."""
    directory = tmp_path / "act"
    shutil.copytree(checkpoints["act"], directory)
    pipeline_path = directory / "policy_preprocessor.json"
    pipeline = json.loads(pipeline_path.read_text())
    step = next(s for s in pipeline["steps"] if s.get("state_file"))
    step["state_file"] = state_file
    pipeline_path.write_text(json.dumps(pipeline))
    if content is not None:
        (directory / state_file).write_bytes(content)
    return directory


@pytest.mark.parametrize(
    ("state_file", "content", "message"),
    [
        (
            "stats.safetensors",
            b"not a safetensors file",
            "stats.safetensors (named in policy_preprocessor.json) is not a readable safetensors file",
        ),
        (
            "../outside.safetensors",
            None,
            "../outside.safetensors (named in policy_preprocessor.json) lies outside the pipeline's directory",
        ),
    ],
)
def test_bad_statistics_files_fail_in_one_line_before_any_output(
    checkpoints, tmp_path, capsys, state_file, content, message
):
    from lerobot.scripts.lerobot_eval import main

    directory = broken_statistics(checkpoints, tmp_path, state_file, content)
    if state_file.startswith(".."):
        shutil.copy(
            next(directory.glob("policy_preprocessor_step_*.safetensors")), tmp_path / "outside.safetensors"
        )
    out = tmp_path / "never"
    code = main(
        [f"--policy.path={directory}", "--env.type=metaworld", *ENV_FLAGS["act"], f"--output_dir={out}"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and message in err[-1] and not out.exists()
