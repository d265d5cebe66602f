"""Env worker processes: each steps one or more sub-envs, one message per round.

The parent (`lerobot.envs.vector.LazyVectorEnv`) queues each round's commands per worker and
sends them together; the worker runs them in order and answers once. Camera frames travel
through a shared memory block per env (lerobot.envs.shared_obs), the rest through the pipe.
Workers come from multiprocessing's fork server, which imports the simulator package once.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import pickle
import select
import signal
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing import forkserver, spawn
from typing import Any

import gymnasium as gym

from lerobot.envs.commands import error_reply, run_command
from lerobot.envs.shared_obs import SharedBlock, SharedSpec, map_observation
from lerobot.envs.wire import pack_payload, pack_reply, unpack_payload, unpack_reply
from lerobot.utils.gl import default_mujoco_gl
from lerobot.utils.threads import usable_cores

logger = logging.getLogger(__name__)

EnvFactory = Callable[[], gym.Env]
STARTUP_TIMEOUT_S = 600.0
"""How long a fresh worker may take to answer its first command, which builds the simulator
(seconds for Meta-World, tens of seconds for LIBERO on a loaded machine): start-up is not a
hung step, so `step_timeout_s` applies from the second command on."""


def _worker_main(
    conn, env_fns: Sequence[EnvFactory], shared: Sequence[SharedSpec | None], spin_s: float = 0.0
) -> None:
    """Serve the commands for `len(env_fns)` sub-envs until told to close or the parent goes away.

    Each message is one round's commands, a list of (env index, command, payload), run in
    order; the reply is the list of their outcomes, ("ok", value) or ("error", traceback), so
    a worker stepping several envs costs one round trip per round, not one per env. An env is
    built on its first command. With a `shared` block for an env, the big arrays of its
    observations go through that shared memory (see lerobot.envs.shared_obs) instead of the
    pipe; the small arrays of step messages travel packed (lerobot.envs.wire). With `spin_s`,
    the worker watches its pipe that long after each reply before it sleeps (`watch_pipe`).
    """
    # Ctrl-C goes to the whole process group; the parent decides how to stop its workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    envs: list[gym.Env | None] = [None] * len(env_fns)
    blocks = [SharedBlock.attach(spec) if spec is not None else None for spec in shared]
    try:
        while True:
            try:
                watch_pipe(conn, spin_s)
                commands = receive(conn)
            except EOFError:
                return
            if commands == "close":
                send(conn, "closed")
                return
            send(conn, [_serve(envs, env_fns, blocks, *command) for command in commands])
    finally:
        for env in envs:
            if env is not None:
                with contextlib.suppress(Exception):
                    env.close()


def _serve(
    envs: list[gym.Env | None],
    env_fns: Sequence[EnvFactory],
    blocks: Sequence[SharedBlock | None],
    index: int,
    command: str,
    payload: Any,
) -> tuple[str, Any]:
    """One command for env `index` of a worker: ("ok", reply) or ("error", traceback).
    `rebuild` closes the env; the next command builds a fresh one."""
    try:
        if command == "rebuild":
            env, envs[index] = envs[index], None
            if env is not None:
                env.close()
            return ("ok", None)
        if envs[index] is None:
            envs[index] = env_fns[index]()
        reply = run_command(envs[index], command, unpack_payload(command, payload))
        block = blocks[index]
        if block is not None:
            reply = map_observation(reply, command, block.put)
        return ("ok", pack_reply(command, reply))
    except Exception as exc:  # sent to the parent, which reports it with the env index
        return error_reply(exc)


def send(conn, message: Any) -> None:
    """One message over a worker's pipe, pickled as plain data: multiprocessing's own `send`
    builds a pickler with its dispatch table copied for every message (for handles and
    connections, which these messages never hold), 2 us a message on each side."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def receive(conn) -> Any:
    """The next message `send` sent over the pipe (EOFError once the other end is gone)."""
    return pickle.loads(conn.recv_bytes())


