"""LeRobot's evaluation functions, for code written against `lerobot.scripts.lerobot_eval`.

`eval_policy` (one vector env), `eval_policy_all` (LeRobot's {suite: {task_id: env}}) and
`rollout` (one batch of episodes) have LeRobot 0.6.1's signatures and return its dict shapes.
The first two run through `run_evaluation` on the local backend, as `lerobot-eval` does, so
results are identical to a CLI run. They take any gymnasium vector env: ours, a SyncVectorEnv (each
sub-env stepped on its own, every episode on its own seed), or one without per-slot control
such as an AsyncVectorEnv (stepped whole, in waves of episodes, as LeRobot does). The
processors may be ours or LeRobot-style: the env postprocessor maps {"action": tensor}.

Deliberately different from LeRobot (docs/source/evaluation.mdx, "Differences from LeRobot"):
episode e always starts from seed start_seed + e (None counts as 0) with a freshly reset
policy row, whatever the batch; results are strict JSON (null, never NaN); with
`return_episode_data` the `episodes` entry holds our per-episode results rather than tensors.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import TaskSpec
from lerobot.configs.gym_env import vector_max_episode_steps
from lerobot.envs.gym_vector import describe_task, slot_env
from lerobot.envs.slots import task_of
from lerobot.envs.utils import add_envs_task, preprocess_observation
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.evaluate import run_evaluation
from lerobot.evaluation.results import episode_record
from lerobot.evaluation.run.backend import LocalBackend
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.recording import EvalRecorders
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.run.rollout.settings import apply_env_postprocessor
from lerobot.evaluation.store.journal import EpisodeJournal
from lerobot.policies.pretrained import PreTrainedPolicy, RowPolicy
from lerobot.utils.constants import ACTION

EnvsByGroup = Mapping[str, Mapping[int, Any]]
Processor = Callable[[Any], Any]


def eval_policy(
    env: Any,
    policy: Any,
    env_preprocessor: Processor | None = None,
    env_postprocessor: Processor | None = None,
    preprocessor: Processor | None = None,
    postprocessor: Processor | None = None,
    n_episodes: int = 1,
    max_episodes_rendered: int = 0,
    videos_dir: Path | None = None,
    return_episode_data: bool = False,
    start_seed: int | None = None,
    recording_dir: Path | None = None,
    env_features: dict | None = None,
    recording_repo_id: str | None = None,
    recording_private: bool = False,
    save_predicted_video: bool = False,
    *,
    continuous_batching: bool = True,
    rename_map: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run `n_episodes` on one vector env; LeRobot's single-task result shape.

    Videos go straight into `videos_dir`, a recording (`recording_dir`) into one dataset. The
    env is left open, as LeRobot leaves it. `env_features` is accepted for the signature (the
    dataset's features come from the observations); `recording_repo_id`, `recording_private`
    and `save_predicted_video` are refused, as nothing is uploaded and no policy here predicts
    video.
    """
    _refuse_unsupported(recording_repo_id, recording_private, save_predicted_video)
    if max_episodes_rendered > 0 and videos_dir is None:
        raise ValueError("max_episodes_rendered > 0 needs a videos_dir")
    task = _ungrouped(_task_of(env))
    stepped = slot_env(env, task)
    settings = _settings(
        start_seed,
        max_episodes_rendered,
        videos_dir,
        continuous_batching and resets_rows(policy),
        rename_map,
        (env_preprocessor, preprocessor, postprocessor, env_postprocessor),
    )
    recorders = EvalRecorders(recording_dir) if recording_dir is not None else None
    backend = LocalBackend(
        as_row_policy(policy), settings, lambda _: stepped, recorders=recorders, close_envs=False
    )
    run = run_evaluation(RunPlan((task,), n_episodes), backend)
    result = run.tasks[0]
    info = {
        "per_episode": [episode_record(e) for e in result.episodes],
        "aggregated": result.summary.to_json(),
    }
    if max_episodes_rendered > 0:
        info["video_paths"] = result.video_paths
    if return_episode_data:
        info["episodes"] = list(result.episodes)
    return info


