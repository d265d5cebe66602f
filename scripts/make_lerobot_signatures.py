"""Write tests/fixtures/lerobot_0_6_1_signatures.json: LeRobot's public function signatures and
the config fields of the policy types both projects have.

Run once, by hand, with the PyPI package `lerobot` 0.6.1 in a scratch virtual environment
outside this repository (never a dependency of this project):

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python "lerobot==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_lerobot_signatures.py

Each entry records a function's parameters as the installed package's source defines them:
names in order, their kind (inspect's names) and their default (as source text). The source is
parsed rather than imported: importing `lerobot.scripts.lerobot_eval` needs LeRobot's dataset
extra, and the signature is in the source either way. tests/test_lerobot_compat.py checks that
ours accept the same calls. The config fields are read from the imported config classes (they
import without extras): tests/policies/test_pretrained.py checks that the config.json our
`save_pretrained` writes holds none LeRobot lacks.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import importlib.util
import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lerobot_0_6_1_signatures.json"
PUBLIC = {
    "lerobot.policies.factory": [
        "make_policy",
        "make_pre_post_processors",
        "get_policy_class",
        "make_policy_config",
    ],
    "lerobot.envs.factory": ["make_env", "make_env_config", "make_env_pre_post_processors"],
    "lerobot.envs.utils": ["preprocess_observation", "close_envs"],
    "lerobot.scripts.lerobot_eval": ["eval_main", "eval_policy", "eval_policy_all", "rollout"],
    "lerobot.configs.parser": ["wrap"],
    "lerobot.utils.random_utils": ["set_seed"],
    "lerobot.utils.utils": ["init_logging"],
    "lerobot.utils.import_utils": ["register_third_party_plugins"],
}


def module_source(module: str) -> ast.Module:
    package_dir = Path(importlib.util.find_spec("lerobot").origin).parent
    path = package_dir.joinpath(*module.split(".")[1:]).with_suffix(".py")
    return ast.parse(path.read_text())


def describe(tree: ast.Module, name: str) -> list[dict[str, str | None]]:
    [function] = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    kinds = ["POSITIONAL_ONLY"] * len(args.posonlyargs) + ["POSITIONAL_OR_KEYWORD"] * len(args.args)
    entries = [(a.arg, kind, d) for a, kind, d in zip(positional, kinds, defaults, strict=True)]
    if args.vararg:
        entries.append((args.vararg.arg, "VAR_POSITIONAL", None))
    entries += [(a.arg, "KEYWORD_ONLY", d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg:
        entries.append((args.kwarg.arg, "VAR_KEYWORD", None))
    return [
        {"name": arg, "kind": kind, "default": None if default is None else ast.unparse(default)}
        for arg, kind, default in entries
    ]


POLICY_TYPES = ("act", "diffusion", "smolvla", "pi0", "pi05")


def config_fields() -> dict[str, list[str]]:
    """The dataclass fields of LeRobot's config class of each policy type."""
    import lerobot.policies  # noqa: F401  (registers the types)
    from lerobot.configs.policies import PreTrainedConfig

    return {
        name: [f.name for f in dataclasses.fields(PreTrainedConfig.get_choice_class(name))]
        for name in POLICY_TYPES
    }


def main() -> None:
    signatures = {
        f"{module}.{name}": describe(module_source(module), name)
        for module, names in PUBLIC.items()
        for name in names
    }
    document = {
        "lerobot_version": importlib.metadata.version("lerobot"),
        "signatures": signatures,
        "config_fields": config_fields(),
    }
    OUT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {len(signatures)} signatures to {OUT}")


if __name__ == "__main__":
    main()
