"""The local backend: tasks at a time (`--env.max_parallel_tasks`), each with its own policy.

A policy keeps per-row state between steps. Tasks run at the same time on one shared policy
interleave that state (LeRobot's issue #4327); with a copy per task every episode sees exactly
the actions it sees when tasks run one by one.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
import torch

from lerobot.configs.env import TaskSpec
from lerobot.configs.policies import PreTrainedConfig
from lerobot.evaluation.evaluate import run_evaluation
from lerobot.evaluation.run import backend as backend_module
from lerobot.evaluation.run.backend import LocalBackend
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.scripts.lerobot_eval import main
from lerobot.utils.constants import ENV_TASK
from tests.evaluation.run.rollout.test_loop import make_vec

TASKS = tuple(TaskSpec("g", i, name, f"do {name}", fps=10) for i, name in enumerate(["a", "b", "c"]))


class CountingPolicy(PreTrainedPolicy):
    """Row r's action is (its episode's seed, steps since its reset): state that must not leak
    between episodes, or between tasks run at the same time."""

    name = "counting"

    def __init__(self, fail_on_task: str | None = None):
        super().__init__(PreTrainedConfig.get_choice_class("random")(device="cpu"))
        self.rows: dict[int, list[float]] = {}
        self.fail_on_task = fail_on_task

    def reset(self, env_ids=None, seeds=None):
        for env_id, seed in zip(env_ids or [], seeds or [], strict=True):
            self.rows[env_id] = [float(seed), 0.0]

    def select_action(self, batch):
        if self.fail_on_task is not None and batch[ENV_TASK][0] == self.fail_on_task:
            raise ValueError(f"policy failure on task {self.fail_on_task}")
        time.sleep(0.002)  # lets the other task threads run in between, as a real forward pass does
        n = batch["observation.state"].shape[0]
        actions = torch.tensor([self.rows.get(i, [0.0, 0.0]) for i in range(n)])
        for i in range(n):
            if i in self.rows:
                self.rows[i][1] += 1
        return actions


class ActionLog:
    """A stand-in for --eval.recording's datasets: what each episode was fed, per task."""

    def __init__(self):
        self.actions: dict[tuple[str, int], list[tuple[float, ...]]] = {}
        self.finished: list[str] = []

    def __call__(self, task, episodes):
        log = self

        class Recording:
            def add_step(self, env_id, episode, observation, action, step):
                log.actions.setdefault((task.name, episode), [])
                if step == 0:
                    log.actions[(task.name, episode)] = []
                log.actions[(task.name, episode)].append(tuple(float(a) for a in action))

            def end_episode(self, result):
                pass

            def finish(self):
                log.finished.append(task.name)

        return Recording()


def run_tasks(max_parallel_tasks: int, policy: PreTrainedPolicy, n_episodes: int = 5, envs=None, log=None):
    envs = envs if envs is not None else {task: make_vec(2, task=task.name) for task in TASKS}
    log = log if log is not None else ActionLog()
    backend = LocalBackend(
        policy,
        RolloutSettings(start_seed=0),
        lambda task: envs[task],
        max_parallel_tasks=max_parallel_tasks,
        recorders=log,
    )
    run = run_evaluation(RunPlan(TASKS, n_episodes), backend)
    return run, log, envs


def test_tasks_at_a_time_feed_every_episode_the_same_actions_as_one_at_a_time():
    alone, alone_log, _ = run_tasks(1, CountingPolicy())
    together, together_log, envs = run_tasks(3, CountingPolicy())
    assert together_log.actions == alone_log.actions
    assert len(together_log.actions) == 15
    strip = lambda run: [[(e.seed, e.success, e.n_steps) for e in t.episodes] for t in run.tasks]  # noqa: E731
    assert strip(together) == strip(alone) and len(strip(alone)) == 3
    assert sorted(together_log.finished) == ["a", "b", "c"]
    assert not any(env.started for env in envs.values())


def test_a_shared_policy_would_mix_the_tasks_rows(monkeypatch):
    """The check above can fail: without the copies, concurrent tasks overwrite each other's rows."""
    alone_log = run_tasks(1, CountingPolicy())[1]
    monkeypatch.setattr(backend_module.copy, "deepcopy", lambda policy: policy)
    shared_log = run_tasks(3, CountingPolicy())[1]
    assert shared_log.actions != alone_log.actions


