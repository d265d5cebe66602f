"""Camera frames travel from env workers through shared memory; the parent owns the blocks."""

import os
from pathlib import Path

import numpy as np
from gymnasium import spaces

from lerobot.envs.factory import make_env
from lerobot.envs.metaworld import MetaworldEnvConfig
from lerobot.envs.shared_obs import SharedBlock, SharedLeaf, plan_layout


def camera_space() -> spaces.Dict:
    image = spaces.Box(0, 255, (96, 96, 3), np.uint8)
    return spaces.Dict(
        {
            "pixels": spaces.Dict({"front": image, "wrist": image}),
            "agent_pos": spaces.Box(-1, 1, (8,), np.float32),
        }
    )


def test_only_big_arrays_are_laid_out_aligned():
    layout = plan_layout(camera_space())
    assert [leaf.path for leaf in layout] == [("pixels", "front"), ("pixels", "wrist")]
    assert layout[0].offset == 0 and layout[1].offset % 64 == 0
    assert layout[1].offset >= layout[0].nbytes == 96 * 96 * 3


def test_put_then_take_restores_the_observation_as_copies():
    parent = SharedBlock.create(camera_space())
    worker = SharedBlock.attach(parent.spec)
    try:
        rng = np.random.default_rng(0)
        front, wrist = (rng.integers(0, 255, (96, 96, 3), dtype=np.uint8) for _ in range(2))
        odd = np.zeros((32, 32, 3), np.uint8)  # not the space's shape: stays in the message
        sent = worker.put({"pixels": {"front": front, "wrist": wrist}, "agent_pos": np.ones(8)})
        assert sent["pixels"] == {"front": SharedLeaf(0), "wrist": SharedLeaf(1)}
        received = parent.take(sent)
        np.testing.assert_array_equal(received["pixels"]["front"], front)
        np.testing.assert_array_equal(received["pixels"]["wrist"], wrist)
        assert not np.shares_memory(received["pixels"]["front"], parent.views[0])
        assert worker.put({"pixels": {"front": odd, "wrist": wrist}})["pixels"]["front"] is odd
    finally:
        worker.close()
        parent.close()
    assert not Path("/dev/shm", parent.memory.name.lstrip("/")).exists()


def shm_path(env, env_id: int) -> Path:
    return Path("/dev/shm", env._slots[env_id].shared.memory.name.lstrip("/"))


def test_metaworld_frames_from_workers_match_in_process_frames(metaworld):
    cfg = MetaworldEnvConfig(task="push-v3", observation_height=96, observation_width=96)
    [workers] = make_env(cfg, n_envs=2, use_async_envs=True)["push-v3"].values()
    [local] = make_env(cfg, n_envs=1, use_async_envs=False)["push-v3"].values()
    try:
        (remote_obs, _), _ = workers.reset_at([0, 1], seeds=[3, 4])
        (local_obs, _) = local.reset_at([0], seeds=[3])[0]
        blocks = [shm_path(workers, i) for i in (0, 1)]
        assert all(path.exists() for path in blocks)
        np.testing.assert_array_equal(remote_obs["pixels"], local_obs["pixels"])
        action = np.full(4, 0.5, np.float32)
        for _ in range(3):
            remote = workers.step_at([0], [action])[0]
            here = local.step_at([0], [action])[0]
            np.testing.assert_array_equal(remote.observation["pixels"], here.observation["pixels"])
            np.testing.assert_array_equal(remote.observation["agent_pos"], here.observation["agent_pos"])
        # A killed worker's block is unlinked when its slot is replaced, the new one has its own.
        os.kill(workers._slots[1].process.pid, 9)
        assert workers.step_at([1], [action], tolerate_failures=True)[0].kind == "died"
        workers.restart([1])
        assert not blocks[1].exists() and shm_path(workers, 1) != blocks[1]
        workers.reset_at([1], seeds=[4])
    finally:
        workers.close()
        local.close()
    assert not any(path.exists() for path in blocks)


def shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def test_a_block_that_does_not_fit_falls_back_to_the_pipe(monkeypatch):
    """A full /dev/shm (Docker's 64 MB default) must not kill the worker with SIGBUS at its first
    frame: the block's pages are reserved in the parent, and ENOSPC there means the pipe."""
    import errno

    from lerobot.envs import shared_obs
    from lerobot.envs.workers import _shared_block_for

    def no_space(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    created = []
    real_shared_memory = shared_obs.shared_memory.SharedMemory

    def recording_shared_memory(*args, **kwargs):
        memory = real_shared_memory(*args, **kwargs)
        created.append(memory.name)
        return memory

    monkeypatch.setattr(shared_obs.os, "posix_fallocate", no_space)
    monkeypatch.setattr(shared_obs.shared_memory, "SharedMemory", recording_shared_memory)
    assert _shared_block_for(camera_space()) is None
    assert created, "no block was attempted"
    leftover = {name.lstrip("/") for name in created} & shm_entries()
    assert not leftover  # the block that did not fit was unlinked (other processes' blocks aside)


def test_a_block_is_reserved_when_created():
    block = SharedBlock.create(camera_space())
    try:
        path = Path("/dev/shm") / block.memory.name
        if path.exists():  # Linux: the pages are allocated, not a sparse promise
            assert path.stat().st_blocks * 512 >= block.memory.size
    finally:
        block.close()
