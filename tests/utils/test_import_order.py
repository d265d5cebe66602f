"""Simulator bindings load before torch in a process that steps envs beside the policy.

`sys.modules` keeps insertion order, so the order two modules appear in it is the order they
were first imported. Each case runs in a fresh interpreter: this one has torch loaded already.
"""

from __future__ import annotations

from tests.utils.fresh_interpreter import json_lines, tiny_metaworld_eval_argv

PROBE = """
import json, sys
{setup}
names = list(sys.modules)
print(json.dumps({{"result": result, "order": [m for m in names if m in ("mujoco", "torch")]}}))
"""


def probe(setup: str) -> dict:
    return json_lines(PROBE.format(setup=setup))[-1]


def test_bindings_are_imported_when_torch_is_not_loaded_yet():
    report = probe(
        "from lerobot.utils.import_order import import_before_torch\n"
        "result = import_before_torch(['mujoco', 'no_such_module_here'])\n"
        "import torch"
    )
    assert report == {"result": ["mujoco"], "order": ["mujoco", "torch"]}


def test_nothing_is_imported_once_torch_is_loaded():
    report = probe(
        "import torch\n"
        "from lerobot.utils.import_order import import_before_torch\n"
        "result = import_before_torch(['mujoco'])"
    )
    assert report == {"result": [], "order": ["torch"]}


def test_lerobot_eval_on_metaworld_loads_mujoco_before_torch(tmp_path):
    argv = tiny_metaworld_eval_argv(tmp_path / "run")
    report = probe(f"from lerobot.scripts.lerobot_eval import main\nresult = main({argv!r})")
    assert report == {"result": 0, "order": ["mujoco", "torch"]}


def test_metaworld_env_workers_load_mujoco_first():
    """The workers come from a fork server that `lerobot-eval` starts before loading torch; it
    loads MuJoCo's bindings before Meta-World, whose own order would load numpy and gymnasium
    ahead of them. (A package enters `sys.modules` again when its import completes, so the
    bindings' extension module marks when they loaded.)"""
    report = probe(
        "import multiprocessing as mp, types\n"
        "from lerobot.configs.eval import EvalConfig\n"
        "from lerobot.envs.metaworld import MetaworldEnvConfig\n"
        "from lerobot.scripts.cli import prepare_simulators\n"
        "cfg = types.SimpleNamespace(env=MetaworldEnvConfig(), eval=EvalConfig(batch_size=4))\n"
        "prepare_simulators(cfg)\n"
        "with mp.get_context('forkserver').Pool(1) as pool:\n"
        "    result = pool.apply(eval, (\"[m for m in __import__('sys').modules if m in "
        "('mujoco._structs', 'numpy', 'gymnasium', 'metaworld', 'torch')]\",))\n"
    )
    assert report["result"] == ["mujoco._structs", "numpy", "gymnasium", "metaworld"]
