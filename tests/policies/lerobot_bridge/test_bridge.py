"""`--policy.type=lerobot_bridge`: LeRobot 0.6.1 itself runs the checkpoint in a child process.

The checkpoints are the fixtures LeRobot 0.6.1 saved (tests/fixtures/policies), plus a tiny
random VQ-BeT that LeRobot saves at test time: a type this build does not implement.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import CliError, parse_config
from lerobot.policies.factory import make_policy, make_pre_post_processors
from lerobot.policies.lerobot_bridge import child
from lerobot.scripts.lerobot_eval import main as lerobot_eval
from lerobot.utils.errors import ConfigError, HarnessError
from tests.policies.checkpoints import ENV_FLAGS, Loaded, expected, load, raw_step
from tests.remote import running_server

TOLERANCE = {"atol": 1e-5, "rtol": 0}
ACT_STEPS = 7  # the ACT fixture's n_action_steps=5: a second chunk at step 5
DIFFUSION_STEPS = 10  # the Diffusion fixtures' n_action_steps=8: a second chunk at step 8


def load_bridged(path: Path, python: str, *flags: str, env_flags=ENV_FLAGS["act"]) -> Loaded:
    argv = [
        "--env.type=metaworld",
        *env_flags,
        "--policy.type=lerobot_bridge",
        f"--policy.path={path}",
        f"--policy.python={python}",
        "--policy.device=cpu",
        *flags,
    ]
    cfg = parse_config(EvalPipelineConfig, argv)
    return Loaded(cfg, make_policy(cfg.policy, env_cfg=cfg.env), *make_pre_post_processors(cfg.policy))


# -- frames (no LeRobot needed) ------------------------------------------------------------------


def test_frames_carry_arrays_as_raw_bytes_and_a_json_header():
    arrays = {
        "observation.images.top": np.arange(2 * 3 * 4 * 5, dtype=np.uint8).reshape(2, 3, 4, 5),
        "observation.state": np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)[:, ::2],  # not contiguous
        "empty": np.zeros((0, 4), dtype=np.float64),
    }
    frame = child.encode_frame({"op": "act", "task": ["pick", "place"]}, arrays)
    stream = iter([frame])
    buffer = bytearray(next(stream))

    def read_exact(n: int) -> bytes:
        if len(buffer) < n:
            raise EOFError
        data = bytes(buffer[:n])
        del buffer[:n]
        return data

    header, decoded = child.decode_frame(read_exact)

    assert header == {"op": "act", "task": ["pick", "place"]}
    assert list(decoded) == list(arrays)
    for key, value in arrays.items():
        assert decoded[key].dtype == value.dtype
        np.testing.assert_array_equal(decoded[key], value)
    assert not buffer  # exactly one frame's bytes were read
    with pytest.raises(EOFError):
        child.decode_frame(read_exact)


# -- one-line errors before anything starts (no LeRobot needed) ----------------------------------


def bridge_argv(checkpoints, *flags: str) -> list[str]:
    return [
        "--env.type=metaworld",
        *ENV_FLAGS["act"],
        "--policy.type=lerobot_bridge",
        f"--policy.path={checkpoints['act']}",
        *flags,
    ]


def config_error(argv: list[str]) -> str:
    with pytest.raises((CliError, ConfigError)) as raised:
        parse_config(EvalPipelineConfig, argv)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_interpreter_problems_are_one_line_errors(checkpoints, fake_lerobot, monkeypatch, tmp_path):
    monkeypatch.delenv("LEROBOT_BRIDGE_PYTHON", raising=False)
    assert "needs --policy.python=" in config_error(bridge_argv(checkpoints))
    assert config_error(bridge_argv(checkpoints, f"--policy.python={tmp_path / 'nope'}")).endswith(
        "no such executable"
    )
    no_lerobot = fake_lerobot(None)
    assert "cannot import lerobot" in config_error(bridge_argv(checkpoints, f"--policy.python={no_lerobot}"))
    old = fake_lerobot("0.4.2")
    assert "has LeRobot 0.4.2; the bridge needs LeRobot 0.5 or later" in config_error(
        bridge_argv(checkpoints, f"--policy.python={old}")
    )
    ours = Path(os.sys.executable)
    assert "imports this harness as lerobot" in config_error(
        bridge_argv(checkpoints, f"--policy.python={ours}")
    )


def test_the_environment_variable_names_the_interpreter(checkpoints, fake_lerobot, monkeypatch):
    monkeypatch.setenv("LEROBOT_BRIDGE_PYTHON", fake_lerobot("0.6.1"))
    cfg = parse_config(EvalPipelineConfig, bridge_argv(checkpoints))
    assert cfg.policy.python == fake_lerobot("0.6.1")
    assert cfg.policy.lerobot_version == "0.6.1"  # recorded in eval_info.json's config
    assert cfg.policy.checkpoint_type == "act"


def test_inputs_the_env_lacks_are_named(checkpoints, fake_lerobot):
    message = config_error(
        bridge_argv(checkpoints, f"--policy.python={fake_lerobot('0.6.1')}", "--env.obs_type=state")
    )
    assert "the checkpoint reads observation.image, which --env.type=metaworld does not provide" in message


def test_any_policy_type_is_accepted_and_native_loading_points_to_the_bridge(tmp_path, fake_lerobot):
    checkpoint = tmp_path / "vqbet"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps({"type": "vqbet", "input_features": {}}))
    (checkpoint / "model.safetensors").write_bytes(b"")
    argv = ["--env.type=metaworld", f"--policy.path={checkpoint}"]
    assert "--policy.type=lerobot_bridge --policy.python=" in config_error(argv)
    cfg = parse_config(
        EvalPipelineConfig,
        [*argv, "--policy.type=lerobot_bridge", f"--policy.python={fake_lerobot('0.6.1')}"],
    )
    assert (cfg.policy.type, cfg.policy.checkpoint_type) == ("lerobot_bridge", "vqbet")


# -- LeRobot 0.6.1 in the child ---------------------------------------------------------------


def test_bridged_act_acts_as_lerobot_and_as_ours(checkpoints, lerobot_python):
    """Two rows in lockstep: LeRobot's recorded actions; our native ACT gives the same."""
    recorded = expected("act")
    bridged, native = load_bridged(checkpoints["act"], lerobot_python), load(checkpoints["act"])
    try:
        assert bridged.policy.hello["lerobot_version"] == "0.6.1"
        native.policy.reset(env_ids=[0, 1], seeds=[0, 1])
        bridged.policy.reset(env_ids=[0, 1], seeds=[0, 1])
        ours, theirs, reading = [], [], []
        for step in range(ACT_STEPS):
            reading.append(bridged.policy.rows_reading_images(2))
            theirs.append(bridged.act(raw_step(recorded, step)))
            ours.append(native.act(raw_step(recorded, step)))
        torch.testing.assert_close(torch.stack(theirs), recorded["select_action"], **TOLERANCE)
        torch.testing.assert_close(torch.stack(theirs), torch.stack(ours), **TOLERANCE)
        # Rows read observations only when their chunk runs out: at steps 0 and 5.
        assert [step for step, rows in enumerate(reading) if rows] == [0, 5]
    finally:
        bridged.policy.close()


