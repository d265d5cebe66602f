"""Write tests/fixtures/lerobot_0_6_1_names.json: the public names of LeRobot 0.6.1 that a user
touches for evaluation and loading, by module.

Run once, by hand, with LeRobot 0.6.1 in a scratch virtual environment outside this repository
(never a dependency of this project; the diffusion extra lets every policy module import):

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python -c <(echo mujoco==3.3.0) "lerobot[metaworld,diffusion]==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_lerobot_names.py

A module's names are its `__all__` (packages), else the classes and functions it defines and
its public module-level assignments. Each entry records its kind and, for functions, the
parameter names and kinds. tests/test_lerobot_names.py checks that every one exists here, with
a signature that takes LeRobot's calls, or refuses its use in one line saying what to use.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lerobot_0_6_1_names.json"
POLICY_TYPES = ("act", "diffusion", "smolvla", "pi0", "pi05")
MODULES = (
    "lerobot.policies",
    "lerobot.policies.factory",
    *(f"lerobot.policies.{t}.{part}_{t}" for t in POLICY_TYPES for part in ("configuration", "modeling")),
    "lerobot.processor",
    "lerobot.processor.env_processor",
    "lerobot.processor.pipeline",
    "lerobot.processor.converters",
    "lerobot.processor.normalize_processor",
    "lerobot.processor.device_processor",
    "lerobot.processor.batch_processor",
    "lerobot.processor.rename_processor",
    "lerobot.processor.newline_task_processor",
    "lerobot.processor.tokenizer_processor",
    "lerobot.processor.relative_action_processor",
    "lerobot.envs",
    "lerobot.envs.factory",
    "lerobot.envs.utils",
    "lerobot.envs.configs",
    "lerobot.configs",
    "lerobot.configs.parser",
    "lerobot.configs.policies",
    "lerobot.configs.types",
    "lerobot.configs.default",
    "lerobot.configs.eval",
    "lerobot.utils.utils",
    "lerobot.utils.random_utils",
    "lerobot.utils.device_utils",
    "lerobot.scripts.lerobot_eval",
)
NOT_NAMES = {"logger", "T", "F"}
"""Module-level assignments that are not API: loggers and type variables."""


def public_names(module: Any) -> list[str]:
    if hasattr(module, "__all__"):
        return list(module.__all__)
    defined = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    ]
    for node in ast.parse(Path(module.__file__).read_text()).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for target in targets:
            name = getattr(target, "id", "")
            if name and not name.startswith("_") and name not in defined and name not in NOT_NAMES:
                defined.append(name)
    return defined


def describe(value: Any) -> dict[str, Any]:
    if inspect.isclass(value):
        return {"kind": "class"}
    if callable(value):
        try:
            parameters = inspect.signature(value).parameters.values()
        except (TypeError, ValueError):
            return {"kind": "function"}
        return {"kind": "function", "params": [[p.name, p.kind.name] for p in parameters]}
    return {"kind": "value"}


def main() -> None:
    modules = {}
    for name in MODULES:
        module = importlib.import_module(name)
        modules[name] = {n: describe(getattr(module, n)) for n in public_names(module)}
    document = {"lerobot_version": importlib.metadata.version("lerobot"), "modules": modules}
    OUT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {sum(map(len, modules.values()))} names of {len(modules)} modules to {OUT}")


if __name__ == "__main__":
    main()
