"""A vector env built for evaluation: lazy workers, per-slot reset and step, no auto-reset.

Gymnasium's vector envs step every sub-env on every call and reset finished ones with a seed
of their own choosing. An evaluation needs the opposite: each episode is bound to a seed
(start_seed + episode index), a finished slot must stay idle or start a specific next episode,
and no simulator or worker process may exist before the task is actually evaluated. This
class keeps the standard `VectorEnv` API (`reset`, `step`, `call`, `close`) for callers that
want it and adds `reset_at` / `step_at` / `render_at` for the rollout loop.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from lerobot.configs.env import TaskSpec
from lerobot.envs.commands import StepResult, error_reply, run_command
from lerobot.envs.slots import RepliesOwed, ResetOutcomes, SlotFailure, SlotRound, StepOutcomes
from lerobot.envs.workers import (
    EnvFactory,
    WorkerProcess,
    WorkerSlot,
    answered_sets,
    auto_worker_spin_s,
    receive_in_arrival_order,
    start_fork_server,
)
from lerobot.utils.gl import default_mujoco_gl
from lerobot.utils.signals import signals_deferred

logger = logging.getLogger(__name__)


class EnvWorkerError(RuntimeError):
    """A sub-env raised, or its worker process died; the message names the env index."""


class _InProcessSlot:
    """A sub-env living in this process; created on its first command (or handed over built)."""

    def __init__(self, env_fn: EnvFactory, env: gym.Env | None = None):
        self._env_fn = env_fn
        self._env: gym.Env | None = env
        self._reply: tuple[str, Any] | None = None

    def send(self, command: str, payload: Any = None) -> None:
        # A stop signal waits for the command, as a worker's does (workers ignore Ctrl-C): raised
        # inside a simulator's constructor it left objects half built (MuJoCo's Renderer without
        # its _mjr_context), whose __del__ printed "Exception ignored" once the run had stopped.
        with signals_deferred():
            try:  # building the env is part of the first command: its failure is the reply, as a worker's
                if self._env is None:
                    self._env = self._env_fn()
                self._reply = ("ok", run_command(self._env, command, payload))
            except Exception as exc:
                self._reply = error_reply(exc)

    def recv(self, timeout: float | None = None) -> tuple[str, Any]:
        """The reply of the last command (it already ran: no timeout can apply in-process)."""
        reply, self._reply = self._reply, None
        return reply

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


class LazyVectorEnv(gym.vector.VectorEnv):
    """`num_envs` copies of one task, started on first use and closed with `close()`.

    Spaces are given by the caller, so that knowing them never builds a simulator. With
    `use_async=True` every sub-env lives in its own process, started with `forkserver` so no
    worker inherits the parent's threads or GL state; the simulator itself is created inside
    the worker on first reset (the env classes are lazy too).

    `in_process_slots=k` keeps the first k sub-envs in this process even with workers for the
    others. Each command is sent to the workers first, then run here while they work: the
    caller steps k envs in the time it would otherwise only wait. Those k have no crash
    isolation (a hang cannot be timed out, a segfault ends the process), as with one env.
    `envs_per_worker=m` gives each worker process m sub-envs, stepped one after the other and
    addressed in one message per round: fewer processes where steps are cheap (state
    observations) or envs outnumber cores. `worker_spin_s`: how long each worker watches its
    pipe for the next command, and this process a worker's pipe for its reply, before
    sleeping (see `lerobot.envs.workers.watch_pipe`); None: `auto_worker_spin_s`.
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFactory],
        single_observation_space: gym.Space,
        single_action_space: gym.Space,
        use_async: bool = False,
        context: str = "forkserver",
        metadata: dict | None = None,
        step_timeout_s: float | None = None,
        preload_modules: Sequence[str] = (),
        task: TaskSpec | None = None,
        in_process_slots: int = 0,
        worker_spin_s: float | None = None,
        envs_per_worker: int = 1,
    ):
        if not env_fns:
            raise ValueError("LazyVectorEnv needs at least one env factory")
        if not 0 <= in_process_slots <= len(env_fns):
            raise ValueError(f"in_process_slots={in_process_slots}: must be in 0..{len(env_fns)}")
        if envs_per_worker < 1:
            raise ValueError(f"envs_per_worker={envs_per_worker}: must be at least 1")
        self.env_fns = list(env_fns)
        self.num_envs = len(self.env_fns)
        self.use_async = use_async and self.num_envs > max(1, in_process_slots)
        self.in_process_slots = in_process_slots if self.use_async else self.num_envs
        """How many slots (the first ones) live in this process."""
        self.envs_per_worker = envs_per_worker
        n_workers = -(-(self.num_envs - self.in_process_slots) // envs_per_worker)
        self._n_workers = n_workers if self.use_async else 0
        self.worker_spin_s = worker_spin_s if worker_spin_s is not None else auto_worker_spin_s(n_workers)
        self.context = context
        self.single_observation_space = single_observation_space
        self.single_action_space = single_action_space
        self.observation_space = batch_space(single_observation_space, self.num_envs)
        self.action_space = batch_space(single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": None, **(metadata or {})}
        self.step_timeout_s = step_timeout_s
        self.preload_modules = tuple(preload_modules)
        self.task = task
        """The task every sub-env runs, when the env was built for one (`make_task_env`)."""
        self.runs_action_chunks = True
        self._slots: list[_InProcessSlot | WorkerSlot] | None = None
        self._owed = RepliesOwed()

    @property
    def steps_in_background(self) -> bool:
        """Whether sent rounds step in worker processes while this process goes on."""
        return self.use_async

    @classmethod
    def adopt(cls, sync_env: gym.vector.SyncVectorEnv, task: TaskSpec | None = None) -> LazyVectorEnv:
        """Per-slot control over the sub-envs of a gymnasium SyncVectorEnv, which are used as they
        are (a crashed one is rebuilt from the SyncVectorEnv's own factory)."""
        env = cls(
            sync_env.env_fns,
            sync_env.single_observation_space,
            sync_env.single_action_space,
            use_async=False,
            metadata=dict(sync_env.metadata),
            task=task,
        )
        env._slots = [
            _InProcessSlot(fn, built) for fn, built in zip(sync_env.env_fns, sync_env.envs, strict=True)
        ]
        return env

    @property
    def started(self) -> bool:
        return self._slots is not None

    def _ensure_started(self) -> list[_InProcessSlot | WorkerSlot]:
        if self._slots is None:
            slots: list[_InProcessSlot | WorkerSlot] = [
                _InProcessSlot(self.env_fns[env_id]) for env_id in range(self.in_process_slots)
            ]
            for first in range(self.in_process_slots, self.num_envs, self.envs_per_worker):
                env_ids = range(first, min(first + self.envs_per_worker, self.num_envs))
                worker = self._start_worker(env_ids)
                slots += [WorkerSlot(worker, index) for index in range(len(env_ids))]
            self._slots = slots
        return self._slots

    def _start_worker(self, env_ids: Sequence[int]) -> WorkerProcess:
        default_mujoco_gl()
        context = mp.get_context(self.context)
        if self.context == "forkserver":
            start_fork_server(self.preload_modules)
        env_fns = [self.env_fns[env_id] for env_id in env_ids]
        return WorkerProcess(env_fns, context, self.single_observation_space, self.worker_spin_s)

    def restart(self, env_ids: Sequence[int]) -> None:
        """Give the given sub-envs fresh envs, e.g. after a crash or hang.

        An env alone in its worker gets a new worker process. One sharing a live worker is
        rebuilt inside it, leaving the others as they are; when the shared worker itself is
        gone, a new one serves all its envs, and the others' next command (unless a reset)
        fails, since their episodes went with the old process.
        """
        slots = self._ensure_started()
        self._owed.check_none(env_ids, "restart")
        for env_id in env_ids:
            slot = slots[env_id]
            if isinstance(slot, _InProcessSlot):
                with contextlib.suppress(Exception):
                    slot.close()
                slots[env_id] = _InProcessSlot(self.env_fns[env_id])
            elif not self._rebuild_in_place(slot):
                self._replace_worker(slot.worker, env_id)

    def _rebuild_in_place(self, slot: WorkerSlot) -> bool:
        worker = slot.worker
        if worker.n_envs == 1 or not worker.process.is_alive():
            return False
        worker.lost.discard(slot.index)
        worker.queue(slot.index, "rebuild", None)
        worker.flush()
        status, _ = worker.reply(slot.index, self.step_timeout_s)
        return status == "ok"

    def _replace_worker(self, old: WorkerProcess, failed_env_id: int) -> None:
        slots = self._ensure_started()
        env_ids = [i for i, slot in enumerate(slots) if isinstance(slot, WorkerSlot) and slot.worker is old]
        with contextlib.suppress(Exception):
            old.close()
        worker = self._start_worker(env_ids)
        for index, env_id in enumerate(env_ids):
            slots[env_id] = WorkerSlot(worker, index)
        worker.lost = {index for index, env_id in enumerate(env_ids) if env_id != failed_env_id}

    def _exchange(self, env_ids: Sequence[int], command: str, payloads: Sequence[Any]) -> list[Any]:
        """Send one command to several sub-envs, then gather replies (or SlotFailures) in order."""
        self._owed.check_none(env_ids, command)
        self._send(env_ids, command, payloads)
        self._read_arrivals(env_ids)
        return self._gather(env_ids)

    def _send(self, env_ids: Sequence[int], command: str, payloads: Sequence[Any]) -> None:
        self._send_commands(
            [(env_id, command, payload) for env_id, payload in zip(env_ids, payloads, strict=True)]
        )

    def _send_commands(self, commands: Sequence[tuple[int, str, Any]]) -> None:
        """Send each (env_id, command, payload): to the workers first, one message per worker,
        so that they work while the in-process slots run theirs (an in-process slot runs its
        command on send)."""
        slots = self._ensure_started()
        workers: dict[int, WorkerProcess] = {}
        for env_id, command, payload in commands:
            slot = slots[env_id]
            if isinstance(slot, WorkerSlot):
                slot.send(command, payload)
                workers[id(slot.worker)] = slot.worker
        for worker in workers.values():
            worker.flush()
        for env_id, command, payload in commands:
            if isinstance(slots[env_id], _InProcessSlot):
                slots[env_id].send(command, payload)

    def _gather(self, env_ids: Sequence[int]) -> list[Any]:
        slots = self._ensure_started()
        outcomes = []
        for env_id in env_ids:
            status, value = slots[env_id].recv(self.step_timeout_s)
            outcomes.append(value if status == "ok" else SlotFailure(env_id, status, value))
        return outcomes

    def _read_arrivals(self, env_ids: Sequence[int]) -> None:
        """Read the replies of these slots' workers as they arrive (`receive_in_arrival_order`),
        where more than one worker answers; once per round, before `_gather` takes them."""
        if self._n_workers < 2:
            return
        receive_in_arrival_order(self._workers_of(env_ids), self.step_timeout_s)

    def _workers_of(self, env_ids: Sequence[int]) -> list[WorkerProcess]:
        """The worker processes of these slots, each once (slots of this process have none)."""
        slots = self._ensure_started()
        workers = {
            id(slot.worker): slot.worker
            for slot in map(slots.__getitem__, env_ids)
            if isinstance(slot, WorkerSlot)
        }
        return list(workers.values())

    def _broadcast(self, env_ids: Sequence[int], command: str, payloads: Sequence[Any]) -> list[Any]:
        """Like `_exchange`, but any failure raises EnvWorkerError naming the env."""
        outcomes = self._exchange(env_ids, command, payloads)
        for outcome in outcomes:
            if isinstance(outcome, SlotFailure):
                raise EnvWorkerError(outcome.describe(command))
        return outcomes

    # --- per-slot API used by the rollout loop -------------------------------------------
    def reset_at(
        self,
        env_ids: Sequence[int],
        seeds: Sequence[int | None],
        options: Sequence[dict | None] | dict | None = None,
        tolerate_failures: bool = False,
    ) -> list[tuple[Any, dict] | SlotFailure]:
        """Reset `env_ids`; `options` is one dict for all of them or one per env.

        With `tolerate_failures`, a failing env yields a SlotFailure in its place instead of
        raising, so the caller can restart it and carry on with the others.
        """
        per_env = options if isinstance(options, Sequence) else [options] * len(env_ids)
        payloads = list(zip(seeds, per_env, strict=True))
        send = self._exchange if tolerate_failures else self._broadcast
        return send(env_ids, "reset", payloads)

    def step_at(
        self,
        env_ids: Sequence[int],
        actions: Sequence[np.ndarray],
        render_ids: Sequence[int] = (),
        tolerate_failures: bool = False,
        blind_ids: Sequence[int] = (),
    ) -> list[StepResult | SlotFailure]:
        """Step only `env_ids`; those also in `render_ids` render a frame in their own worker.

        Those in `blind_ids` (and not in `render_ids`) skip rendering their observation's
        camera images where the env can (`step_without_images`): for observations whose images
        nobody will read, such as the steps a chunking policy takes from its queue. Rendering
        is most of a step's cost; the physics, and so every result, is the same either way.
        """
        send = self._exchange if tolerate_failures else self._broadcast
        return send(env_ids, "step", _step_payloads(env_ids, actions, render_ids, blind_ids))

    def step_and_reset_at(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        """Step the round's stepping slots and reset its resetting ones, failures as
        SlotFailures (`render_ids`, `blind_ids`: as for `step_at`). A slot whose action is a
        (steps, action_dim) chunk steps through it in its worker and answers a ChunkResult.

        Every command is sent before any reply is awaited, so with worker processes a slot
        starting its next episode resets while the others step, instead of holding them up.
        """
        self.send_step_and_reset_at(round_)
        return self.gather_step_and_reset(round_)

    def send_step_and_reset_at(self, round_: SlotRound) -> None:
        """The first half of `step_and_reset_at`: send, answer nothing yet. The workers step
        while the caller does something else (the policy for other slots); the replies come
        with `gather_step_and_reset`. Slots in this process run their command here. Sending
        to a slot again before its replies are gathered is a SlotOrderError."""
        self._owed.sending(round_.slots)
        commands, payloads = _step_commands(
            round_.step_ids, round_.actions, round_.render_ids, round_.blind_ids
        )
        resets = [
            (env_id, "reset", payload)
            for env_id, payload in zip(
                round_.reset_ids, zip(round_.seeds, round_.options, strict=True), strict=True
            )
        ]
        self._send_commands([*zip(round_.step_ids, commands, payloads, strict=True), *resets])

    def gather_step_and_reset(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        """The replies to `round_`, the last one sent to its slots (a SlotOrderError for slots
        sent nothing since their last gather)."""
        self._owed.gathering(round_.slots)
        self._read_arrivals(round_.slots)  # a worker may answer for both
        return self._gather(round_.step_ids), self._gather(round_.reset_ids)

    def answered(
        self, slot_sets: Sequence[Sequence[int]], block: bool = True, gather_s: float = 0.0
    ) -> list[int]:
        """The indices of `slot_sets` whose commands sent last are all answered (slots of this
        process answer on send); with `block`, waits until at least one set is, then up to
        `gather_s` for more (`answered_sets`). The replies are then gathered with
        `gather_step_and_reset` without waiting."""
        worker_sets = [self._workers_of(ids) for ids in slot_sets]
        return answered_sets(worker_sets, block, self.step_timeout_s, gather_s)

    def slots_by_owner(self) -> list[list[int]]:
        """The slots that answer together: each worker process's envs (one message, one reply
        for all of them), and each slot of this process alone. Slots of different groups can
        be stepped independently of one another."""
        groups = [[env_id] for env_id in range(self.in_process_slots)]
        for first in range(self.in_process_slots, self.num_envs, self.envs_per_worker):
            groups.append(list(range(first, min(first + self.envs_per_worker, self.num_envs))))
        return groups

    def render_at(
        self, env_ids: Sequence[int], tolerate_failures: bool = False
    ) -> list[np.ndarray | SlotFailure]:
        send = self._exchange if tolerate_failures else self._broadcast
        return send(env_ids, "render", [None] * len(env_ids))

    # --- standard VectorEnv API ----------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        results = self.reset_at(range(self.num_envs), seeds, options)
        return stack_observations([obs for obs, _ in results]), _stack_infos([i for _, i in results])

    def step(self, actions):
        """Step every sub-env. There is no auto-reset: finished envs must be reset by the caller."""
        results = self.step_at(range(self.num_envs), list(actions))
        return (
            stack_observations([r.observation for r in results]),
            np.array([r.reward for r in results], dtype=np.float64),
            np.array([r.terminated for r in results], dtype=bool),
            np.array([r.truncated for r in results], dtype=bool),
            _stack_infos([r.info for r in results]),
        )

    def render(self) -> tuple[np.ndarray, ...]:
        return tuple(self.render_at(range(self.num_envs)))

    def call(self, name: str, *args, **kwargs) -> tuple:
        return tuple(self._broadcast(range(self.num_envs), "call", [(name, args, kwargs)] * self.num_envs))

    def get_attr(self, name: str) -> tuple:
        return self.call(name)

    def close(self, **kwargs) -> None:
        """Stop every worker (or close every in-process env); the env can be started again."""
        if self._slots is None:
            return
        # A worker process serves several slots: each owner is closed once.
        owners = {id(owner): owner for owner in (_owner_of(slot) for slot in self._slots)}
        for owner in owners.values():
            try:
                owner.close()
            except Exception:  # closing must go on for the other slots
                logger.exception("failed to close a sub-env")
        self._slots = None
        self._owed.clear()

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()


def _owner_of(slot: _InProcessSlot | WorkerSlot) -> _InProcessSlot | WorkerProcess:
    """What holds a slot's env: the slot itself in this process, else its worker process."""
    return slot.worker if isinstance(slot, WorkerSlot) else slot


def _step_payloads(
    env_ids: Sequence[int],
    actions: Sequence[np.ndarray],
    render_ids: Sequence[int],
    blind_ids: Sequence[int] = (),
) -> list[tuple[np.ndarray, bool, bool]]:
    """(action, render a frame?, render the observation's images?) per stepped env."""
    frames, blind = set(render_ids), set(blind_ids)
    return [
        (action, env_id in frames, env_id not in blind)
        for env_id, action in zip(env_ids, actions, strict=True)
    ]


def _step_commands(
    env_ids: Sequence[int],
    actions: Sequence[np.ndarray],
    render_ids: Sequence[int],
    blind_ids: Sequence[int],
) -> tuple[list[str], list[tuple]]:
    """The command and payload of each stepped env: `step` for one action, `steps` (actions,
    render a frame at every step?) for a chunk."""
    single = _step_payloads(env_ids, actions, render_ids, blind_ids)
    commands, payloads = [], []
    for action, want_frame, want_images in single:
        if (action.ndim if isinstance(action, np.ndarray) else np.ndim(action)) == 2:
            commands.append("steps")
            payloads.append((action, want_frame))
        else:
            commands.append("step")
            payloads.append((action, want_frame, want_images))
    return commands, payloads


def stack_observations(observations: Sequence[Any]) -> Any:
    """Stack per-env observations (arrays or nested dicts of arrays) along a new first axis."""
    first = observations[0]
    if isinstance(first, dict):
        return {key: stack_observations([obs[key] for obs in observations]) for key in first}
    if len(observations) == 1:  # a copy, as np.stack makes, at a third of its cost
        return np.asarray(first)[None].copy()
    # np.array of equal-shape arrays is np.stack's result (same dtype promotion; unequal shapes
    # raise) at a fifth of its cost for state vectors, which are stacked on every step.
    return np.array(observations)


def _stack_infos(infos: Sequence[dict]) -> dict:
    """Gymnasium-style vector info: one array per key plus a `_key` presence mask."""
    keys = {key for info in infos for key in info}
    stacked: dict[str, Any] = {}
    for key in sorted(keys):
        present = np.array([key in info for info in infos])
        values = [info.get(key) for info in infos]
        stacked[key] = np.array(values, dtype=object if not all(present) else None)
        stacked[f"_{key}"] = present
    return stacked
