"""Write tests/fixtures/lerobot_0_6_1_env_defaults.json: the default of every field of LeRobot
0.6.1's env configs for the benchmarks this build runs, and of its EvalConfig.

Run once, by hand, with LeRobot 0.6.1's scratch environment (never a dependency of this
project; `make lerobot-ref` builds one):

    .venv-lerobot-ref/bin/python scripts/make_lerobot_env_defaults.py

Each config is built with no arguments, as `--env.type=<type>` alone builds it, so values its
`__post_init__` derives (LIBERO's camera features from its image size) are included. Values
are JSON: tuples as lists, a feature as {"type", "shape"}, an enum as its value.
tests/envs/test_env_defaults.py compares each with this build's default, and lists the
deliberate differences with their reasons.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.metadata
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lerobot_0_6_1_env_defaults.json"
ENV_TYPES = ("aloha", "pusht", "metaworld", "libero")


def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if {f.name for f in dataclasses.fields(value)} == {"type", "shape"}:
            return {"type": encode(value.type), "shape": encode(value.shape)}
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return f"<{type(value).__name__}>"


def defaults(config: Any) -> dict[str, Any]:
    return {f.name: encode(getattr(config, f.name)) for f in dataclasses.fields(config)}


def main() -> None:
    from lerobot.configs.default import EvalConfig
    from lerobot.envs.configs import EnvConfig

    fixture = {
        "lerobot": importlib.metadata.version("lerobot"),
        "made_by": "scripts/make_lerobot_env_defaults.py",
        "env": {name: defaults(EnvConfig.get_choice_class(name)()) for name in ENV_TYPES},
        "eval": defaults(EvalConfig()),
    }
    OUT.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
