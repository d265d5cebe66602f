import functools
import multiprocessing as mp
import os
import time

import numpy as np
import pytest

from lerobot.envs import workers
from lerobot.envs.commands import StepResult
from lerobot.envs.slots import SlotRound
from lerobot.envs.vector import EnvWorkerError, LazyVectorEnv, stack_observations
from lerobot.envs.workers import auto_worker_spin_s, receive, send, watch_pipe
from tests.fakes import FakeEnv, fake_spaces


def make_vec(n_envs: int, use_async: bool, **env_kwargs) -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    factory = functools.partial(FakeEnv, **env_kwargs)
    return LazyVectorEnv([factory] * n_envs, obs_space, act_space, use_async=use_async)


def test_nothing_starts_before_first_use():
    before = len(mp.active_children())
    env = make_vec(3, use_async=True)
    assert not env.started
    assert len(mp.active_children()) == before
    assert env.observation_space["agent_pos"].shape == (3, 2)
    env.close()


@pytest.mark.parametrize("use_async", [False, True])
def test_reset_and_step_only_the_given_slots(use_async):
    env = make_vec(3, use_async=use_async)
    try:
        resets = env.reset_at([0, 2], seeds=[10, 12])
        assert [obs["agent_pos"][0] for obs, _ in resets] == [10, 12]
        steps = env.step_at([2], [np.zeros(2, np.float32)], render_ids=[2])
        assert steps[0].observation["agent_pos"].tolist() == [12, 1]
        assert steps[0].frame is not None and steps[0].frame[0, 0, 0] == 10
        # slot 0 was not stepped
        assert env.step_at([0], [np.zeros(2, np.float32)])[0].observation["agent_pos"].tolist() == [10, 1]
        assert env.call("task") == ("fake-task",) * 3
    finally:
        env.close()
    assert not env.started


@pytest.mark.parametrize("use_async", [False, True])
def test_standard_api_stacks_and_never_autoresets(use_async):
    env = make_vec(2, use_async=use_async)
    try:
        obs, _ = env.reset(seed=[0, 3])
        assert obs["agent_pos"].shape == (2, 2)
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step(np.zeros((2, 2), np.float32))
        # seed 0 ends after 2 steps, yet it keeps counting: no auto-reset behind our back
        assert obs["agent_pos"][:, 1].tolist() == [3, 3]
        assert reward.tolist() == [1.0, 1.0] and terminated.tolist() == [True, False]
        assert info["is_success"].tolist() == [True, False]
    finally:
        env.close()


def test_worker_exception_names_the_env():
    env = make_vec(2, use_async=True, crash_seeds=(7,))
    try:
        with pytest.raises(
            EnvWorkerError, match=r"env 1 failed during reset \(error\): RuntimeError: fake crash at seed 7"
        ):
            env.reset_at([0, 1], seeds=[1, 7])
    finally:
        env.close()


def test_dead_worker_is_reported_with_its_exit_code():
    env = make_vec(2, use_async=True, die_seeds=(5,))
    try:
        with pytest.raises(
            EnvWorkerError, match=r"env 0 failed during reset \(died\): worker process exited with code 3"
        ):
            env.reset_at([0], seeds=[5])
    finally:
        env.close()
    assert not any(p.is_alive() for p in mp.active_children() if p.name.startswith("Process"))


def test_async_workers_are_separate_processes_and_stop_on_close():
    env = make_vec(2, use_async=True)
    env.reset_at([0, 1], seeds=[0, 1])
    pids = env.call("pid")
    assert len(set(pids)) == 2
    processes = [slot.process for slot in env._slots]
    env.close()
    assert all(not p.is_alive() for p in processes)


@pytest.mark.parametrize("use_async", [False, True])
def test_reset_options_can_differ_per_env(use_async):
    env = make_vec(2, use_async=use_async)
    try:
        env.reset_at([0, 1], seeds=[1, 2], options=[{"episode_index": 4}, {"episode_index": 9}])
        assert env.call("episode_index") == (4, 9)
        env.reset_at([1], seeds=[3], options={"episode_index": 5})
        assert env.call("episode_index") == (4, 5)
    finally:
        env.close()