def watch_pipe(conn, spin_s: float) -> bool:
    """Whether a message is waiting: True once one is, False after `spin_s` without one (the
    caller's recv then sleeps).

    A process asleep on its pipe is woken by the kernel when the next message arrives, which
    on a VM took 70-80 us here, on every step, in the critical path: at half-millisecond
    steps, a sixth of a lockstep round; and its next simulator step ran slower, its core's
    caches cold after the idle. Watching the pipe for a moment instead answers at once, at
    the price of a busy core during the wait; worth it only when every worker and the main
    process have a core of their own (`LazyVectorEnv`'s `worker_spin_s`). Both sides watch:
    a worker for its next command, the main process for a worker's reply.
    """
    if spin_s <= 0:
        return False
    # One poll object for the whole watch: `Connection.poll` builds a selector on every call,
    # and that churn of objects slowed the simulator step that followed it by 20-30 us.
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return bool(_spin_poll(poller, time.perf_counter() + spin_s))


def _spin_poll(poller: select.poll, until: float) -> list[tuple[int, int]]:
    """The poller's ready descriptors, polled without sleeping until some are or `until`
    (perf_counter) has passed: then none, or those that happened to be ready at the last look."""
    while True:
        ready = poller.poll(0)
        if ready or time.perf_counter() >= until:
            return ready


