"""Bad input and --help are answered before torch, gymnasium or a simulator is imported.

Each command line runs in a fresh interpreter, which then reports its exit code and which heavy
modules it had loaded. How long that takes is measured by benchmarks/startup.py, not here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lerobot.scripts.lerobot_eval import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"
HEAVY = ("torch", "gymnasium", "numpy", "mujoco", "metaworld", "robosuite", "libero")
PROBE = """
import json, sys
from lerobot.scripts.{module} import main
code = main({argv!r})
print(json.dumps({{"code": code, "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def start(module: str, argv: list[str]) -> tuple[int, list[str], str]:
    """(exit code, heavy modules loaded, stderr) of `main(argv)` in a fresh interpreter."""
    code = PROBE.format(module=module, argv=argv, heavy=HEAVY)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return report["code"], report["heavy"], result.stderr


@pytest.fixture(scope="module")
def act_config_only(tmp_path_factory) -> Path:
    """A checkpoint directory as parsing sees it: config.json and a weights file to point at."""
    directory = tmp_path_factory.mktemp("act")
    shutil.copy(FIXTURES / "act" / "config.json", directory / "config.json")
    (directory / "model.safetensors").write_bytes(b"")
    return directory


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env.type=metaworld", "--policy.type=random", "--eval.n_epsiodes=1"], "--eval.n_epsiodes=1"),
        (["--env.type=metaworld", "--env.task=pushh-v3", "--policy.type=random"], "did you mean 'push-v3'"),
        (["--env.type=metaworld", "--policy.type=random", "--policy.device=cuad"], "--policy.device='cuad'"),
        (["--env.type=libero", "--env.control_mode=abs", "--policy.type=random"], "--env.control_mode='abs'"),
        (["--env.type=metaworld", "--policy.type=random", "--eval.recording_repo_id=me/x"], "never uploads"),
    ],
    ids=["flag", "task", "device", "control-mode", "hub-upload"],
)
def test_bad_input_is_one_line_before_anything_heavy_loads(argv, message):
    code, heavy, stderr = start("lerobot_eval", argv)
    assert code == 2
    assert heavy == []
    [line] = [line for line in stderr.splitlines() if line.strip()]
    assert message in line


def test_a_checkpoint_that_the_env_cannot_feed_is_refused_before_torch(act_config_only):
    argv = ["--env.type=metaworld", "--env.obs_type=state", f"--policy.path={act_config_only}"]
    code, heavy, stderr = start("lerobot_eval", argv)
    assert (code, heavy) == (2, [])
    assert "the checkpoint reads camera images (observation.image)" in stderr


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("lerobot_eval", ["--help"]),
        ("lerobot_eval", ["--env.type=libero", "--policy.type=diffusion", "--help"]),
        ("lerobot_train", ["--help"]),
        ("lerobot_record_sim", ["--help"]),
    ],
)
def test_help_loads_nothing_heavy(module, argv):
    assert start(module, argv)[:2] == (0, [])


def test_importing_the_eval_script_loads_nothing_heavy():
    code = f"import sys, lerobot.scripts.lerobot_eval; print([x for x in {HEAVY!r} if x in sys.modules])"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"


def missing_device_kind() -> str:
    if not torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "xpu" if mps is not None and mps.is_available() else "mps"


def test_a_device_the_machine_lacks_is_one_line_and_leaves_no_output_dir(tmp_path, capsys):
    device = missing_device_kind()
    out = tmp_path / "run"
    argv = [
        "--env.type=metaworld",
        "--policy.type=random",
        f"--policy.device={device}",
        f"--output_dir={out}",
    ]
    assert main(argv) == 2
    [line] = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert line.startswith(f"--policy.device={device}: {device} is not available on this machine")
    assert not out.exists()


def test_an_output_dir_holding_results_is_refused_before_anything_heavy_loads(tmp_path):
    (tmp_path / "eval_info.json").write_text('{"aggregated": {"pc_success": 50.0}}')
    code, heavy, stderr = start(
        "lerobot_eval", ["--env.type=metaworld", "--policy.type=random", f"--output_dir={tmp_path}"]
    )
    [line] = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and heavy == [] and "holds results of an earlier run" in line