@pytest.mark.parametrize("use_async", [False, True])
def test_some_slots_step_while_others_reset_in_the_same_round(use_async):
    env = make_vec(3, use_async=use_async, crash_seeds=(7,))
    try:
        env.reset_at([0], seeds=[10])
        steps, resets = env.step_and_reset_at(
            SlotRound(
                [0],
                [np.zeros(2, np.float32)],
                [1, 2],
                seeds=[11, 7],
                options=[{"episode_index": 1}, None],
                render_ids=[0],
            )
        )
        assert steps[0].observation["agent_pos"].tolist() == [10, 1] and steps[0].frame is not None
        (observation, info), failure = resets
        assert observation["agent_pos"].tolist() == [11, 0] and info["init_state_index"] == 1
        assert failure.kind == "error" and "fake crash at seed 7" in failure.message
    finally:
        env.close()


def make_mixed_vec(n_envs: int, in_process: int, **env_kwargs) -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    factory = functools.partial(FakeEnv, **env_kwargs)
    return LazyVectorEnv(
        [factory] * n_envs, obs_space, act_space, use_async=True, in_process_slots=in_process
    )


def test_the_first_slots_can_live_in_this_process_beside_workers():
    env = make_mixed_vec(3, in_process=1)
    try:
        env.reset_at([0, 1, 2], seeds=[0, 1, 2])
        pids = env.call("pid")
        assert pids[0] == os.getpid() and len({os.getpid(), *pids[1:]}) == 3
        steps, resets = env.step_and_reset_at(
            SlotRound([0, 2], [np.zeros(2, np.float32)] * 2, [1], [5], [None])
        )
        assert [s.observation["agent_pos"].tolist() for s in steps] == [[0, 1], [2, 1]]
        assert resets[0][0]["agent_pos"].tolist() == [5, 0]
    finally:
        env.close()


def test_every_slot_in_this_process_starts_no_worker():
    before = len(mp.active_children())
    env = make_mixed_vec(2, in_process=2)
    try:
        env.reset_at([0, 1], seeds=[0, 1])
        assert env.call("pid") == (os.getpid(), os.getpid())
        assert len(mp.active_children()) == before
    finally:
        env.close()


def test_an_in_process_slot_that_raises_is_a_failure_of_that_slot_and_restarts():
    env = make_mixed_vec(2, in_process=1, crash_seeds=(7,))
    try:
        failure, (observation, _) = env.reset_at([0, 1], seeds=[7, 1], tolerate_failures=True)
        assert failure.env_id == 0 and failure.kind == "error" and "fake crash at seed 7" in failure.message
        assert observation["agent_pos"].tolist() == [1, 0]
        env.restart([0])
        assert env.reset_at([0], seeds=[3])[0][0]["agent_pos"].tolist() == [3, 0]
        assert env.call("pid")[0] == os.getpid()
    finally:
        env.close()


def test_an_env_that_cannot_be_built_in_process_fails_its_first_command():
    obs_space, act_space = fake_spaces()

    def broken() -> FakeEnv:
        raise OSError("no display")

    env = LazyVectorEnv([broken, FakeEnv], obs_space, act_space, use_async=True, in_process_slots=1)
    try:
        [failure] = env.reset_at([0], seeds=[0], tolerate_failures=True)
        assert failure.kind == "error" and "OSError: no display" in failure.message
    finally:
        env.close()


@pytest.mark.parametrize(
    ("n_workers", "cores", "spins"),
    [(1, 2, True), (2, 2, False), (15, 16, True), (32, 16, False), (0, 4, False)],
)
def test_workers_watch_their_pipe_only_when_each_has_a_core(n_workers, cores, spins):
    assert (auto_worker_spin_s(n_workers, cores) > 0) == spins


def test_the_main_process_watches_for_replies_as_long_as_its_workers_for_commands():
    obs_space, act_space = fake_spaces()
    env = LazyVectorEnv([FakeEnv] * 2, obs_space, act_space, use_async=True, worker_spin_s=0.002)
    try:
        env.reset_at([0, 1], seeds=[0, 1])
        assert {slot.worker.spin_s for slot in env._ensure_started()} == {0.002}
    finally:
        env.close()