def test_bridged_rows_restart_on_their_own(checkpoints, lerobot_python):
    """Row 1 restarts at step 3: its actions are those of a fresh run from that step on."""
    recorded = expected("act")
    bridged = load_bridged(checkpoints["act"], lerobot_python)
    fresh = load(checkpoints["act"])
    try:
        bridged.policy.reset(env_ids=[0, 1], seeds=[0, 1])
        for step in range(3):
            bridged.act(raw_step(recorded, step))
        bridged.policy.reset(env_ids=[1], seeds=[5])
        assert bridged.policy.rows_reading_images(2) == [1]
        fresh.policy.reset(env_ids=[0], seeds=[5])
        for step in range(3, ACT_STEPS):
            row1 = bridged.act(raw_step(recorded, step))[1:]
            torch.testing.assert_close(
                row1, fresh.act(raw_step(recorded, step, rows=slice(1, 2))), **TOLERANCE
            )
    finally:
        bridged.policy.close()


@pytest.mark.parametrize("name", ["diffusion", "diffusion_ddim"])
def test_bridged_diffusion_draws_each_episodes_noise_from_its_seed(checkpoints, lerobot_python, name):
    """Each row's noise comes from torch.manual_seed(episode seed), as our native rows' do."""
    recorded = expected(name)
    bridged = load_bridged(checkpoints[name], lerobot_python, env_flags=ENV_FLAGS[name])
    native = load(checkpoints[name], env_flags=ENV_FLAGS[name])
    try:
        native.policy.reset(env_ids=[0, 1], seeds=[99, 7])
        bridged.policy.reset(env_ids=[0, 1], seeds=[99, 7])
        theirs = torch.stack([bridged.act(raw_step(recorded, step)) for step in range(DIFFUSION_STEPS)])
        ours = torch.stack([native.act(raw_step(recorded, step)) for step in range(DIFFUSION_STEPS)])
        torch.testing.assert_close(theirs, ours, **TOLERANCE)
        torch.testing.assert_close(theirs[:, :1], recorded["select_action.single_row"], **TOLERANCE)
    finally:
        bridged.policy.close()


