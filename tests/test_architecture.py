"""The package layers point one way, and the tools that only read results never load torch.

Layers, lowest first: utils < configs < envs, policies, processor < evaluation, datasets, serving <
training < scripts. A module may import its own package, a package of its own layer (as long as
the packages never import each other in a cycle) or a lower layer; never a higher one. Imports
inside functions count too: a lazy import is still a dependency.
"""

import ast
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "lerobot"
REPO = SRC.parents[1]
LAYERS = [
    {"utils"},
    {"configs"},
    {"envs", "policies", "processor"},
    {"evaluation", "datasets", "serving"},
    {"training"},
    {"scripts"},
]
LAYER_OF = {package: level for level, packages in enumerate(LAYERS) for package in packages}


def imported_modules(path: Path) -> list[str]:
    """Every module `path` imports, at the top or inside a function (`from a.b import c`
    imports `a.b`, and `a.b.c` when c is a module)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names.extend(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if is_module(f"{node.module}.{alias.name}")
            )
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (SRC / relative).with_suffix(".py").is_file() or (SRC / relative / "__init__.py").is_file()


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(("lerobot", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def package_imports() -> dict[tuple[str, str], set[str]]:
    """{(importing package, imported package): {"module -> imported module", ...}}."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if len(parts) < 2:  # lerobot/__init__.py
            continue
        for name in imported_modules(path):
            target = name.split(".")
            if target[0] == "lerobot" and len(target) > 1 and target[1] != parts[0]:
                edges[(parts[0], target[1])].add(f"{module_name(path)} -> {name}")
    return edges


def test_every_package_has_a_layer():
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYER_OF)


def test_imports_never_point_up():
    upward = [
        line
        for (source, target), lines in package_imports().items()
        if LAYER_OF[target] > LAYER_OF[source]
        for line in sorted(lines)
    ]
    assert upward == []


def test_packages_import_each_other_without_cycles():
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in package_imports():
        graph[source].add(target)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph[start])

    cycles = sorted(p for p in list(graph) if reaches(p, p, {p}))
    assert cycles == []


READERS = {
    "lerobot-eval-report": "import lerobot.scripts.lerobot_eval_report",
    "lerobot-eval-merge": "import lerobot.scripts.lerobot_eval_merge",
    "reading results": "from lerobot.evaluation.results import load_run",
}


def loaded_after(code: str, cwd: Path = REPO) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in ('torch', 'mujoco', 'metaworld', 'robosuite', 'ray') if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", READERS.values(), ids=READERS.keys())
def test_result_readers_never_import_torch_or_a_simulator(code):
    assert loaded_after(code) == []


@pytest.mark.parametrize("script", ["parse_eval_metrics.py", "extract_task_descriptions.py"])
def test_ci_scripts_never_import_torch_or_a_simulator(script, tmp_path):
    (tmp_path / "eval_info.json").write_text(json.dumps({"overall": {"pc_success": 50.0, "n_episodes": 2}}))
    args = {
        "parse_eval_metrics.py": ["--artifacts-dir", str(tmp_path)],
        "extract_task_descriptions.py": [
            "--env",
            "metaworld",
            "--task",
            "push-v3",
            "--output",
            str(tmp_path / "d.json"),
        ],
    }[script]
    code = (
        "import runpy, sys, contextlib, io\n"
        f"sys.argv = ['{script}', *{args!r}]\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    runpy.run_path('{script}', run_name='__main__')"
    )
    assert loaded_after(code, cwd=REPO / "scripts" / "ci") == []