def test_messages_cross_a_worker_pipe_whole_and_its_closing_end_is_an_eof():
    parent, child = mp.Pipe()
    step = StepResult({"agent_pos": np.arange(3, dtype=np.float32)}, 1.0, False, True, {"is_success": True})
    send(parent, [(0, "step", (np.ones(2, np.float32), False, True))])
    send(child, [("ok", step)])
    [(index, command, (action, frame, images))] = receive(child)
    [(status, answer)] = receive(parent)
    assert (index, command, frame, images, action.dtype, action.tolist()) == (
        0,
        "step",
        False,
        True,
        np.float32,
        [1, 1],
    )
    assert status == "ok" and answer.truncated and answer.observation["agent_pos"].tolist() == [0, 1, 2]
    parent.close()
    with pytest.raises(EOFError):
        receive(child)


def test_a_watching_worker_sees_a_command_at_once_and_gives_up_after_its_spin():
    parent, child = mp.Pipe()
    started = time.perf_counter()
    assert not watch_pipe(child, 0.05)  # nothing comes: back after the spin, to sleep in recv
    assert 0.05 <= time.perf_counter() - started < 1.0
    parent.send("step")
    started = time.perf_counter()
    assert watch_pipe(child, 5.0)
    assert time.perf_counter() - started < 1.0 and child.recv() == "step"
    parent.close()  # a closed pipe is "waiting" too: the recv that follows raises EOFError
    assert watch_pipe(child, 5.0)


def make_shared_vec(n_envs: int, per_worker: int, **kwargs) -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    factory = functools.partial(FakeEnv, **kwargs.pop("env_kwargs", {}))
    return LazyVectorEnv(
        [factory] * n_envs, obs_space, act_space, use_async=True, envs_per_worker=per_worker, **kwargs
    )