def test_a_child_that_dies_is_our_failure_and_comes_back(checkpoints, lerobot_python):
    recorded = expected("act")
    bridged = load_bridged(checkpoints["act"], lerobot_python)
    try:
        bridged.policy.reset(env_ids=[0, 1], seeds=[0, 1])
        first = bridged.act(raw_step(recorded, 0))
        os.kill(bridged.policy._child.pid, signal.SIGKILL)
        with pytest.raises(HarnessError, match="the LeRobot bridge process exited"):
            bridged.act(raw_step(recorded, 1))
        bridged.policy.reset(env_ids=[0, 1], seeds=[0, 1])  # the rollout restarts those episodes
        torch.testing.assert_close(bridged.act(raw_step(recorded, 0)), first, **TOLERANCE)
    finally:
        bridged.policy.close()


def test_a_checkpoint_lerobot_cannot_load_fails_in_one_line(checkpoints, lerobot_python, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    config = json.loads((checkpoints["act"] / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "type": "no_such_policy"}))
    (broken / "model.safetensors").write_bytes((checkpoints["act"] / "model.safetensors").read_bytes())
    with pytest.raises(ConfigError) as raised:
        load_bridged(broken, lerobot_python)
    message = str(raised.value)
    assert "\n" not in message and "no_such_policy" in message


def episode_outcomes(out: Path) -> list[tuple]:
    info = json.loads((out / "eval_info.json").read_text())
    return [
        (e["episode_index"], e["seed"], e["success"], e["sum_reward"], e["n_steps"])
        for e in info["per_episode"]
    ]


EVAL_FLAGS = (
    "--env.type=metaworld",
    "--env.task=reach-v3",
    *ENV_FLAGS["act"],
    "--env.episode_length=24",
    "--eval.n_episodes=3",
    "--eval.batch_size=2",
    "--eval.max_episodes_rendered=0",
    "--policy.device=cpu",
    "--seed=3",
)


def bridge_flags(checkpoint: Path, python: str) -> list[str]:
    return [f"--policy.path={checkpoint}", "--policy.type=lerobot_bridge", f"--policy.python={python}"]


@pytest.fixture(scope="module")
def bridged_run(checkpoints, lerobot_python, tmp_path_factory) -> Path:
    """EVAL_FLAGS with the bridged ACT, run directly: what the other ways of running it must give."""
    out = tmp_path_factory.mktemp("bridged") / "run"
    assert (
        lerobot_eval([*EVAL_FLAGS, *bridge_flags(checkpoints["act"], lerobot_python), f"--output_dir={out}"])
        == 0
    )
    return out


def assert_same_episodes(run: Path, reference: Path) -> None:
    """The same outcomes, and rewards to 1e-4 relative: LeRobot's ACT and ours agree to ~1e-6
    per action, not bit for bit, and so do batches of different sizes, and episode 1 of this
    seed amplifies such differences (our own ACT's rewards there move by 5e-6 relative between
    batch sizes 1 and 2)."""
    theirs, ours = episode_outcomes(run), episode_outcomes(reference)
    assert [o[:3] + o[4:] for o in theirs] == [o[:3] + o[4:] for o in ours]
    np.testing.assert_allclose([o[3] for o in theirs], [o[3] for o in ours], rtol=1e-4)


