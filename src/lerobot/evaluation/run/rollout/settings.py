"""How episodes run (`RolloutSettings`), and what the caller hears while they do (`RolloutHooks`).

The settings are the same for every task of a run and on every backend; they hold the one seed
rule (`seed_of`), so that episode e starts from the same seed wherever it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import TaskSpec
from lerobot.configs.eval import EvalConfig
from lerobot.evaluation.results import EpisodeResult
from lerobot.utils.constants import ACTION
from lerobot.utils.seeds import episode_seed

BatchHook = Callable[[dict[str, Any]], dict[str, Any]]
ActionHook = Callable[[torch.Tensor], torch.Tensor]
StepHook = Callable[[int, int, Any, np.ndarray, int], None]
"""on_step(env_id, episode_index, observation, action, step): the observation the action was
chosen from (one env's, unbatched) and that action, before the env steps. Step 0 marks a
(re)start: an episode re-run after a crash begins again at step 0."""


@dataclass(frozen=True)
class RolloutHooks:
    """What the caller wants to hear while episodes run."""

    on_episode_end: Callable[[EpisodeResult], None] | None = None
    on_step: StepHook | None = None
    """Called for every active slot once its action is known (recording demonstrations)."""
    on_steps: Callable[[int], None] | None = None
    """Called after every round with the number of env steps it took (each step of a chunk
    counts): what measuring a batch size's throughput counts (`batching.measure`)."""
    should_stop: Callable[[], bool] | None = None
    """Asked before every step; True ends the loop with RolloutStoppedError (a run stopping its
    other tasks when one fails or is interrupted)."""


class RolloutStoppedError(Exception):
    """The caller's `should_stop` asked the loop to end; unfinished episodes are not reported."""


@dataclass(frozen=True)
class RolloutSettings:
    """How episodes run: the same for every task of a run, on every backend."""

    start_seed: int = 0
    """Episode e starts from seed `seed_of(e)`: start_seed + e."""
    max_episodes_rendered: int = 0
    """Episodes 0..N-1 of each task get a video."""
    videos_dir: Path | None = None
    """The run's video folder; each task writes into its own subfolder (`videos_dir_for`)."""
    continuous_batching: bool = True
    chunks_in_workers: bool = True
    """A row inside an action chunk sends the rest of it to its env worker in one message
    (`RowPolicy.take_queued_actions`); False: one round trip per step. Results are identical."""
    row_groups: int = 1
    """Split the slots into this many groups that take turns: while the policy computes one
    group's actions, the other groups' workers step (`run_episodes`; `--eval.row_groups`)."""
    independent_rows: bool = False
    """Each worker's slots advance on their own: their next actions are computed as soon as
    they are back, batched with the others back by then (`run_as_ready`)."""
    use_amp: bool = False
    max_episode_retries: int = 2
    rename_map: Mapping[str, str] = field(default_factory=dict)
    preprocessor: BatchHook | None = None
    postprocessor: ActionHook | None = None

    @classmethod
    def from_config(
        cls,
        eval_cfg: EvalConfig,
        seed: int,
        *,
        use_amp: bool = False,
        rename_map: Mapping[str, str] | None = None,
        videos_dir: Path | None = None,
    ) -> RolloutSettings:
        """The settings `--eval.*` (and `--seed`, `--policy.use_amp`, `--rename_map`) describe,
        without processors (`with_processors`)."""
        return cls(
            start_seed=seed,
            max_episodes_rendered=eval_cfg.max_episodes_rendered,
            videos_dir=Path(videos_dir) if videos_dir is not None else None,
            continuous_batching=eval_cfg.continuous_batching,
            chunks_in_workers=eval_cfg.chunks_in_workers,
            row_groups=eval_cfg.row_groups,
            independent_rows=bool(eval_cfg.independent_rows),
            use_amp=use_amp,
            max_episode_retries=eval_cfg.max_episode_retries,
            rename_map=dict(rename_map or {}),
        )

    def with_processors(
        self, policy_processors: tuple[Any, Any], env_processors: tuple[Any, Any] = (None, None)
    ) -> RolloutSettings:
        """These settings with the policy's (preprocessor, postprocessor) and the env's around
        them, in LeRobot's order: the batch through the env's preprocessor, then the policy's;
        the actions through the policy's postprocessor, then the env's, which maps
        `{"action": tensor}` (`EnvConfig.get_env_processors`). None: no processor there."""
        preprocessor, postprocessor = policy_processors
        env_preprocessor, env_postprocessor = env_processors
        return replace(
            self,
            preprocessor=chained(env_preprocessor, preprocessor),
            postprocessor=chained(postprocessor, env_action_hook(env_postprocessor)),
        )

    def with_grouping(self, eval_cfg: EvalConfig) -> RolloutSettings:
        """These settings with the row groups and independent rows of `eval_cfg` (settled)."""
        return replace(self, row_groups=eval_cfg.row_groups, independent_rows=bool(eval_cfg.independent_rows))

    def seed_of(self, episode: int) -> int:
        """The seed episode `episode` starts from: its env's reset and its policy row."""
        return episode_seed(self.start_seed, episode)

    def videos_dir_for(self, task: TaskSpec) -> Path | None:
        """Where a task's videos go: `<videos_dir>/<group>_<task_id>/` (a task without a group,
        as LeRobot's single-env `eval_policy` runs it, writes straight into `videos_dir`)."""
        if self.videos_dir is None:
            return None
        return self.videos_dir / task.video_folder if task.group else self.videos_dir


def chained(
    first: Callable[[Any], Any] | None, second: Callable[[Any], Any] | None
) -> Callable[[Any], Any] | None:
    """`second(first(x))`; either alone when the other is None or a pipeline without steps
    (an env's default processors: skipped, they would only convert the batch back and forth)."""
    first, second = (None if _no_steps(hook) else hook for hook in (first, second))
    if first is None or second is None:
        return first or second
    return lambda value: second(first(value))


def _no_steps(hook: Any) -> bool:
    steps = getattr(hook, "steps", None)
    return steps is not None and len(steps) == 0


def env_action_hook(env_postprocessor: Callable[[Any], Any] | None) -> ActionHook | None:
    """An env postprocessor as a map of the action tensor (`apply_env_postprocessor`)."""
    if env_postprocessor is None:
        return None
    return lambda action: apply_env_postprocessor(env_postprocessor, action)


def apply_env_postprocessor(env_postprocessor: Callable[[Any], Any], action: torch.Tensor) -> torch.Tensor:
    """LeRobot's env postprocessors map `{"action": tensor}`; a plain tensor map works too."""
    out = env_postprocessor({ACTION: action})
    return out[ACTION] if isinstance(out, Mapping) else out
