"""Requests as the policy servers read them: our batch layout, and openpi's LIBERO and ALOHA
layouts checked against openpi's own image code (`openpi_client.image_tools`)."""

import numpy as np
import pytest
import torch
from openpi_client import image_tools

from lerobot.policies.websocket.obs_formats import (
    SESSION_KEY,
    LerobotFormat,
    OpenpiAlohaFormat,
    OpenpiLiberoFormat,
    RowRequest,
    resize_with_pad,
    to_uint8_images,
)
from lerobot.processor.observation import observation_to_batch


def libero_batch(n_rows: int = 2, size: int = 256) -> dict:
    """A LIBERO policy batch as the rollout builds it (upright uint8 cameras -> float CHW)."""
    rng = np.random.default_rng(0)
    observation = {
        "pixels": {
            "image": rng.integers(0, 256, (n_rows, size, size, 3), dtype=np.uint8),
            "image2": rng.integers(0, 256, (n_rows, size, size, 3), dtype=np.uint8),
        },
        "agent_pos": rng.normal(size=(n_rows, 8)).astype(np.float32),
    }
    batch = observation_to_batch(observation)
    batch["task"] = [f"task {row}" for row in range(n_rows)]
    return batch, observation


@pytest.mark.parametrize("shape", [(256, 256), (480, 640), (100, 50), (224, 224)])
def test_resize_with_pad_matches_openpi(shape):
    image = np.random.default_rng(1).integers(0, 256, (*shape, 3), dtype=np.uint8)
    np.testing.assert_array_equal(resize_with_pad(image, 224), image_tools.resize_with_pad(image, 224, 224))


def test_float_images_turn_back_into_the_exact_pixels():
    pixels = np.arange(256, dtype=np.uint8).reshape(1, 16, 16, 1).repeat(3, axis=-1)
    floats = torch.from_numpy(pixels).permute(0, 3, 1, 2).float().div(255.0)
    np.testing.assert_array_equal(to_uint8_images(floats), pixels)


def test_lerobot_layout_is_the_batch_with_uint8_images_and_the_row_bookkeeping():
    batch, observation = libero_batch(3)
    request = RowRequest((0, 2), resets=((2, 1007),), server_rows=(2048, 2049), max_actions=None)
    [message] = LerobotFormat().messages(batch, request)
    np.testing.assert_array_equal(message["observation.images.image"], observation["pixels"]["image"][[0, 2]])
    np.testing.assert_array_equal(message["observation.state"], observation["agent_pos"][[0, 2]])
    assert message["task"] == ["task 0", "task 2"]
    # Rows 0 and 2 of this batch are rows 2048 and 2049 on the server; no bound on actions.
    assert message[SESSION_KEY] == {"rows": [2048, 2049], "resets": [[2049, 1007]], "max_actions": None}


def test_lerobot_layout_reads_one_array_per_row_of_a_server_handing_out_queued_actions():
    request = RowRequest((0, 1), max_actions=None)
    reply = {"actions": [np.ones((3, 7), np.float32), np.ones((1, 7), np.float32)]}
    assert [c.shape for c in LerobotFormat().chunks([reply], request)] == [(3, 7), (1, 7)]
    with pytest.raises(ValueError, match=r"expected 2 \(steps, action_dim\) arrays, got \(3, 7\)"):
        LerobotFormat().chunks([{"actions": reply["actions"][:1]}], request)


def test_lerobot_layout_reads_one_action_or_a_chunk_per_row():
    request = RowRequest((0, 1))
    chunks = LerobotFormat().chunks([{"actions": np.ones((2, 7), np.float32)}], request)
    assert [c.shape for c in chunks] == [(1, 7), (1, 7)]
    chunks = LerobotFormat().chunks([{"actions": np.ones((2, 5, 7))}], request)
    assert [c.shape for c in chunks] == [(5, 7), (5, 7)]
    with pytest.raises(ValueError, match=r"expected actions of shape \(2, horizon, action_dim\)"):
        LerobotFormat().chunks([{"actions": np.ones((3, 7))}], request)


def test_openpi_libero_layout_is_openpis_example():
    batch, observation = libero_batch(2)
    messages = OpenpiLiberoFormat(224).messages(batch, RowRequest((1,)))
    assert len(messages) == 1 and set(messages[0]) == {
        "observation/image",
        "observation/wrist_image",
        "observation/state",
        "prompt",
    }
    message = messages[0]
    # openpi's example rotates robosuite's raw frames by 180 degrees: our env's images already are.
    for key, camera in (("observation/image", "image"), ("observation/wrist_image", "image2")):
        expected = image_tools.resize_with_pad(observation["pixels"][camera][1], 224, 224)
        assert message[key].dtype == np.uint8
        np.testing.assert_array_equal(message[key], expected)
    np.testing.assert_array_equal(message["observation/state"], observation["agent_pos"][1])
    assert message["prompt"] == "task 1"


def test_openpi_libero_layout_names_the_flags_when_a_camera_is_missing():
    batch, _ = libero_batch(1)
    del batch["observation.images.image2"]
    with pytest.raises(ValueError, match="observation.images.image2.*--env.camera_name_mapping"):
        OpenpiLiberoFormat().messages(batch, RowRequest((0,)))


def aloha_batch(n_rows: int = 2) -> tuple[dict, dict]:
    """An ALOHA policy batch as the rollout builds it: the 480x640 top camera, 14 joints."""
    rng = np.random.default_rng(2)
    observation = {
        "pixels": {"top": rng.integers(0, 256, (n_rows, 480, 640, 3), dtype=np.uint8)},
        "agent_pos": rng.normal(size=(n_rows, 14)).astype(np.float32),
    }
    return observation_to_batch(observation), observation


def openpi_aloha_observation(top: np.ndarray, agent_pos: np.ndarray) -> dict:
    """What openpi's ALOHA sim example sends for one gym-aloha observation (its
    `_convert_observation`, written with openpi-client's image tools)."""
    image = image_tools.convert_to_uint8(image_tools.resize_with_pad(top, 224, 224))
    return {"state": agent_pos, "images": {"cam_high": np.transpose(image, (2, 0, 1))}}


def test_openpi_aloha_layout_is_openpis_example():
    batch, observation = aloha_batch(2)
    [message] = OpenpiAlohaFormat().messages(batch, RowRequest((1,)))
    expected = openpi_aloha_observation(observation["pixels"]["top"][1], observation["agent_pos"][1])
    assert set(message) == {"state", "images"} and set(message["images"]) == {"cam_high"}
    cam_high = message["images"]["cam_high"]
    assert cam_high.dtype == np.uint8 and cam_high.shape == (3, 224, 224) and cam_high.flags.c_contiguous
    np.testing.assert_array_equal(cam_high, expected["images"]["cam_high"])
    np.testing.assert_array_equal(message["state"], expected["state"])


def test_openpi_aloha_layout_names_the_flag_when_the_joints_are_missing():
    batch, _ = aloha_batch(1)
    del batch["observation.state"]
    with pytest.raises(
        ValueError, match=r"openpi_aloha reads observation.state; keep --env.obs_type=pixels_agent_pos"
    ):
        OpenpiAlohaFormat().messages(batch, RowRequest((0,)))


def test_each_layout_replans_as_its_openpi_client_does():
    assert (LerobotFormat.replan_steps, OpenpiLiberoFormat.replan_steps, OpenpiAlohaFormat.replan_steps) == (
        5,
        5,
        10,
    )
