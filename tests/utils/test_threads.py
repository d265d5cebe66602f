"""OpenMP's wait policy must be set before torch loads: checked in fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys

from lerobot.utils.threads import WAIT_POLICY, prefer_passive_omp_waits, usable_cores

REPORT = "import os, sys; print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)"


def run_python(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != WAIT_POLICY} | env
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_cli_start_sets_passive_waits_before_torch_is_imported():
    code = (
        "from lerobot.scripts.cli import start_cli; from lerobot.configs.eval import EvalPipelineConfig\n"
        "start_cli(EvalPipelineConfig, ['--policy.type=random', '--env.type=metaworld', '--env.task=push-v3'], 'x')\n"
        + REPORT
    )
    assert run_python(code) == "PASSIVE False"


def test_a_users_setting_is_kept():
    code = f"from lerobot.utils.threads import prefer_passive_omp_waits as p; print(p()); {REPORT}"
    assert run_python(code, OMP_WAIT_POLICY="active").splitlines() == ["False", "active False"]


def test_after_torch_loaded_nothing_changes(monkeypatch):
    """libgomp has read the variable by then: setting it would only mislead child processes'
    readers of the environment into thinking it took effect here."""
    import torch  # noqa: F401

    monkeypatch.delenv(WAIT_POLICY, raising=False)
    assert prefer_passive_omp_waits() is False
    assert WAIT_POLICY not in os.environ
    monkeypatch.setenv(WAIT_POLICY, "passive")
    assert prefer_passive_omp_waits() is True


def test_usable_cores_are_the_affinity_capped_by_a_cgroup_quota(tmp_path):
    affinity = len(os.sched_getaffinity(0))
    cpu_max = tmp_path / "cpu.max"
    assert usable_cores(tmp_path / "absent") == affinity
    cpu_max.write_text("max 100000\n")
    assert usable_cores(cpu_max) == affinity
    cpu_max.write_text("50000 100000\n")  # half a core: still one
    assert usable_cores(cpu_max) == 1
    cpu_max.write_text(f"{100000 * (affinity + 8)} 100000\n")  # a quota above the affinity
    assert usable_cores(cpu_max) == affinity


def test_usable_cores_follow_a_narrower_affinity():
    code = "import os; os.sched_setaffinity(0, {0}); from lerobot.utils.threads import usable_cores; print(usable_cores())"
    assert run_python(code) == "1"