def test_a_worker_can_step_several_envs_with_the_results_of_one_each():
    zero = [np.zeros(2, np.float32)] * 5
    outcomes = {}
    for per_worker in (1, 2, 5):
        env = make_shared_vec(5, per_worker)
        try:
            env.reset_at(range(5), seeds=[0, 1, 2, 3, 4])
            steps = [env.step_at(range(5), zero) for _ in range(3)]
            outcomes[per_worker] = [[s.observation["agent_pos"].tolist() for s in step] for step in steps]
            pids = env.call("pid")
            assert len(set(pids)) == -(-5 // per_worker) and os.getpid() not in pids
            assert pids[0] == pids[per_worker - 1]
        finally:
            env.close()
    assert outcomes[1] == outcomes[2] == outcomes[5]
    assert not any(p.is_alive() for p in mp.active_children() if p.name.startswith("Process"))


def test_an_env_that_raises_in_a_shared_worker_is_rebuilt_there_and_its_sibling_goes_on():
    env = make_shared_vec(2, 2, env_kwargs={"crash_seeds": (7,)})
    try:
        env.reset_at([0], seeds=[4])
        step = env.step_at([0], [np.zeros(2, np.float32)])[0]
        assert step.observation["agent_pos"].tolist() == [4, 1]
        [failure] = env.reset_at([1], seeds=[7], tolerate_failures=True)
        assert failure.kind == "error" and "fake crash at seed 7" in failure.message
        pid = env.call("pid")[0]
        env.restart([1])
        assert env.reset_at([1], seeds=[3])[0][0]["agent_pos"].tolist() == [3, 0]
        # env 0 kept its episode, in the same process
        assert env.step_at([0], [np.zeros(2, np.float32)])[0].observation["agent_pos"].tolist() == [4, 2]
        assert env.call("pid") == (pid, pid)
    finally:
        env.close()


def test_a_dead_shared_worker_fails_all_its_envs_and_its_replacement_starts_them_afresh():
    env = make_shared_vec(4, 2, env_kwargs={"die_seeds": (5,)})
    try:
        env.reset_at([0, 1, 2, 3], seeds=[0, 1, 2, 3])
        old_pids = env.call("pid")
        steps, resets = env.step_and_reset_at(
            SlotRound([1, 2, 3], [np.zeros(2, np.float32)] * 3, [0], [5], [None])
        )
        assert [getattr(s, "kind", None) for s in [*resets, *steps]] == ["died", "died", None, None]
        env.restart([0])
        # env 1 lost its episode with the old process: its next step says so, a reset works
        [lost] = env.step_at([1], [np.zeros(2, np.float32)], tolerate_failures=True)
        assert lost.kind == "died" and "replaced" in lost.message
        assert env.reset_at([1], seeds=[6])[0][0]["agent_pos"].tolist() == [6, 0]
        assert env.reset_at([0], seeds=[8])[0][0]["agent_pos"].tolist() == [8, 0]
        new_pids = env.call("pid")
        assert new_pids[0] == new_pids[1] != old_pids[0] and new_pids[2:] == old_pids[2:]
    finally:
        env.close()


def test_a_hung_shared_worker_is_killed_after_the_timeout_of_all_its_steps(tmp_path):
    marker = str(tmp_path / "hung")
    env = make_shared_vec(2, 2, step_timeout_s=0.5, env_kwargs={"fail_once": ("hang", 1, marker)})
    try:
        env.reset_at([0, 1], seeds=[0, 1])
        started = time.perf_counter()
        outcomes = env.step_at([0, 1], [np.zeros(2, np.float32)] * 2, tolerate_failures=True)
        assert [o.kind for o in outcomes] == ["timeout", "timeout"]
        assert 1.0 <= time.perf_counter() - started < 30  # two steps: twice the limit
    finally:
        env.close()


def test_stacked_observations_are_what_np_stack_gives_and_unequal_shapes_are_refused():
    observations = [
        {"agent_pos": np.arange(3, dtype=np.float32), "pixels": {"top": np.zeros((2, 2, 3), np.uint8)}},
        {"agent_pos": np.arange(3, dtype=np.float64), "pixels": {"top": np.ones((2, 2, 3), np.uint8)}},
    ]
    stacked = stack_observations(observations)
    expected = np.stack([obs["agent_pos"] for obs in observations])
    assert stacked["agent_pos"].dtype == expected.dtype == np.float64
    np.testing.assert_array_equal(stacked["agent_pos"], expected)
    assert stacked["pixels"]["top"].shape == (2, 2, 2, 3) and stacked["pixels"]["top"][1].all()
    with pytest.raises(ValueError):
        stack_observations([np.zeros(3), np.zeros(4)])


def vec_with_a_slow_first_env(start_s: float) -> LazyVectorEnv:
    """Three workers; the first one's env takes `start_s` to build (at its first reset)."""
    obs_space, act_space = fake_spaces()
    factories = [functools.partial(FakeEnv, start_s=start_s)] + [FakeEnv] * 2
    return LazyVectorEnv(factories, obs_space, act_space, use_async=True)


def record_reads(monkeypatch) -> list:
    """The workers whose reply this process reads, in order."""
    reads = []
    receive_one = workers.WorkerProcess._receive

    def recording(self, timeout):
        reads.append(self)
        return receive_one(self, timeout)

    monkeypatch.setattr(workers.WorkerProcess, "_receive", recording)
    return reads


def test_replies_are_read_as_they_arrive_not_in_slot_order(monkeypatch):
    env = vec_with_a_slow_first_env(start_s=0.5)
    try:
        env.call("task")  # every worker started and its env built: only the first reset is slow
        reads = record_reads(monkeypatch)
        resets = env.reset_at([0, 1, 2], seeds=[10, 11, 12])
        assert [obs["agent_pos"][0] for obs, _ in resets] == [10, 11, 12]
        slow = env._slots[0].worker
        assert len(reads) == 3 and reads[-1] is slow  # the two quick replies were read first
    finally:
        env.close()


def test_a_reply_later_than_the_arrival_wait_is_still_read_in_turn(monkeypatch):
    monkeypatch.setattr(workers, "ARRIVAL_WAIT_S", 0.05)
    env = vec_with_a_slow_first_env(start_s=0.5)
    reads = record_reads(monkeypatch)
    try:
        resets = env.reset_at([0, 1, 2], seeds=[10, 11, 12])
        assert [obs["agent_pos"][0] for obs, _ in resets] == [10, 11, 12]
        assert len(reads) == 3 and {id(w) for w in reads} == {id(slot.worker) for slot in env._slots}
        steps = env.step_at([0, 1, 2], [np.zeros(2, np.float32)] * 3)
        assert [step.observation["agent_pos"].tolist() for step in steps] == [[10, 1], [11, 1], [12, 1]]
    finally:
        env.close()
