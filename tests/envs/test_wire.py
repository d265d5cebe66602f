import pickle

import numpy as np
import pytest

from lerobot.envs.commands import ChunkResult, StepResult
from lerobot.envs.shared_obs import MIN_SHARED_BYTES, SharedLeaf
from lerobot.envs.wire import pack_payload, pack_reply, unpack_payload, unpack_reply


def through_pipe(message):
    """What the other end of a worker's pipe gets (lerobot.envs.workers.send / receive)."""
    return pickle.loads(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def assert_same_array(got, expected):
    assert type(got) is np.ndarray
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert got.flags.writeable  # as an unpickled array is: an env may clip its action in place


def observation(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "agent_pos": rng.normal(size=39).astype(np.float32),
        "environment_state": rng.normal(size=(3, 2)),  # float64
        "pixels": {"top": SharedLeaf(0), "wrist": rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)},
        "flags": np.array([True, False]),
        "scalar": np.ones((), np.float32),  # 0-d
    }


def assert_same_observation(got, expected):
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, dict):
            assert_same_observation(got[key], value)
        elif isinstance(value, np.ndarray):
            assert_same_array(got[key], value)
        else:
            assert got[key] == value


@pytest.mark.parametrize(
    "action",
    [
        np.array([0.1, -0.2, 0.3, 1.0], np.float32),
        np.arange(8, dtype=np.float64).reshape(2, 4)[:, 1],  # a strided view
        np.array([1, 2, 3], np.int64),
    ],
)
def test_a_step_command_arrives_with_the_same_action(action):
    payload = through_pipe(pack_payload("step", (action, True, False)))
    got, want_frame, want_images = unpack_payload("step", payload)
    assert_same_array(got, action)
    assert (want_frame, want_images) == (True, False)


def test_a_chunk_of_actions_arrives_whole():
    chunk = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32)
    got, want_frames = unpack_payload("steps", through_pipe(pack_payload("steps", (chunk, False))))
    assert_same_array(got, chunk)
    assert want_frames is False


def test_a_step_result_arrives_equal_and_other_commands_pass_as_they_are():
    frame = np.zeros((4, 4, 3), np.uint8)
    step = StepResult(
        observation(1), 0.25, False, True, {"is_success": True, "task": "push-v3"}, frame, False
    )
    got = unpack_reply("step", through_pipe(pack_reply("step", step)))
    assert type(got) is StepResult
    assert_same_observation(got.observation, step.observation)
    assert (got.reward, got.terminated, got.truncated, got.info, got.images) == (
        0.25,
        False,
        True,
        step.info,
        False,
    )
    assert_same_array(got.frame, frame)
    assert unpack_reply("render", through_pipe(pack_reply("render", frame))).shape == frame.shape
    assert unpack_reply("call", through_pipe(pack_reply("call", ("a", 1)))) == ("a", 1)


def test_a_chunk_result_keeps_its_steps_and_only_the_last_observation():
    steps = (
        StepResult(None, 0.0, False, False, {}),
        StepResult(observation(2), 1.0, True, False, {"is_success": True}),
    )
    got = unpack_reply("steps", through_pipe(pack_reply("steps", ChunkResult(steps))))
    assert type(got) is ChunkResult and len(got.steps) == 2
    assert got.steps[0].observation is None and got.steps[0].reward == 0.0
    assert_same_observation(got.last.observation, steps[1].observation)
    assert got.last.terminated and got.last.info == {"is_success": True}


def test_a_reset_arrives_with_its_observation_and_info():
    obs, info = observation(3), {"init_state_index": 4}
    got_obs, got_info = unpack_reply("reset", through_pipe(pack_reply("reset", (obs, info))))
    assert_same_observation(got_obs, obs)
    assert got_info == info
    bare = np.arange(5, dtype=np.float32)  # an env whose observation is a bare array
    got_bare, _ = unpack_reply("reset", through_pipe(pack_reply("reset", (bare, {}))))
    assert_same_array(got_bare, bare)


def test_big_and_object_arrays_travel_as_pickle_makes_them():
    big = np.zeros(MIN_SHARED_BYTES, np.uint8)
    objects = np.array(["a", None], dtype=object)
    packed = pack_reply("reset", ({"big": big, "objects": objects}, {}))
    assert packed[0]["big"] is big and packed[0]["objects"] is objects
    got, _ = unpack_reply("reset", through_pipe(packed))
    assert_same_array(got["big"], big)
    assert got["objects"].tolist() == ["a", None]
