"""Run an evaluation's episodes on Ray actors: `--eval.backend=ray`.

The driver (the `lerobot-eval` process) cuts every task into work units of a few episodes and
hands them out one at a time: an actor that finishes a unit takes the next, so fast workers do
more. Each actor builds the policy once and keeps it for all its units; for each unit it builds
the task's vector env in its own process, runs the episodes with the local backend's rollout
loop and closes the env before returning, so no simulator or GL context outlives its unit. Episode e still starts
from seed + e with a freshly reset policy row, so per-episode results equal the local backend's.

Only small records travel: a unit goes out as (task, episode indices), its results come back as
`EpisodeResult`s, which the driver appends to episodes.jsonl as each unit returns (resume works
across backends). Videos are written by the actors straight into `videos_dir` and only their
paths come back. On one machine that is the run's output dir; on a multi-node cluster
`--output_dir` must be on storage that every node mounts at the same path, or each node keeps
the videos it wrote on its own disk (results are unaffected, the report's links break).

An actor that dies (simulator segfault, OOM kill, lost node) is replaced by a new one, and its
unit goes back to the queue split into single episodes, so an episode that kills its worker
every time fails alone, as a failed episode, after `--eval.max_episode_retries` re-runs. Ray's
own `max_restarts` / `max_task_retries` would restart the actor in place and re-run the unit
without telling the driver, which then could not cap the re-runs nor record the failure.

Every episode records the node that ran it; before any episode the driver checks that every
node runs its lerobot, and during the run it logs each node the cluster loses with the units
that went back to the queue from it (`ray_nodes`). Which cluster: `ray_connection`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import os
import re
import textwrap
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError

from lerobot.configs.eval import EvalConfig, EvalPipelineConfig
from lerobot.envs.factory import make_env_pre_post_processors, make_task_env
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run import node_software
from lerobot.evaluation.run.backend import EvalBackend, RunEvents
from lerobot.evaluation.run.batching.layout import BatchLayout
from lerobot.evaluation.run.plan import RunPlan, WorkUnit
from lerobot.evaluation.run.ray_connection import (
    CPUS_PER_WORKER,
    check_cluster_resources,
    connect,
    resolve_num_workers,
)
from lerobot.evaluation.run.ray_nodes import (
    NodeRegistry,
    NodeSoftware,
    check_nodes_run_this_code,
    describe_units,
    require_same_code,
)
from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes
from lerobot.utils.errors import HarnessOutageError
from lerobot.utils.gl import default_mujoco_gl

logger = logging.getLogger(__name__)

UNIT_WAVES = 2
"""Episodes per work unit = envs_per_worker x this: enough that building the env is paid once
for a few episodes, few enough that the last units of a run end close together."""
WORKER_NAME_PREFIX = "lerobot-eval-worker"
GL_VARIABLES = ("MUJOCO_GL", "PYOPENGL_PLATFORM")
WORKER_START_TIMEOUT_S = 300.0
"""How long the pool may go without a single live worker (none built its policy yet, or all
died) before the run stops with an error instead of waiting for Ray forever."""
READY_BEFORE_DISPATCH = 1
"""Workers that must be ready before the first unit goes out: one, so that work starts as soon
as any worker can take it (a test that needs every node to take units raises it)."""
POLL_S = 0.05
"""The driver polls for finished units and sleeps in Python between polls: a signal that
arrives while Ray itself blocks turns into a bare KeyboardInterrupt, so SIGTERM would lose
its identity (and lerobot-eval its clean stop with partial results)."""


@dataclass(frozen=True)
class UnitResult:
    unit: WorkUnit
    episodes: tuple[EpisodeResult, ...]
    eval_s: float
    """Seconds the actor spent on the unit, starting its env included."""
    node_id: str | None = None
    """The node whose worker ran it; None for episodes failed by the driver."""


class RayBackend(EvalBackend):
    """Work units on Ray actors; the driver reports their episodes as each unit returns."""

    runs_tasks_in_order = False

    def __init__(self, cfg: EvalPipelineConfig, settings: RolloutSettings):
        self.cfg, self.settings = cfg, settings
        self.nodes = NodeRegistry()

    def provenance(self) -> dict[str, Any]:
        return {"ray": self.nodes.to_record(self.cfg.eval.ray_address)}

    def run(self, plan: RunPlan, events: RunEvents) -> None:
        units = plan.units(unit_size=envs_per_actor(self.cfg.eval) * UNIT_WAVES)
        if not units:
            return

        def on_result(result: UnitResult) -> None:
            for episode in result.episodes:
                events.episode_finished(result.unit.task, self._video_path_for_driver(result.unit, episode))
            events.unit_finished(result.unit, result.eval_s)

        _run_units(self.cfg, units, self.settings, on_result, self.nodes)

    def _video_path_for_driver(self, unit: WorkUnit, episode: EpisodeResult) -> EpisodeResult:
        """Actors write to the absolute path; record it as the local backend does."""
        if episode.video_path is None:
            return episode
        folder = self.settings.videos_dir_for(unit.task)
        return dataclasses.replace(episode, video_path=str(folder / Path(episode.video_path).name))


def _run_units(
    cfg: EvalPipelineConfig,
    units: list[WorkUnit],
    settings: RolloutSettings,
    on_result: Callable[[UnitResult], None],
    nodes: NodeRegistry,
) -> None:
    started_ray = connect(cfg.eval)
    try:
        check_cluster_resources(cfg.eval)
        driver = NodeSoftware.of_driver()
        check_nodes_run_this_code(driver)
        size = resolve_num_workers(cfg.eval, ray.cluster_resources(), len(units))
        logger.info(
            "ray: %d workers (%d CPU, %g GPU, %d envs each), %d units of up to %d episodes",
            size,
            CPUS_PER_WORKER,
            cfg.eval.gpus_per_worker,
            envs_per_actor(cfg.eval),
            len(units),
            envs_per_actor(cfg.eval) * UNIT_WAVES,
        )
        videos_dir = settings.videos_dir.absolute() if settings.videos_dir is not None else None
        pool = WorkerPool(cfg, dataclasses.replace(settings, videos_dir=videos_dir), size, driver, nodes)
        try:
            pool.run(units, on_result)
        finally:
            pool.close()
    finally:
        if started_ray:
            ray.shutdown()


class NoRayWorkersError(HarnessOutageError):
    """No worker could be started (or all died) for WORKER_START_TIMEOUT_S: one line, exit 3."""


class EpisodeWorker:
    """One Ray actor: one copy of the policy, kept across units, and one env per unit."""

    def __init__(self, cfg: EvalPipelineConfig, settings: RolloutSettings):
        default_mujoco_gl()  # before anything imports a simulator in this process
        from lerobot.policies.factory import make_policy, make_pre_post_processors

        self.cfg = cfg
        self.policy = make_policy(cfg.policy, env_cfg=cfg.env, rename_map=cfg.rename_map)
        self.settings = settings.with_processors(
            make_pre_post_processors(cfg.policy), make_env_pre_post_processors(cfg.env, cfg.policy)
        )
        self.node = NodeSoftware.of(
            ray.get_runtime_context().get_node_id(),
            ray.util.get_node_ip_address(),
            node_software.describe_this_machine(),
        )

    def ready(self) -> NodeSoftware:
        """Where the actor runs and with which lerobot, once the policy is built."""
        return self.node

    def run_unit(self, unit: WorkUnit) -> UnitResult:
        started = time.perf_counter()
        n_envs = min(envs_per_actor(self.cfg.eval), len(unit.episodes))
        env = make_task_env(self.cfg.env, unit.task, n_envs, False, self.cfg.eval.step_timeout_s)
        self.policy.reset()  # the previous unit's env may have had another number of rows
        try:
            results = run_episodes(env, self.policy, unit.episodes, self.settings, unit.task)
        finally:
            env.close()
        results = [
            dataclasses.replace(r, retries=r.retries + unit.attempts, node=self.node.node_id) for r in results
        ]
        return UnitResult(unit, tuple(results), time.perf_counter() - started, self.node.node_id)


class WorkerPool:
    """Ray actors taking work units from one queue; a dead actor is replaced by a new one.

    Actors are named `lerobot-eval-worker-<run>-<n>` (visible in `ray list actors`). A new actor
    gets work only once its policy is built, so actors the cluster cannot place yet hold no unit.
    """

    def __init__(
        self,
        cfg: EvalPipelineConfig,
        settings: RolloutSettings,
        size: int,
        driver: NodeSoftware,
        nodes: NodeRegistry,
    ):
        self.cfg, self.settings, self.size = cfg, settings, size
        self.driver, self.nodes = driver, nodes
        self.places: dict[Any, NodeSoftware] = {}
        """Actor -> the node it runs on, once it is ready."""
        self.run_id = uuid.uuid4().hex[:8]
        self.serial = itertools.count()
        self.actor_class = ray.remote(EpisodeWorker)
        self.actors: list[Any] = []
        self.idle: list[Any] = []
        self.calls: dict[Any, tuple[Any, WorkUnit | None]] = {}
        """Object ref -> (actor, unit); unit None for an actor's `ready` call."""

    def run(self, units: Sequence[WorkUnit], on_result: Callable[[UnitResult], None]) -> None:
        queue = deque(units)
        for _ in range(self.size):
            self._start_actor()
        last_alive, dispatching = time.monotonic(), False
        while queue or any(unit is not None for _, unit in self.calls.values()):
            dispatching = dispatching or len(self.places) >= min(READY_BEFORE_DISPATCH, self.size)
            while dispatching and queue and self.idle:
                actor, unit = self.idle.pop(), queue.popleft()
                self.calls[actor.run_unit.remote(unit)] = (actor, unit)
                logger.debug("%s to %s", describe_units([unit]), self.places[actor].where)
            finished, _ = ray.wait(list(self.calls), num_returns=len(self.calls), timeout=0)
            for ref in finished:
                self._collect(ref, queue, on_result)
            if self._any_alive():
                last_alive = time.monotonic()
            elif time.monotonic() - last_alive > WORKER_START_TIMEOUT_S:
                raise NoRayWorkersError(
                    f"--eval.backend=ray: no Ray worker has been alive for {WORKER_START_TIMEOUT_S:g} s "
                    f"({len(self.actors)} requested); see `ray status` and the worker logs under /tmp/ray"
                )
            self.nodes.log_lost_nodes()
            if not finished:
                time.sleep(POLL_S)

    def _any_alive(self) -> bool:
        """A worker that built its policy and has not died: idle, or running a unit."""
        return bool(self.idle) or any(unit is not None for _, unit in self.calls.values())

    def close(self) -> None:
        """Kill every actor (their env worker processes die with them)."""
        self.nodes.log_lost_nodes(force=True)
        for actor in self.actors:
            _kill(actor)
        self.actors, self.idle, self.calls = [], [], {}

    def _collect(self, ref: Any, queue: deque[WorkUnit], on_result: Callable[[UnitResult], None]) -> None:
        actor, unit = self.calls.pop(ref)
        try:
            result = ray.get(ref)
        except RayActorError as exc:
            if exc.actor_init_failed:
                raise  # building the policy failed; every new actor would fail the same way
            self._worker_died(actor, unit, _death_reason(exc), queue, on_result)
            return
        if unit is None:
            self._worker_ready(actor, result)
            return
        self.idle.append(actor)
        self.nodes.count_episodes(result.node_id, len(result.episodes))
        on_result(result)

    def _worker_ready(self, actor: Any, node: NodeSoftware) -> None:
        """A node that joined after the start was not checked: its first worker checks it."""
        require_same_code(node, self.driver)
        self.nodes.add(node)
        self.places[actor] = node
        self.idle.append(actor)

    def _worker_died(
        self,
        actor: Any,
        unit: WorkUnit | None,
        reason: str,
        queue: deque[WorkUnit],
        on_result: Callable[[UnitResult], None],
    ) -> None:
        """Replace the worker; its unit goes back to the queue (or fails for good); log both."""
        node = self.places.pop(actor, None)
        where = f" on {node.where}" if node is not None else ""
        requeued = unit is not None and self._requeue(unit, reason, queue, on_result)
        if unit is None:
            outcome = "it had no unit"
        elif requeued:
            outcome = f"back in the queue: {describe_units([unit])}"
        else:
            outcome = f"failed for good after {unit.attempts + 1} attempts: {describe_units([unit])}"
        logger.warning("a Ray worker died%s (%s); starting a new one; %s", where, reason, outcome)
        self.nodes.worker_died(node.node_id if node is not None else None, unit if requeued else None)
        _kill(actor)
        self.actors.remove(actor)
        self._start_actor()

    def _start_actor(self) -> None:
        actor = self.actor_class.options(
            name=f"{WORKER_NAME_PREFIX}-{self.run_id}-{next(self.serial)}",
            num_cpus=CPUS_PER_WORKER,
            num_gpus=self.cfg.eval.gpus_per_worker,
            max_restarts=0,
            runtime_env={"env_vars": {k: os.environ[k] for k in GL_VARIABLES if k in os.environ}},
        ).remote(self.cfg, self.settings)
        self.actors.append(actor)
        self.calls[actor.ready.remote()] = (actor, None)

    def _requeue(
        self, unit: WorkUnit, reason: str, queue: deque[WorkUnit], on_result: Callable[[UnitResult], None]
    ) -> bool:
        """Its episodes go back to the front of the queue one by one (True), or fail for good."""
        attempts = unit.attempts + 1
        if attempts > self.cfg.eval.max_episode_retries:
            on_result(_failed_unit(unit, self.settings, f"Ray worker died: {reason}"))
            return False
        for episode in reversed(unit.episodes):
            queue.appendleft(WorkUnit(unit.task, (episode,), attempts))
        return True


