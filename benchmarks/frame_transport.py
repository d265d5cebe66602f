"""What does it cost to bring one observation from an env worker to the main process?

Measures, in one run, a worker answering N requests with a camera observation (by default one
480x480 RGB frame plus a state vector, as Meta-World's `pixels_agent_pos`):
  (a) pickled through the pipe, as a plain multiprocessing worker would send it;
  (b) through the worker's shared memory block (lerobot.envs.shared_obs), as our env workers
      do: the frame is copied into the block, a small placeholder is pickled, and the main
      process copies the frame out.
No simulator runs, so only the transport is timed.

    python benchmarks/frame_transport.py --size 480 --cameras 1 --requests 2000
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time

import numpy as np
from gymnasium import spaces

from lerobot.envs.shared_obs import SharedBlock, SharedSpec


def observation_space(size: int, cameras: int) -> spaces.Dict:
    image = spaces.Box(0, 255, (size, size, 3), np.uint8)
    pixels = image if cameras == 1 else spaces.Dict({f"camera{i}": image for i in range(cameras)})
    return spaces.Dict({"pixels": pixels, "agent_pos": spaces.Box(-1, 1, (4,), np.float32)})


def serve(conn, space: spaces.Dict, spec: SharedSpec | None, requests: int) -> None:
    observation = space.sample()
    block = SharedBlock.attach(spec) if spec is not None else None
    for _ in range(requests):
        conn.recv()
        conn.send(block.put(observation) if block is not None else observation)
    if block is not None:
        block.close()


def time_transport(space: spaces.Dict, shared: bool, requests: int) -> float:
    """Seconds per request-and-observation round trip."""
    block = SharedBlock.create(space) if shared else None
    ctx = mp.get_context("forkserver")
    parent, child = ctx.Pipe()
    worker = ctx.Process(target=serve, args=(child, space, block.spec if block else None, requests))
    worker.start()
    parent.send(None)  # the first round trip includes the worker's start
    parent.recv()
    started = time.perf_counter()
    for _ in range(requests - 1):
        parent.send(None)
        observation = parent.recv()
        if block is not None:
            observation = block.take(observation)
    seconds = (time.perf_counter() - started) / (requests - 1)
    worker.join()
    if block is not None:
        block.close()
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=480, help="frame height and width")
    parser.add_argument("--cameras", type=int, default=1)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="alternate (a) and (b), keep the best of each")
    args = parser.parse_args()
    space = observation_space(args.size, args.cameras)
    pipe, shared = [], []
    for _ in range(args.repeats):
        pipe.append(time_transport(space, shared=False, requests=args.requests))
        shared.append(time_transport(space, shared=True, requests=args.requests))
    frame_mb = args.size * args.size * 3 * args.cameras / 1e6
    print(f"{args.cameras} camera(s) of {args.size}x{args.size} ({frame_mb:.2f} MB per observation)")
    print(f"  pipe (pickled):  {min(pipe) * 1e3:7.3f} ms per observation")
    print(f"  shared memory:   {min(shared) * 1e3:7.3f} ms per observation")
    print(f"  ratio pipe / shared memory: x{min(pipe) / min(shared):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