@pytest.mark.slow
def test_bridged_act_evaluates_like_our_native_act(checkpoints, lerobot_python, bridged_run, tmp_path):
    """Same Meta-World episodes, same seeds: the same outcomes and rewards."""
    native = tmp_path / "native"
    assert lerobot_eval([*EVAL_FLAGS, f"--policy.path={checkpoints['act']}", f"--output_dir={native}"]) == 0
    assert_same_episodes(bridged_run, native)
    config = json.loads((bridged_run / "eval_info.json").read_text())["provenance"]["config"]["policy"]
    recorded = (config["lerobot_version"], config["python"], config["checkpoint_type"])
    assert recorded == ("0.6.1", lerobot_python, "act")


TINY_VQBET = textwrap.dedent(
    """
    import sys, torch
    from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
    from lerobot.policies.factory import make_pre_post_processors
    from lerobot.policies.vqbet.configuration_vqbet import VQBeTConfig
    from lerobot.policies.vqbet.modeling_vqbet import VQBeTPolicy

    torch.manual_seed(0)
    cfg = VQBeTConfig(
        input_features={
            "observation.image": PolicyFeature(FeatureType.VISUAL, (3, 96, 96)),
            "observation.state": PolicyFeature(FeatureType.STATE, (4,)),
        },
        output_features={"action": PolicyFeature(FeatureType.ACTION, (4,))},
        n_obs_steps=2, n_action_pred_token=2, action_chunk_size=2, crop_shape=(84, 84),
        vqvae_n_embed=8, vqvae_embedding_dim=16, vqvae_enc_hidden_dim=16,
        gpt_block_size=64, gpt_input_dim=32, gpt_output_dim=32, gpt_n_layer=1, gpt_n_head=1,
        gpt_hidden_dim=32, spatial_softmax_num_keypoints=8, pretrained_backbone_weights=None,
        device="cpu",
    )
    policy = VQBeTPolicy(cfg)
    policy.save_pretrained(sys.argv[1])
    stats = {
        "observation.state": {"min": torch.full((4,), -1.0), "max": torch.ones(4)},
        "action": {"min": torch.full((4,), -1.0), "max": torch.ones(4)},
    }
    pre, post = make_pre_post_processors(cfg, dataset_stats=stats)
    pre.save_pretrained(sys.argv[1])
    post.save_pretrained(sys.argv[1])
    """
)


@pytest.mark.slow
def test_a_policy_type_this_build_lacks_evaluates_through_the_bridge(lerobot_python, tmp_path):
    checkpoint, out = tmp_path / "vqbet", tmp_path / "out"
    subprocess.run([lerobot_python, "-c", TINY_VQBET, str(checkpoint)], check=True, capture_output=True)
    assert lerobot_eval([*EVAL_FLAGS, *bridge_flags(checkpoint, lerobot_python), f"--output_dir={out}"]) == 0
    outcomes = episode_outcomes(out)
    assert [o[0] for o in outcomes] == [0, 1, 2]
    assert all(o[4] == 24 for o in outcomes)  # every episode ran to its end, none failed
    info = json.loads((out / "eval_info.json").read_text())
    assert info["provenance"]["config"]["policy"]["checkpoint_type"] == "vqbet"


@pytest.mark.slow
def test_a_bridged_policy_serves_evaluators(checkpoints, lerobot_python, bridged_run, tmp_path):
    """lerobot-serve-policy's server moves rows between batches: their state stays in the child."""
    served = tmp_path / "served"
    bridged = load_bridged(checkpoints["act"], lerobot_python)
    try:
        with running_server(bridged.policy) as server:
            websocket = ["--policy.type=websocket", f"--policy.port={server.port}"]
            assert lerobot_eval([*EVAL_FLAGS, *websocket, f"--output_dir={served}"]) == 0
    finally:
        bridged.policy.close()
    assert_same_episodes(served, bridged_run)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_each_ray_worker_runs_its_own_child(checkpoints, lerobot_python, bridged_run, tmp_path):
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    on_ray = tmp_path / "ray"
    ray_flags = [f for f in EVAL_FLAGS if not f.startswith("--eval.batch_size")]
    ray_flags += ["--eval.backend=ray", "--eval.num_workers=2", "--eval.envs_per_worker=1"]
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        flags = [*ray_flags, *bridge_flags(checkpoints["act"], lerobot_python), f"--output_dir={on_ray}"]
        assert lerobot_eval(flags) == 0
    finally:
        ray.shutdown()
    assert_same_episodes(on_ray, bridged_run)
