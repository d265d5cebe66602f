"""The declared slot API: who implements which half, and the send/gather order per slot."""

import functools

import gymnasium as gym
import numpy as np
import pytest

from lerobot.envs.gym_vector import WholeBatchEnv
from lerobot.envs.slots import SlotEnv, SlotGroup, SlotOrderError, SlotRound, SplitSlotEnv, task_of
from lerobot.envs.vector import LazyVectorEnv
from tests.fakes import FakeEnv, fake_spaces


def workers_env(n_envs: int = 3, in_process: int = 0) -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    return LazyVectorEnv(
        [functools.partial(FakeEnv)] * n_envs,
        obs_space,
        act_space,
        use_async=True,
        in_process_slots=in_process,
    )


def resets(slots: list[int], seeds: list[int]) -> SlotRound:
    return SlotRound(reset_ids=slots, seeds=seeds, options=[None] * len(slots))


def zeros(n: int) -> list[np.ndarray]:
    return [np.zeros(2, np.float32)] * n


def test_the_lazy_vector_env_and_its_groups_split_rounds_and_a_whole_batch_env_does_not():
    env = workers_env()
    try:
        assert isinstance(env, SplitSlotEnv) and env.steps_in_background
        group = SlotGroup(env, [1, 2])
        assert isinstance(group, SplitSlotEnv) and group.slots_by_owner() == [[0], [1]]
        whole = WholeBatchEnv(gym.vector.SyncVectorEnv([FakeEnv, FakeEnv]), task_of(env))
        assert isinstance(whole, SlotEnv) and not isinstance(whole, SplitSlotEnv)
    finally:
        env.close()


def test_a_second_send_before_the_gather_is_an_error_naming_the_slots_not_a_hang():
    env = workers_env()
    try:
        env.send_step_and_reset_at(resets([0, 1], [5, 6]))
        with pytest.raises(SlotOrderError, match=r"slots \[1\]: a round sent before the replies"):
            env.send_step_and_reset_at(resets([1, 2], [6, 7]))
        with pytest.raises(SlotOrderError, match=r"slots \[0\]: render while the replies"):
            env.render_at([0])
        with pytest.raises(SlotOrderError, match=r"slots \[0\]: restart while"):
            env.restart([0])
        _, started = env.gather_step_and_reset(resets([0, 1], [5, 6]))
        assert [obs["agent_pos"].tolist() for obs, _ in started] == [[5, 0], [6, 0]]
        # slot 2 was never sent the refused round, so it has nothing to gather
        with pytest.raises(SlotOrderError, match=r"slots \[2\]: replies gathered without a round sent"):
            env.gather_step_and_reset(resets([2], [7]))
        steps, _ = env.step_and_reset_at(SlotRound([0, 1], zeros(2)))
        assert [step.observation["agent_pos"].tolist() for step in steps] == [[5, 1], [6, 1]]
    finally:
        env.close()


def test_groups_of_one_env_send_and_gather_independently():
    env = workers_env(n_envs=4, in_process=1)
    try:
        first, second = SlotGroup(env, [0, 1]), SlotGroup(env, [2, 3])
        first.send_step_and_reset_at(resets([0, 1], [1, 2]))
        second.send_step_and_reset_at(resets([0, 1], [3, 4]))
        assert sorted(env.answered([first.slot_ids, second.slot_ids])) in ([0], [1], [0, 1])
        _, later = second.gather_step_and_reset(resets([0, 1], [3, 4]))
        _, earlier = first.gather_step_and_reset(resets([0, 1], [1, 2]))
        assert [obs["agent_pos"][0] for obs, _ in [*earlier, *later]] == [1, 2, 3, 4]
    finally:
        env.close()


def test_closing_forgets_owed_replies_so_the_env_can_start_again():
    env = workers_env(n_envs=2)
    env.send_step_and_reset_at(resets([0], [1]))
    env.close()
    try:
        assert env.reset_at([0], [9])[0][0]["agent_pos"].tolist() == [9, 0]
    finally:
        env.close()


def test_a_task_comes_from_the_env_or_its_metadata():
    obs_space, act_space = fake_spaces()
    env = LazyVectorEnv([FakeEnv], obs_space, act_space, metadata={"task": "t", "render_fps": 12})
    assert (task_of(env).name, task_of(env).fps, task_of(env).description) == ("t", 12, "")
