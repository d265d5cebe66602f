"""Episodes/s of evaluators sharing one policy server against each loading its own policy,
and the protocol's cost per step.

The policy stands in for a model on one GPU: every call holds a lock shared by all processes
for `--sleep-ms` (plus `--per-row-ms` per row), so K local copies of the model take turns on
"the GPU" as K processes on one real GPU would, while the server makes one call for the rows of
every evaluator that asked within its batch window. Each evaluator is its own process with
its own Meta-World env(s), stepped in-process (state observations, no rendering); all of them
start together once built, connected and warmed up, so start-up is not timed.

    python benchmarks/remote_policy.py --evaluators 1 2 4 --sleep-ms 20
    python benchmarks/remote_policy.py --overhead-only

`--overhead-only` (also run after the scaling table) times request round trips against a
server whose policy does nothing, for payloads from a state vector to LIBERO's two 256x256
cameras, against calling the same policy in-process: the milliseconds a remote policy adds
to every step.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import time
import urllib.request

import numpy as np

SPAWN = mp.get_context("spawn")


def make_sleepy_policy(sleep_ms: float, per_row_ms: float, gpu_lock, action_dim: int = 4):
    """Random actions after holding `gpu_lock` for sleep_ms + per_row_ms x rows."""
    from lerobot.policies.random.configuration_random import RandomConfig
    from lerobot.policies.random.modeling_random import RandomPolicy

    class SleepyPolicy(RandomPolicy):
        name = "sleepy"

        def select_action(self, batch):
            if sleep_ms or per_row_ms:
                rows = next(v for v in batch.values() if hasattr(v, "shape")).shape[0]
                with gpu_lock:
                    time.sleep((sleep_ms + per_row_ms * rows) / 1000)
            return super().select_action(batch)

    return SleepyPolicy(RandomConfig(device="cpu"), -np.ones(action_dim), np.ones(action_dim))


def serve(
    port: int,
    sleep_ms: float,
    per_row_ms: float,
    gpu_lock,
    max_batch: int,
    window_ms: float,
    action_dim: int = 4,
) -> None:
    import torch

    from lerobot.serving.server import PolicyServer

    torch.set_num_threads(1)
    policy = make_sleepy_policy(sleep_ms, per_row_ms, gpu_lock, action_dim)
    PolicyServer(policy, port=port, max_batch=max_batch, batch_timeout_ms=window_ms).serve_forever()


def evaluate(index: int, args: argparse.Namespace, port: int | None, gpu_lock, ready, start, results) -> None:
    """One evaluator: build env and policy, wait for the start, run its episodes, report."""
    import torch

    import lerobot.envs  # noqa: F401
    from lerobot.envs.factory import make_env_config, make_task_env
    from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes
    from lerobot.policies.websocket.configuration_websocket import WebsocketConfig
    from lerobot.policies.websocket.modeling_websocket import WebsocketPolicy

    torch.set_num_threads(1)
    cfg = make_env_config("metaworld", task=args.task, obs_type="state", episode_length=args.episode_length)
    task = cfg.tasks()[0]
    env = make_task_env(cfg, task, args.envs_per_evaluator, False)
    if port is None:
        policy = make_sleepy_policy(args.sleep_ms, args.per_row_ms, gpu_lock)
    else:
        policy = WebsocketPolicy(WebsocketConfig(port=port), cfg)
    episodes = range(index * args.episodes, (index + 1) * args.episodes)
    run_episodes(env, policy, episodes[:1], RolloutSettings(start_seed=10_000), task)  # warm up
    ready.put(index)
    start.wait()
    began = time.perf_counter()
    done = run_episodes(env, policy, episodes, RolloutSettings(start_seed=0), task)
    results.put((len(done), sum(r.n_steps for r in done), began, time.perf_counter()))
    env.close()


def run_setting(args: argparse.Namespace, n_evaluators: int, served: bool) -> dict:
    gpu_lock = SPAWN.Lock()
    ready, start, results = SPAWN.Queue(), SPAWN.Event(), SPAWN.Queue()
    server, port = None, None
    if served:
        port = free_port()
        server = SPAWN.Process(
            target=serve,
            args=(port, args.sleep_ms, args.per_row_ms, gpu_lock, args.max_batch, args.window_ms),
        )
        server.start()
        wait_for_health(port)
    evaluators = [
        SPAWN.Process(target=evaluate, args=(i, args, port, gpu_lock, ready, start, results))
        for i in range(n_evaluators)
    ]
    for process in evaluators:
        process.start()
    for _ in evaluators:
        ready.get(timeout=600)  # every evaluator built, connected and warmed up
    start.set()
    reports = [results.get(timeout=1800) for _ in evaluators]
    for process in evaluators:
        process.join(60)
    if server is not None:
        server.terminate()
        server.join(30)
    episodes = sum(r[0] for r in reports)
    steps = sum(r[1] for r in reports)
    wall = max(r[3] for r in reports) - min(r[2] for r in reports)
    return {"episodes": episodes, "steps": steps, "wall_s": wall, "episodes_per_s": episodes / wall}


def wait_for_health(port: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("policy server did not start")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- protocol overhead ----------------------------------------------------------------------

PAYLOADS = {
    "state (39 floats), 1 row": (1, {"observation.environment_state": (39,)}),
    "1 camera 256x256 + state, 1 row": (1, {"observation.image": (256, 256, 3), "observation.state": (8,)}),
    "LIBERO: 2 cameras 256x256 + state, 1 row": (
        1,
        {
            "observation.images.image": (256, 256, 3),
            "observation.images.image2": (256, 256, 3),
            "observation.state": (8,),
        },
    ),
    "LIBERO: 2 cameras 256x256 + state, 10 rows": (
        10,
        {
            "observation.images.image": (256, 256, 3),
            "observation.images.image2": (256, 256, 3),
            "observation.state": (8,),
        },
    ),
}


def measure_overhead(n_calls: int) -> list[tuple[str, float, float]]:
    """(payload, ms per call in-process, ms per call through a server in another process) for
    a policy that returns random actions at once: what the protocol adds to every step."""
    import torch

    from lerobot.policies.websocket.configuration_websocket import WebsocketConfig
    from lerobot.policies.websocket.modeling_websocket import WebsocketPolicy
    from lerobot.processor.observation import images_to_tensor

    torch.set_num_threads(1)
    port, unused_lock = free_port(), SPAWN.Lock()  # kept alive until the child has it
    server = SPAWN.Process(target=serve, args=(port, 0.0, 0.0, unused_lock, 32, 5.0, 7))
    server.start()
    rows_out = []
    try:
        wait_for_health(port)
        for name, (rows, shapes) in PAYLOADS.items():
            rng = np.random.default_rng(0)
            batch = {}
            for key, shape in shapes.items():
                if len(shape) == 3:
                    batch[key] = images_to_tensor(rng.integers(0, 256, (rows, *shape), dtype=np.uint8))
                else:
                    batch[key] = torch.from_numpy(rng.normal(size=(rows, *shape)).astype(np.float32))
            batch["task"] = ["put the bowl on the plate"] * rows
            local = make_sleepy_policy(0.0, 0.0, None, 7)
            remote = WebsocketPolicy(WebsocketConfig(port=port))
            rows_out.append((name, time_calls(local, batch, n_calls), time_calls(remote, batch, n_calls)))
            remote.close()
    finally:
        server.terminate()
        server.join(30)
    return rows_out


def time_calls(policy, batch: dict, n_calls: int) -> float:
    for _ in range(5):
        policy.select_action(batch)
    began = time.perf_counter()
    for _ in range(n_calls):
        policy.select_action(batch)
    return 1000 * (time.perf_counter() - began) / n_calls


def describe_machine() -> str:
    from lerobot.evaluation.store.provenance import cpu_model

    cpu = cpu_model() or platform.processor() or "?"
    return f"{os.cpu_count()} cores ({cpu}), load average {os.getloadavg()[0]:.1f} at start, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--evaluators", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--episodes", type=int, default=4, help="per evaluator")
    parser.add_argument("--episode-length", type=int, default=50)
    parser.add_argument("--envs-per-evaluator", type=int, default=1)
    parser.add_argument("--task", default="reach-v3")
    parser.add_argument("--sleep-ms", type=float, default=20.0, help="'GPU' time per policy call")
    parser.add_argument("--per-row-ms", type=float, default=0.0, help="extra 'GPU' time per row of a call")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--window-ms", type=float, default=5.0, help="the server's --batch_timeout_ms")
    parser.add_argument("--overhead-calls", type=int, default=200)
    parser.add_argument("--overhead-only", action="store_true")
    args = parser.parse_args()
    print(f"machine: {describe_machine()}")
    if not args.overhead_only:
        print(
            f"{args.task}, {args.episodes} episodes x {args.episode_length} steps per evaluator, "
            f"{args.envs_per_evaluator} env(s) each; policy call {args.sleep_ms:g} ms + {args.per_row_ms:g} ms/row "
            f"on one shared 'GPU'; server window {args.window_ms:g} ms"
        )
        print(f"{'evaluators':>10}{'local ep/s':>12}{'served ep/s':>13}{'served/local':>14}")
        for n in args.evaluators:
            local = run_setting(args, n, served=False)
            served = run_setting(args, n, served=True)
            ratio = served["episodes_per_s"] / local["episodes_per_s"]
            print(f"{n:>10}{local['episodes_per_s']:>12.2f}{served['episodes_per_s']:>13.2f}{ratio:>14.2f}")
    print(f"protocol overhead ({args.overhead_calls} calls each, server in its own process, instant policy)")
    print(f"{'payload':<46}{'in-process ms':>15}{'served ms':>11}{'added ms':>10}")
    for name, local_ms, served_ms in measure_overhead(args.overhead_calls):
        print(f"{name:<46}{local_ms:>15.3f}{served_ms:>11.3f}{served_ms - local_ms:>10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
