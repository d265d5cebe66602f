"""Write tests/fixtures/lerobot_0_6_1_signatures.json: LeRobot's public function signatures, the
public method signatures of the policy classes both projects have, and their config fields.

Run once, by hand, with the PyPI package `lerobot` 0.6.1 in a scratch virtual environment
outside this repository (never a dependency of this project):

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python "lerobot==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_lerobot_signatures.py

Each entry records a function's parameters as the installed package's source defines them:
names in order, their kind (inspect's names) and their default (as source text). The source is
parsed rather than imported: importing `lerobot.scripts.lerobot_eval` needs LeRobot's dataset
extra, and the signature is in the source either way. tests/test_lerobot_compat.py checks that
ours accept the same calls.

A policy class's methods are recorded as the class exposes them: a method it does not define
comes from the first of its bases, in Python's method resolution order, that does
(`from_pretrained` of PreTrainedPolicy, which overrides HubMixin's). The bases are followed
through the parsed modules' imports; bases outside LeRobot (torch's `nn.Module`, `abc.ABC`)
define none of these methods and are skipped. tests/test_lerobot_compat.py checks our classes'.

The config fields are read from the imported config classes (they import without extras):
tests/policies/test_pretrained.py checks that the config.json our `save_pretrained` writes holds
none LeRobot lacks.
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
    return describe_arguments(function.args)


def describe_arguments(args: ast.arguments) -> list[dict[str, str | None]]:
    """Each parameter's name, inspect kind and default (as source text), in order."""
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
POLICY_CLASSES = {
    "act": "lerobot.policies.act.modeling_act.ACTPolicy",
    "diffusion": "lerobot.policies.diffusion.modeling_diffusion.DiffusionPolicy",
    "smolvla": "lerobot.policies.smolvla.modeling_smolvla.SmolVLAPolicy",
    "pi0": "lerobot.policies.pi0.modeling_pi0.PI0Policy",
    "pi05": "lerobot.policies.pi05.modeling_pi05.PI05Policy",
}
POLICY_METHODS = (
    "select_action",
    "predict_action_chunk",
    "forward",
    "reset",
    "get_optim_params",
    "from_pretrained",
    "save_pretrained",
)


def class_node(qualified: str) -> ast.ClassDef:
    module, _, name = qualified.rpartition(".")
    [node] = [n for n in module_source(module).body if isinstance(n, ast.ClassDef) and n.name == name]
    return node


def imported_names(module: str) -> dict[str, str]:
    """Where each name a module imports with `from ... import` comes from: {local name:
    qualified name}, relative imports resolved against the module's package."""
    package = module.split(".")[:-1]
    names = {}
    for node in module_source(module).body:
        if not isinstance(node, ast.ImportFrom):
            continue
        parts = package[: len(package) - node.level + 1] if node.level else []
        source = ".".join(parts + (node.module.split(".") if node.module else []))
        for alias in node.names:
            names[alias.asname or alias.name] = f"{source}.{alias.name}"
    return names


def base_classes(qualified: str) -> list[str]:
    """The qualified names of a class's bases that LeRobot's source defines, in order."""
    module = qualified.rpartition(".")[0]
    local = {n.name for n in module_source(module).body if isinstance(n, ast.ClassDef)}
    imported = imported_names(module)
    bases = []
    for base in class_node(qualified).bases:
        if not isinstance(base, ast.Name):
            continue  # nn.Module, abc.ABC: outside LeRobot
        if base.id in local:
            bases.append(f"{module}.{base.id}")
        elif imported.get(base.id, "").startswith("lerobot."):
            bases.append(imported[base.id])
    return bases


def method_resolution_order(qualified: str) -> list[str]:
    """C3 linearisation, as Python orders a class's bases, over the bases LeRobot defines."""
    bases = base_classes(qualified)
    sequences = [method_resolution_order(b) for b in bases] + [bases]
    order = [qualified]
    while any(sequences):
        sequences = [s for s in sequences if s]
        head = next(s[0] for s in sequences if not any(s[0] in t[1:] for t in sequences))
        order.append(head)
        sequences = [s[1:] if s[0] == head else s for s in sequences]
    return order


def binding(function: ast.FunctionDef) -> str:
    """How the class exposes the function: "classmethod", "staticmethod" or "method"."""
    names = {d.id for d in function.decorator_list if isinstance(d, ast.Name)}
    return next((kind for kind in ("classmethod", "staticmethod") if kind in names), "method")


def describe_method(qualified_class: str, name: str) -> dict | None:
    """The method as the class exposes it, its self or cls left out; None if no class in its
    resolution order defines it."""
    for owner in method_resolution_order(qualified_class):
        found = [n for n in class_node(owner).body if isinstance(n, ast.FunctionDef) and n.name == name]
        if found:
            function = found[-1]
            parameters = describe_arguments(function.args)
            kind = binding(function)
            return {
                "defined_in": owner,
                "binding": kind,
                "parameters": parameters if kind == "staticmethod" else parameters[1:],
            }
    return None


def policy_methods() -> dict[str, dict]:
    """Per policy type: its class and the signatures of the methods in POLICY_METHODS."""
    return {
        policy_type: {
            "class": qualified,
            "methods": {name: describe_method(qualified, name) for name in POLICY_METHODS},
        }
        for policy_type, qualified in POLICY_CLASSES.items()
    }


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
        "policy_methods": policy_methods(),
        "config_fields": config_fields(),
    }
    OUT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {len(signatures)} signatures to {OUT}")


if __name__ == "__main__":
    main()