class WorkerProcess:
    """A worker process stepping one or more sub-envs in turn, spoken to over a pipe.

    Commands for its envs are queued, then sent together (`flush`): one message and one
    reply per round, whatever the number of envs.
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFactory],
        context: mp.context.BaseContext,
        observation_space: gym.Space | None = None,
        spin_s: float = 0.0,
    ):
        self.n_envs = len(env_fns)
        self.shared = [_shared_block_for(observation_space) for _ in env_fns]
        self._conn, child_conn = context.Pipe()
        specs = [block.spec if block is not None else None for block in self.shared]
        self.process = context.Process(
            target=_worker_main, args=(child_conn, list(env_fns), specs, spin_s), daemon=True
        )
        start_process(self.process, needs_main=refers_to_main(env_fns))
        child_conn.close()
        self.spin_s = spin_s
        """How long this side watches the pipe for a reply before it sleeps (`watch_pipe`)."""
        self._queued: list[tuple[int, str, Any]] = []
        self._in_flight: list[tuple[int, str, int]] = []
        """(env index, command, steps it counts for the timeout) of the message sent last."""
        self._replies: dict[int, tuple[str, Any]] = {}
        self._answered = False
        self.lost: set[int] = set()
        """Envs whose episode went with the process this one replaced (`LazyVectorEnv.restart`):
        their next command other than a reset fails."""

    def queue(self, index: int, command: str, payload: Any) -> None:
        self._queued.append((index, command, payload))

    def answer_now(self, index: int, status: str, message: str) -> None:
        """Make env `index`'s next reply a failure without asking the worker."""
        self.lost.discard(index)
        self._replies[index] = (status, message)

    def flush(self) -> None:
        """Send the queued commands in one message."""
        if not self._queued:
            return
        self._in_flight = [
            (index, command, len(payload[0]) if command == "steps" else 1)
            for index, command, payload in self._queued
        ]
        message = [
            (index, command, pack_payload(command, payload)) for index, command, payload in self._queued
        ]
        self._queued = []
        # A dead worker is reported by reply(), with its exit code.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            send(self._conn, message)

    @property
    def awaiting_reply(self) -> bool:
        """Whether a message was sent whose reply has not been read."""
        return bool(self._in_flight)

    def fileno(self) -> int:
        return self._conn.fileno()

    def reply(self, index: int, timeout: float | None) -> tuple[str, Any]:
        """Env `index`'s reply to the last message (received with the others' on first ask)."""
        if index not in self._replies:
            self._receive(timeout)
        return self._replies.pop(index)

    def _receive(self, timeout: float | None) -> None:
        """The worker's replies; a hung worker is killed after `timeout` seconds per step of the
        message (its first reply, which includes building the simulators, gets at least
        STARTUP_TIMEOUT_S): the limit is for one hung step."""
        sent, self._in_flight = self._in_flight, []
        if not sent:  # a caller bug, not the worker's: never block on a reply nobody asked for
            raise RuntimeError("no command in flight for this worker")
        if timeout is not None:
            timeout *= max(1, sum(steps for _, _, steps in sent))
            if not self._answered:
                timeout = max(timeout, STARTUP_TIMEOUT_S)
        try:
            waiting = watch_pipe(self._conn, self.spin_s)
            if timeout is not None and not waiting and not self._conn.poll(timeout):
                self.process.kill()
                self.process.join(timeout=5.0)
                failure = ("timeout", f"no answer within {timeout:g}s; worker killed")
                self._replies.update((index, failure) for index, _, _ in sent)
                return
            outcomes = receive(self._conn)
            self._answered = True
        except (EOFError, ConnectionResetError, OSError):
            self.process.join(timeout=1.0)
            failure = ("died", f"worker process exited with code {self.process.exitcode}")
            self._replies.update((index, failure) for index, _, _ in sent)
            return
        for (index, command, _), (status, value) in zip(sent, outcomes, strict=True):
            if status == "ok":
                value = unpack_reply(command, value)
                block = self.shared[index]
                if block is not None:
                    value = map_observation(value, command, block.take)
            self._replies[index] = (status, value)

    def close(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
                send(self._conn, "close")
            if self._conn.poll(5.0):
                with contextlib.suppress(EOFError, OSError):
                    receive(self._conn)
            self.process.join(timeout=5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5.0)
        self._conn.close()
        for block in self.shared:  # after the worker is gone: nothing writes to them any more
            if block is not None:
                block.close()
        self.shared = []


ARRIVAL_WAIT_S = 1.0
"""How long `receive_in_arrival_order` waits for the next reply before it leaves the rest to
`WorkerProcess.reply`, which reads them one by one and times out a hung worker."""


def receive_in_arrival_order(workers: Sequence[WorkerProcess], timeout: float | None) -> None:
    """Read the replies of several workers in the order they arrive, not in slot order.

    Read in slot order, a slow first worker holds up the reading of every reply behind it,
    and the main process unpacks them all only once it answers; read as they arrive, the
    unpacking of each overlaps with the stepping of the workers still busy, and a round ends
    about one unpacking after its last reply. With `spin_s` the workers' pipes are watched
    before this process sleeps on them, as `watch_pipe` does for one. Replies that do not
    arrive within ARRIVAL_WAIT_S of the last are left to `WorkerProcess.reply` (and its
    timeout); `timeout` is `reply`'s, for the replies read here.
    """
    waiting = {worker.fileno(): worker for worker in workers if worker.awaiting_reply}
    if len(waiting) < 2:
        return
    poller = select.poll()
    for fd in waiting:
        poller.register(fd, select.POLLIN)
    watch_until = time.perf_counter() + max(worker.spin_s for worker in waiting.values())
    while waiting:
        ready = _spin_poll(poller, watch_until) or poller.poll(ARRIVAL_WAIT_S * 1000)
        if not ready:
            return
        for fd, _ in ready:
            poller.unregister(fd)
            waiting.pop(fd)._receive(timeout)


def answered_sets(
    worker_sets: Sequence[Sequence[WorkerProcess]], block: bool, timeout: float | None, gather_s: float = 0.0
) -> list[int]:
    """The indices of the sets whose every worker has answered its last message, reading the
    replies that have arrived; with `block`, waits until at least one set has, then up to
    `gather_s` more for the others.

    For rows that advance independently (`--eval.independent_rows`): the caller computes the
    next actions of whichever workers are back, together, while the others still step; a
    policy call that costs `gather_s` whatever its rows is better spent on more of them. A
    set that waits on nothing is answered at once. When no reply comes within ARRIVAL_WAIT_S,
    the first unanswered worker is read with `reply`'s own `timeout`, so a hung worker is
    killed as in lockstep.
    """
    waiting = {
        worker.fileno(): worker for workers in worker_sets for worker in workers if worker.awaiting_reply
    }
    poller = select.poll()
    for fd in waiting:
        poller.register(fd, select.POLLIN)

    def answered() -> list[int]:
        return [i for i, workers in enumerate(worker_sets) if not any(w.awaiting_reply for w in workers)]

    done = answered()
    gather_until: float | None = None
    while waiting:
        if done and gather_until is None:  # the first set is back: the window starts
            gather_until = time.perf_counter() + gather_s
        if not block:
            wait_s = 0.0
        elif gather_until is None:
            wait_s = ARRIVAL_WAIT_S
        else:
            wait_s = max(0.0, gather_until - time.perf_counter())
        ready = poller.poll(wait_s * 1000)
        if not ready:
            if done or not block:
                break
            ready = [(next(iter(waiting)), select.POLLIN)]  # nothing for a while: wait on one, timed
        for fd, _ in ready:
            poller.unregister(fd)
            waiting.pop(fd)._receive(timeout)
        done = answered()
    return done


class WorkerSlot:
    """One sub-env of a worker process, as the vector env addresses it."""

    def __init__(self, worker: WorkerProcess, index: int):
        self.worker, self.index = worker, index

    @property
    def process(self) -> mp.process.BaseProcess:
        return self.worker.process

    @property
    def shared(self) -> SharedBlock | None:
        """The shared memory block of this env's observations (None: they use the pipe)."""
        return self.worker.shared[self.index] if self.worker.shared else None

    def send(self, command: str, payload: Any = None) -> None:
        """Queue the command; the vector env flushes each worker once all are queued."""
        if self.index in self.worker.lost and command != "reset":
            # Its env went with a replaced process: only a new episode can start on it.
            self.worker.answer_now(
                self.index, "died", "its worker process was replaced after another env failed"
            )
            return
        self.worker.lost.discard(self.index)
        self.worker.queue(self.index, command, payload)

    def recv(self, timeout: float | None = None) -> tuple[str, Any]:
        return self.worker.reply(self.index, timeout)


def _shared_block_for(observation_space: gym.Space | None) -> SharedBlock | None:
    """A shared block for the space's camera frames; None (the pipe) when there are none or
    shared memory is unavailable (e.g. no /dev/shm in a container)."""
    if observation_space is None:
        return None
    try:
        return SharedBlock.create(observation_space)
    except OSError as exc:
        logger.warning(
            "shared memory unavailable (%s); observations go through the pipe "
            "(in a container, a bigger /dev/shm avoids this: docker run --shm-size=1g)",
            exc,
        )
        return None


WORKER_SPIN_S = 0.001
"""How long a worker watches its pipe after a reply, and the main process a worker's pipe for
its reply, when each has a core of its own: a policy step of the main process (batching, a
small policy, the other replies), or a state-only simulator step, fits in it."""


_MAIN_FIXUP_KEYS = ("init_main_from_path", "init_main_from_name")
_starting = threading.Lock()


def refers_to_main(obj: Any) -> bool:
    """Whether unpickling `obj` imports the main script (a function or class defined there):
    pickle names such globals by module, so the script's module name is in the bytes. Anything
    that does not pickle plainly counts as referring to it."""
    try:
        return b"__main__" in pickle.dumps(obj)
    except Exception:
        return True


def start_process(process: mp.process.BaseProcess, needs_main: bool) -> None:
    """Start `process`, without re-running the main script in it unless it `needs_main`.

    A fork-server (or spawn) child first imports the parent's main script, so that what was
    pickled from it can be found; a script that builds envs at its top level, without an
    `if __name__ == "__main__":` guard, then builds them again in every worker, which fails
    ("bootstrapping phase"). LeRobot's envs fork and never do that, so such scripts are common;
    where the envs come from importable modules (every factory of this package), the workers
    start without the script. multiprocessing has no option for it: its preparation step is
    swapped for one that drops the script while this start runs. This module's starts take
    turns, those that keep the script too, so none lands in another's swap (a process started
    by other code in that instant would start without the script as well).
    """
    with _starting:
        if needs_main:
            process.start()
            return
        prepare = spawn.get_preparation_data

        def without_main(name: str) -> dict[str, Any]:
            data = prepare(name)
            for key in _MAIN_FIXUP_KEYS:
                data.pop(key, None)
            return data

        spawn.get_preparation_data = without_main
        try:
            process.start()
        finally:
            spawn.get_preparation_data = prepare


def auto_worker_spin_s(n_workers: int, cpu_count: int | None = None) -> float:
    """WORKER_SPIN_S when every worker and the main process have a core of their own, else 0:
    a watching worker would take the core another one needs."""
    cores = cpu_count if cpu_count is not None else usable_cores()
    return WORKER_SPIN_S if n_workers > 0 and n_workers + 1 <= cores else 0.0


def start_fork_server(preload_modules: Sequence[str] = ()) -> None:
    """Start multiprocessing's fork server, if not yet running, without waiting for it.

    The server imports `preload_modules` once, so each worker forked from it starts with the
    simulator package loaded (seconds per worker and per task otherwise); that import runs in
    the background from here on. Only the first list set before the server starts counts.
    Calling this early (before loading a policy) overlaps the import with the caller's work.
    """
    # MuJoCo picks its GL backend when first imported, in whichever process imports it first:
    # the fork server preloading a simulator package, or a worker. Both inherit this process's
    # environment, so the headless default is set here, before either exists.
    default_mujoco_gl()
    if preload_modules:
        mp.get_context("forkserver").set_forkserver_preload(list(preload_modules))
    forkserver.ensure_running()
