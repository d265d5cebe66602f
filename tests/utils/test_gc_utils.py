"""lerobot-eval keeps what it loaded (torch, the policy) out of the episodes' full collections."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json, sys
from lerobot.scripts.lerobot_eval import main
gc.freeze = (lambda freeze: lambda: (print(json.dumps({{"torch": "torch" in sys.modules,
    "tracked": len(gc.get_objects())}}), flush=True), freeze()))(gc.freeze)
code = main({argv!r})
print(json.dumps({{"code": code, "frozen": gc.get_freeze_count()}}))
"""


def test_lerobot_eval_freezes_what_it_loaded_before_the_episodes_run(tmp_path):
    argv = [
        "--env.type=metaworld",
        "--env.obs_type=state",
        "--env.episode_length=3",
        "--policy.type=random",
        "--eval.n_episodes=1",
        "--eval.batch_size=1",
        f"--output_dir={tmp_path / 'run'}",
    ]
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    at_freeze, after = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    assert at_freeze["torch"] and at_freeze["tracked"] > 100_000  # the policy is loaded by then
    assert after["code"] == 0
    assert after["frozen"] >= at_freeze["tracked"] * 0.99  # everything loaded by then
