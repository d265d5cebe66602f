import datetime as dt
import json
import shlex
import subprocess
import sys
import textwrap

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.evaluation.store.output_dir import encode_config
from lerobot.evaluation.store.provenance import collect_provenance, git_revision, iso_utc, reproduce_command


def test_reproduce_command_parses_back_to_the_same_settings(tmp_path):
    flags = [
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=reach-v3,push-v3",
        '--env.camera_names=["corner2", "corner"]',
        '--rename_map={"observation.image": "observation.images.top"}',
        "--eval.n_episodes=7",
        "--seed=3",
        f"--output_dir={tmp_path / 'first'}",
    ]
    config = encode_config(parse_config(EvalPipelineConfig, flags))
    command = shlex.split(reproduce_command(config))
    assert command[0] == "lerobot-eval"
    assert not any(arg.startswith(("--output_dir", "--eval.resume")) for arg in command)
    again = encode_config(
        parse_config(EvalPipelineConfig, [*command[1:], f"--output_dir={tmp_path / 'again'}"])
    )
    assert {**again, "output_dir": None} == {**config, "output_dir": None}


def test_provenance_records_versions_times_and_machine():
    started = dt.datetime(2025, 3, 1, 9, 0, 0, tzinfo=dt.UTC)
    prov = collect_provenance({"seed": 1}, started, started + dt.timedelta(seconds=90), [1.0, 3.0], 2)
    assert {"lerobot", "torch", "numpy", "gymnasium"} <= set(prov["versions"])
    assert prov["started_at"] == "2025-03-01T09:00:00Z" and prov["ended_at"] == "2025-03-01T09:01:30Z"
    assert prov["wall_s"] == 90.0 and prov["episode_wall_s_mean"] == 2.0 and prov["n_episodes_resumed"] == 2
    assert prov["host"]["cpu_count"] >= 1 and prov["host"]["hostname"]
    assert prov["config"] == {"seed": 1} and prov["command"] == "lerobot-eval --seed=1"
    json.dumps(prov, allow_nan=False)


def test_versions_come_from_metadata_without_importing_simulators():
    script = textwrap.dedent(
        """
        import sys
        from lerobot.evaluation.store.provenance import package_versions
        versions = package_versions()
        print(sorted(versions), "mujoco" in sys.modules or "metaworld" in sys.modules or "libero" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("False")
    assert "metaworld" in out  # the test environment has the metaworld extra


def test_git_revision_is_none_outside_a_checkout(tmp_path):
    assert git_revision(tmp_path) is None


def test_iso_utc_converts_local_times():
    local = dt.datetime(2025, 3, 1, 10, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert iso_utc(local) == "2025-03-01T09:00:00Z"