def registered_types() -> dict[str, dict[str, str]]:
    """{"env": {type: config module}, "policy": {type: config module}} from the registries, as
    a new benchmark or policy enrols itself: by registering, not by a line here."""
    code = (
        "import json, lerobot.envs, lerobot.policies\n"
        "from lerobot.configs.env import EnvConfig\n"
        "from lerobot.configs.policies import PreTrainedConfig\n"
        "print(json.dumps({kind: {name: cls.__module__ for name, cls in base.get_known_choices().items()}"
        " for kind, base in (('env', EnvConfig), ('policy', PreTrainedConfig))}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


REGISTERED = registered_types()
BENCHMARKS = sorted(
    {module.split(".")[2] for module in REGISTERED["env"].values() if module.startswith("lerobot.envs.")}
)


def test_every_benchmark_is_a_package_with_its_env_apart():
    assert {"aloha", "libero", "libero_pro", "metaworld", "pusht"} <= set(BENCHMARKS)  # the registry is read
    for module in REGISTERED["env"].values():
        assert (SRC / Path(*module.split(".")[1:]) / "__init__.py").is_file(), f"{module}: not a package"
    flat = sorted(
        p.name for p in (SRC / "envs").glob("*.py") if p.stem in BENCHMARKS or p.stem.endswith("_env")
    )
    assert flat == []


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_benchmark_config_never_imports_its_env_and_the_env_never_imports_the_config(benchmark):
    """The config names its env by an entry point; the env reads the package's constants
    from a module of its own (`tasks`), never from the package's `__init__` (the config)."""
    package = f"lerobot.envs.{benchmark}"
    env_module = f"{package}.env"
    wrong = []
    for path in sorted((SRC / "envs" / benchmark).glob("*.py")):
        for name in imported_modules(path):
            if path.stem != "env" and name == env_module:
                wrong.append(f"{module_name(path)} -> {name}")
            if path.stem == "env" and name == package:
                wrong.append(f"{module_name(path)} -> {name}")
    assert wrong == []


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_benchmark_config_names_its_env_class_by_entry_point(benchmark):
    code = (
        "import importlib, sys\n"
        f"package = importlib.import_module('lerobot.envs.{benchmark}')\n"
        "configs = [v for v in vars(package).values() if isinstance(v, type) and getattr(v, 'env_entry_point', None)]\n"
        "print(sorted({c.env_entry_point for c in configs}), 'gymnasium' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    entry_points, gymnasium_loaded = out.strip().rsplit(" ", 1)
    assert (
        entry_points.startswith("['lerobot.envs.") and ".env:" in entry_points
    )  # its own or the one it perturbs
    assert gymnasium_loaded == "False"


EVALUATION_LAYERS = [
    {"results", "intervals", "paired_statistics", "robustness"},
    {"report"},
    {"store"},
    {"run"},
    {"evaluate"},
    {"adapters"},
]
"""The concerns of `lerobot.evaluation`, lowest first: the result model (with its regrouping by
perturbation family), its views, what lands on disk, running, the one entry point, and the
other ways in (LeRobot's API, recording)."""


def test_evaluation_concerns_import_downwards_only():
    layer_of = {name: level for level, names in enumerate(EVALUATION_LAYERS) for name in names}
    root = SRC / "evaluation"
    found = {
        p.stem if p.suffix == ".py" else p.name for p in root.iterdir() if p.suffix == ".py" or p.is_dir()
    }
    assert found - {"__init__", "__pycache__"} == set(layer_of)
    upward = []
    for path in root.rglob("*.py"):
        source = path.relative_to(root).parts[0].removesuffix(".py")
        if source == "__init__":
            continue
        for name in imported_modules(path):
            parts = name.split(".")
            inside = parts[:2] == ["lerobot", "evaluation"] and len(parts) > 2
            if inside and layer_of[parts[2]] > layer_of[source]:
                upward.append(f"{module_name(path)} -> {name}")
    assert upward == []


def test_the_factories_know_no_type_by_name():
    """Each policy class says how it is built (`for_env`), each env config how its envs are:
    the factories only dispatch, so a new type needs no line in them."""
    code = (
        "import json, lerobot.envs, lerobot.policies\n"
        "from lerobot.configs.env import EnvConfig\n"
        "from lerobot.configs.policies import PreTrainedConfig\n"
        "print(json.dumps([*PreTrainedConfig.get_known_choices(), *EnvConfig.get_known_choices()]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    type_names = set(json.loads(out.strip().splitlines()[-1]))
    assert {"random", "websocket", "aloha_scripted", "metaworld", "aloha"} <= type_names
    for factory in (SRC / "policies" / "factory.py", SRC / "envs" / "factory.py"):
        tree = ast.parse(factory.read_text())
        strings = {
            n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        assert strings & type_names == set(), factory.name
        assert [
            m for m in imported_modules(factory) if m.startswith("lerobot.envs.")
        ] == [] or factory.parent.name == "envs"


POLICIES = SRC / "policies"
POLICY_TYPES = sorted(p.parent.name for p in POLICIES.glob("*/configuration_*.py"))


def test_policy_types_never_import_each_other_and_shared_pieces_never_import_a_type():
    """What two types share lives in a folder of its own (`flow/`, `pi/`), not in one of them."""
    assert {"act", "diffusion", "pi0", "pi05", "smolvla"} <= set(POLICY_TYPES)
    wrong = []
    for path in POLICIES.rglob("*.py"):
        if path == POLICIES / "__init__.py":  # registers every type: it imports them all
            continue
        parts = path.relative_to(POLICIES).parts
        home = parts[0] if len(parts) > 1 else None
        for name in imported_modules(path):
            target = name.split(".")
            inside = target[:2] == ["lerobot", "policies"] and len(target) > 2
            if inside and target[2] in POLICY_TYPES and target[2] != home:
                wrong.append(f"{module_name(path)} -> {name}")
    assert wrong == []


def module_imports() -> dict[str, set[str]]:
    """{module: the lerobot modules it imports}, a package's `__init__` named as the package.
    `from a.b import c` imports `a.b.c` when c is a module, else `a.b`."""
    modules = {module_name(path): path for path in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for name in imported_modules(path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_two_modules_import_each_other_even_through_others():
    """A package's `__init__` importing its own modules is fine; a module importing back, or a
    ring of modules, is not: neither can be read, tested or moved alone."""
    assert import_cycles(module_imports()) == []


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore is its module's own: what another module needs is
    made public where it lives, or moved to where both can import it."""
    private = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").startswith("lerobot")
            ):
                private += [
                    f"{module_name(path)}: from {node.module} import {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
            parts = (node.module or "").split(".") if isinstance(node, ast.ImportFrom) else []
            if parts[:1] == ["lerobot"] and any(
                part.startswith("_") and part != "__init__" for part in parts
            ):
                private.append(f"{module_name(path)}: from {node.module}")
    assert private == []


def test_the_evaluation_package_names_no_benchmark():
    """Results, reports and the running of episodes hold for any benchmark: what one benchmark
    needs (its perturbation families, its simulator's versions) it declares on its config."""
    names = {name.replace("_", "").lower() for name in REGISTERED["env"]}
    names |= {benchmark.replace("_", "") for benchmark in BENCHMARKS}
    named = []
    for path in (SRC / "evaluation").rglob("*"):
        if path.suffix not in (".py", ".css", ".html", ".json"):
            continue
        text = path.read_text().lower().replace("-", "").replace("_", "")
        named += [f"{path.relative_to(SRC)}: {name}" for name in sorted(names) if name in text]
    assert named == []


def test_no_code_outside_a_type_folder_compares_a_type_name():
    """`cfg.type == "diffusion"` outside the type's own folder is a switch that every new type
    must find and extend: the type's config answers instead (a property, a class attribute)."""
    type_names = set(REGISTERED["env"]) | set(REGISTERED["policy"])
    own_folders = {SRC / "policies" / name for name in REGISTERED["policy"]}
    own_folders |= {SRC / "envs" / benchmark for benchmark in BENCHMARKS}
    compared = []
    for path in SRC.rglob("*.py"):
        if any(folder in path.parents for folder in own_folders):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)):
                continue
            if node.left.attr != "type":
                continue
            constants = [
                value.value
                for comparator in node.comparators
                for value in ast.walk(comparator)
                if isinstance(value, ast.Constant) and isinstance(value.value, str)
            ]
            if set(constants) & type_names:
                compared.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert compared == []


def test_no_module_under_evaluation_is_over_400_lines():
    long = {
        str(path.relative_to(SRC)): n
        for path in (SRC / "evaluation").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 400
    }
    assert long == {}
