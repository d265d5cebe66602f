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


def package_imports() -> dict[tuple[str, str], set[str]]:
    """{(importing package, imported package): {"module -> imported module", ...}}."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if len(parts) < 2:  # lerobot/__init__.py
            continue
        module = "lerobot." + ".".join(parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                target = name.split(".")
                if target[0] == "lerobot" and len(target) > 1 and target[1] != parts[0]:
                    edges[(parts[0], target[1])].add(f"{module} -> {name}")
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