def eval_policy_all(
    envs: EnvsByGroup,
    policy: Any,
    env_preprocessor: Processor | None = None,
    env_postprocessor: Processor | None = None,
    preprocessor: Processor | None = None,
    postprocessor: Processor | None = None,
    n_episodes: int = 1,
    *,
    max_episodes_rendered: int = 0,
    recording_dir: Path | None = None,
    env_features: dict | None = None,
    recording_repo_id: str | None = None,
    recording_private: bool = False,
    videos_dir: Path | None = None,
    return_episode_data: bool = False,
    start_seed: int | None = None,
    max_parallel_tasks: int = 1,
    continuous_batching: bool = True,
    rename_map: Mapping[str, str] | None = None,
    use_amp: bool = False,
    max_episode_retries: int = 2,
    journal: EpisodeJournal | None = None,
    shard: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Every task of every group; per-task, per-group and overall results (eval_info.json's shape).

    Each task's env is closed as soon as its task is done, also when it fails, so at most
    `max_parallel_tasks` tasks' workers and simulators exist at any time; tasks run at the
    same time each get their own copy of the policy. With a `journal`, episodes it already
    holds are not run again and every new episode is written to it as soon as it ends.
    Videos go to `<videos_dir>/<group>_<task_id>/`, recordings to `<recording_dir>/<group>_<task_id>/`.
    """
    _refuse_unsupported(recording_repo_id, recording_private, False)
    tasks = {
        task: slot_env(env, task)
        for group, by_id in envs.items()
        for task_id, env in by_id.items()
        for task in [_task_in_group(env, group, task_id)]
    }
    settings = _settings(
        start_seed,
        max_episodes_rendered,
        videos_dir,
        continuous_batching and resets_rows(policy),
        rename_map,
        (env_preprocessor, preprocessor, postprocessor, env_postprocessor),
        use_amp=use_amp,
        max_episode_retries=max_episode_retries,
    )
    plan = RunPlan(tuple(tasks), n_episodes, shard)
    backend = LocalBackend(
        as_row_policy(policy),
        settings,
        lambda task: tasks[task],
        max_parallel_tasks=max_parallel_tasks,
        recorders=EvalRecorders(recording_dir) if recording_dir is not None else None,
    )
    run = run_evaluation(plan, backend, journal=journal)
    info = run.to_eval_info()
    if return_episode_data:
        info["episodes"] = {task.key: list(task.episodes) for task in run.tasks}
    return info


def rollout(
    env: Any,
    policy: Any,
    env_preprocessor: Processor | None = None,
    env_postprocessor: Processor | None = None,
    preprocessor: Processor | None = None,
    postprocessor: Processor | None = None,
    seeds: list[int] | None = None,
    return_observations: bool = False,
    render_callback: Callable[[Any], None] | None = None,
    recording_dir: Path | None = None,
    env_features: dict | None = None,
    recording_repo_id: str | None = None,
    recording_private: bool = False,
    predicted_latents_callback: Callable[[Any], None] | None = None,
) -> dict[str, torch.Tensor | dict[str, torch.Tensor]]:
    """One episode per sub-env, the whole batch stepped until every episode ended (LeRobot's
    `rollout`); tensors of shape (batch, steps, ...): `action`, `reward`, `success` and the
    cumulative `done`, plus `observation` (steps + 1) with `return_observations`.

    As in LeRobot, a sub-env whose episode ended keeps being stepped until the last one ends;
    `done` says which steps count. For evaluation, `eval_policy` runs each episode on its own.
    """
    _refuse_unsupported(recording_repo_id, recording_private, False)
    if recording_dir is not None:
        raise ValueError("rollout(recording_dir=...): record with eval_policy(..., recording_dir=...)")
    n_envs = env.num_envs
    limit = vector_max_episode_steps(env)
    policy.reset()
    observation, _ = env.reset(seed=seeds)
    if render_callback is not None:
        render_callback(env)
    steps: dict[str, list[torch.Tensor]] = {ACTION: [], "reward": [], "success": [], "done": []}
    observations: list[dict[str, torch.Tensor]] = []
    done = np.zeros(n_envs, dtype=bool)
    while not done.all() and (limit is None or len(steps["done"]) < limit):
        batch = preprocess_observation(observation)
        if return_observations:
            observations.append({key: value.clone() for key, value in batch.items()})
        action = _select_action(env, policy, batch, processors=(env_preprocessor, preprocessor))
        if predicted_latents_callback is not None:
            predicted_latents_callback(policy)
        action = _postprocess(action, postprocessor, env_postprocessor).to("cpu", torch.float32)
        observation, reward, terminated, truncated, info = env.step(action.numpy())
        if render_callback is not None:
            render_callback(env)
        done = done | terminated | truncated
        if limit is not None and len(steps["done"]) + 1 >= limit:
            done[:] = True
        steps[ACTION].append(action)
        steps["reward"].append(torch.as_tensor(np.asarray(reward, dtype=np.float32)))
        steps["success"].append(torch.as_tensor(_successes(info, n_envs)))
        steps["done"].append(torch.as_tensor(done.copy()))
    result: dict[str, Any] = {key: torch.stack(values, dim=1) for key, values in steps.items()}
    if return_observations:
        observations.append(preprocess_observation(observation))
        result["observation"] = {
            key: torch.stack([o[key] for o in observations], dim=1) for key in observations[0]
        }
    return result


def resets_rows(policy: Any) -> bool:
    """Whether the policy forgets one batch row at a time (`reset(env_ids, seeds)`, ours) or
    only all rows at once (`reset()`, LeRobot's), which needs episodes in whole waves."""
    try:
        return "env_ids" in inspect.signature(policy.reset).parameters
    except (TypeError, ValueError):
        return False


def as_row_policy(policy: Any) -> RowPolicy:
    """The policy as the rollout loop calls it (`RowPolicy`): ours as is, any other adapted."""
    return policy if isinstance(policy, PreTrainedPolicy) else ForeignPolicy(policy)


class ForeignPolicy:
    """A policy written elsewhere (LeRobot's, a user's) as a `RowPolicy`.

    Rows are reset one at a time when its `reset` takes them (`reset(env_ids, seeds)`), else
    all at once with LeRobot's `reset()`: the loop then starts episodes in waves, all rows
    together. It reads every observation whole (it says nothing of queued actions or unread
    images), and what it holds is the caller's to close.
    """

    def __init__(self, policy: Any):
        self.policy = policy
        self.config = getattr(policy, "config", None)
        self.name = getattr(policy, "name", type(policy).__name__)
        self.resets_rows = resets_rows(policy)

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        if self.resets_rows:
            self.policy.reset(env_ids=env_ids, seeds=seeds)
        else:
            self.policy.reset()

    def select_action(self, batch: dict[str, Any]) -> torch.Tensor:
        return self.policy.select_action(batch)

    def actions_without_observation(self, n_rows: int) -> torch.Tensor | None:
        return None

    def take_queued_actions(self, n_rows: int) -> list[torch.Tensor] | None:
        return None

    def rows_reading_images(self, n_rows: int) -> Sequence[int]:
        return range(n_rows)

    def parameters(self):
        return self.policy.parameters() if hasattr(self.policy, "parameters") else iter(())

    def buffers(self):
        return self.policy.buffers() if hasattr(self.policy, "buffers") else iter(())

    def close(self) -> None:
        """Left to the caller, who built the policy."""


def _select_action(env: Any, policy: Any, batch: dict[str, Any], processors: tuple) -> torch.Tensor:
    env_preprocessor, preprocessor = processors
    batch = add_envs_task(env, batch)
    for processor in (env_preprocessor, preprocessor):
        if processor is not None:
            batch = processor(batch)
    with torch.inference_mode():
        return policy.select_action(batch)


def _postprocess(action: torch.Tensor, postprocessor: Processor | None, env_postprocessor: Processor | None):
    if postprocessor is not None:
        action = postprocessor(action)
    return apply_env_postprocessor(env_postprocessor, action) if env_postprocessor is not None else action


def _successes(info: Mapping[str, Any], n_envs: int) -> np.ndarray:
    """Per-env `is_success` of a vector step's info (also in `final_info`, gymnasium's shape
    for envs that just ended under same-step autoreset)."""
    success = np.zeros(n_envs, dtype=bool)
    for source in (info, info.get("final_info")):
        if isinstance(source, Mapping) and "is_success" in source:
            values = np.asarray(source["is_success"], dtype=bool).reshape(-1)
            mask = np.asarray(source.get("_is_success", np.ones(n_envs, dtype=bool)), dtype=bool)
            success |= values & mask if values.shape == (n_envs,) else bool(values.any())
    return success


def _settings(
    start_seed: int | None,
    max_episodes_rendered: int,
    videos_dir: Path | None,
    continuous_batching: bool,
    rename_map: Mapping[str, str] | None,
    processors: tuple[Processor | None, Processor | None, Processor | None, Processor | None],
    **extra: Any,
) -> RolloutSettings:
    env_pre, pre, post, env_post = processors
    return RolloutSettings(
        start_seed=start_seed or 0,
        max_episodes_rendered=max_episodes_rendered,
        videos_dir=Path(videos_dir) if videos_dir else None,
        continuous_batching=continuous_batching,
        rename_map=dict(rename_map or {}),
        **extra,
    ).with_processors((pre, post), (env_pre, env_post))


def _task_in_group(env: Any, group: str, task_id: int) -> TaskSpec:
    """The env's task, under the suite and id of the dict it came in."""
    task = _task_of(env)
    return TaskSpec(group, task_id, task.name, task.description, task.fps, task.max_steps)


def _task_of(env: Any) -> TaskSpec:
    """What an env says about its task: ours from its TaskSpec or metadata, others by asking."""
    return task_of(env) if isinstance(env, LazyVectorEnv) else describe_task(env)


def _ungrouped(task: TaskSpec) -> TaskSpec:
    """LeRobot's single-env evaluation reports no suite and writes videos without a task folder."""
    return TaskSpec("", 0, task.name, task.description, task.fps, task.max_steps)


def _refuse_unsupported(repo_id: str | None, private: bool, predicted_video: bool) -> None:
    if repo_id is not None or private:
        raise ValueError("recording_repo_id / recording_private: this build never uploads recordings")
    if predicted_video:
        raise ValueError("save_predicted_video: no policy here predicts video")
