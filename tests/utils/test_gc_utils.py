"""lerobot-eval keeps what it loaded (torch, the policy) out of the episodes' full collections."""

from __future__ import annotations

from tests.utils.fresh_interpreter import json_lines, tiny_metaworld_eval_argv

PROBE = """
import gc, json, sys
from lerobot.scripts.lerobot_eval import main
gc.freeze = (lambda freeze: lambda: (print(json.dumps({{"torch": "torch" in sys.modules,
    "tracked": len(gc.get_objects())}}), flush=True), freeze()))(gc.freeze)
code = main({argv!r})
print(json.dumps({{"code": code, "frozen": gc.get_freeze_count()}}))
"""


def test_lerobot_eval_freezes_what_it_loaded_before_the_episodes_run(tmp_path):
    argv = tiny_metaworld_eval_argv(tmp_path / "run")
    at_freeze, after = json_lines(PROBE.format(argv=argv))[-2:]
    assert at_freeze["torch"] and at_freeze["tracked"] > 100_000  # the policy is loaded by then
    assert after["code"] == 0
    assert after["frozen"] >= at_freeze["tracked"] * 0.99  # everything loaded by then