def envs_per_actor(eval_cfg: EvalConfig) -> int:
    """The envs each actor steps in one unit, with one policy call for all of them."""
    return BatchLayout.of(eval_cfg).envs_per_worker


def _failed_unit(unit: WorkUnit, settings: RolloutSettings, reason: str) -> UnitResult:
    """Results of episodes whose every attempt killed its actor: failed, with the reason."""
    episodes = tuple(
        EpisodeResult.failed(e, settings.seed_of(e), reason, unit.attempts) for e in unit.episodes
    )
    return UnitResult(unit, episodes, 0.0)


def _kill(actor: Any) -> None:
    with contextlib.suppress(ValueError):  # not an actor handle Ray knows any more
        ray.kill(actor, no_restart=True)


def _death_reason(exc: RayActorError) -> str:
    """`pid 7730 on 10.0.0.2: The actor is dead because ...` from Ray's many-line message."""
    text = str(exc)
    details = dict(re.findall(r"^\t(\w+): (.*)$", text, flags=re.MULTILINE))
    causes = [line for line in text.splitlines() if line.strip() and not line.startswith("\t")]
    where = f"pid {details['pid']} on {details.get('ip', '?')}: " if "pid" in details else ""
    return where + textwrap.shorten(causes[-1] if causes else type(exc).__name__, 200)