class WaitingForTheFailurePolicy(CountingPolicy):
    """Task a's rows step only once the run is stopping (after task b failed), so that the
    outcome does not depend on how the task threads are scheduled."""

    stopping = threading.Event()  # a class attribute: each task's copy of the policy waits on the same

    def __init__(self):
        super().__init__(fail_on_task="b")

    def select_action(self, batch):
        if batch[ENV_TASK][0] == "a":
            assert self.stopping.wait(timeout=300), "task b's failure never stopped the run"
        return super().select_action(batch)


def test_one_failing_task_stops_the_others_and_closes_their_envs():
    envs = {task: make_vec(2, task=task.name) for task in TASKS}
    log = ActionLog()
    backend = LocalBackend(
        CountingPolicy(),
        RolloutSettings(start_seed=0),
        lambda task: envs[task],
        max_parallel_tasks=2,
        recorders=log,
    )
    WaitingForTheFailurePolicy.stopping = backend._stop  # the event the backend stops its tasks with
    backend.policy = WaitingForTheFailurePolicy()
    with pytest.raises(ValueError, match="policy failure on task b"):
        run_evaluation(RunPlan(TASKS, 40), backend)
    assert not any(env.started for env in envs.values())
    assert "c" not in log.finished  # queued behind the failure: never started
    assert len([key for key in log.actions if key[0] == "a"]) < 40  # stopped part-way


class ClosingPolicy(CountingPolicy):
    """Counts `close` calls across its copies."""

    closed: list[int] = []

    def close(self) -> None:
        ClosingPolicy.closed.append(id(self))


def test_the_copies_made_for_tasks_at_a_time_are_closed_the_original_with_the_backend():
    ClosingPolicy.closed = []
    policy = ClosingPolicy()
    backend = LocalBackend(
        policy, RolloutSettings(start_seed=0), lambda task: make_vec(2, task=task.name), max_parallel_tasks=3
    )
    run_evaluation(RunPlan(TASKS, 2), backend)
    assert len(ClosingPolicy.closed) == 2 and id(policy) not in ClosingPolicy.closed  # the two copies
    backend.close()
    assert ClosingPolicy.closed[-1] == id(policy)


def test_parallel_tasks_report_one_progress_bar_for_the_run():
    policy = CountingPolicy()
    assert LocalBackend(policy, RolloutSettings(), lambda t: None).runs_tasks_in_order
    assert not LocalBackend(
        policy, RolloutSettings(), lambda t: None, max_parallel_tasks=2
    ).runs_tasks_in_order


def test_tasks_at_a_time_share_the_cores_and_give_them_back(monkeypatch):
    """One task at a time: torch keeps every core (the env workers wait while the policy
    runs). N tasks at a time: each gets cores / N threads, and the setting comes back after."""
    monkeypatch.setattr(backend_module.os, "cpu_count", lambda: 4)
    before = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        policy, seen = CountingPolicy(), []
        with backend_module.cores_split_between_tasks(policy, 1):
            seen.append(torch.get_num_threads())
        with backend_module.cores_split_between_tasks(policy, 2):
            seen.append(torch.get_num_threads())
        with backend_module.cores_split_between_tasks(policy, 8):
            seen.append(torch.get_num_threads())
        seen.append(torch.get_num_threads())
    finally:
        torch.set_num_threads(before)
    assert seen == [4, 2, 1, 4]


@pytest.mark.slow
def test_meta_world_results_are_the_same_with_two_tasks_at_a_time(tmp_path):
    """Real simulator, stateful policy (the random policy seeds a generator per row)."""
    common = [
        "--env.type=metaworld",
        "--env.task=reach-v3,push-v3",
        "--env.obs_type=state",
        "--env.episode_length=15",
        "--policy.type=random",
        "--policy.device=cpu",
        "--eval.n_episodes=3",
        "--eval.batch_size=2",
        "--eval.use_async_envs=false",
        "--eval.max_episodes_rendered=0",
    ]
    assert main([*common, f"--output_dir={tmp_path / 'one'}"]) == 0
    assert main([*common, "--env.max_parallel_tasks=2", f"--output_dir={tmp_path / 'two'}"]) == 0

    def episodes(run: str):
        info = json.loads((tmp_path / run / "eval_info.json").read_text())
        return sorted(
            (e["task"], e["episode_index"], e["sum_reward"], e["n_steps"]) for e in info["per_episode"]
        )

    assert episodes("two") == episodes("one")
    assert len(episodes("one")) == 6
