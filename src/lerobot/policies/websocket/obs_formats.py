"""What a request holds: the policy batch turned into the messages a policy server reads.

`lerobot` sends one request per step for all the rows that need actions, our batch keys
unchanged except images (uint8 H x W x 3 again, a quarter of the bytes of the float batch and
exactly the env's pixels), plus a `__lerobot__` map naming the rows and the episodes that start
at them. `openpi_libero` and `openpi_aloha` send one request per row in the layout of openpi's
LIBERO and ALOHA sim examples, which its checkpoints were trained and served with. A new
layout is one more class in `FORMATS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from lerobot.processor.converters import TRANSITION_FIELDS
from lerobot.utils.constants import OBS_IMAGE, OBS_IMAGES, OBS_STATE, TASK
from lerobot.utils.errors import ConfigError

SESSION_KEY = "__lerobot__"
"""The request entry lerobot-serve-policy reads rows and episode starts from."""
MAX_ROWS = 4096
"""Row ids a lerobot-serve-policy accepts: 0 to MAX_ROWS - 1."""


@dataclass(frozen=True)
class RowRequest:
    """The rows one request asks actions for, and the episodes that start at some of them."""

    rows: tuple[int, ...]
    resets: tuple[tuple[int, int | None], ...] = ()
    """(row, seed) of every row whose episode starts with this request's observation."""
    server_rows: tuple[int, ...] | None = None
    """The id the server keeps each row's state under; None: the batch rows themselves."""
    max_actions: int | None = 1
    """Actions per row the reply may hold (None: the rest of each row's chunk)."""

    def ids(self) -> dict[int, int]:
        """Batch row -> server row id."""
        return dict(
            zip(self.rows, self.server_rows if self.server_rows is not None else self.rows, strict=True)
        )


class LerobotFormat:
    """All rows in one request, under the policy batch's own keys."""

    batched: ClassVar[bool] = True
    replan_steps: ClassVar[int] = 5
    """Actions taken from each (rows, horizon, action_dim) reply when --policy.replan_steps is
    not given. A reply of one array per row (a lerobot-serve-policy handing out the actions
    its policy takes without a new observation, counted as taken) is taken whole."""

    def __init__(self, resize_size: int = 0):
        del resize_size  # the server's policy reads the env's own image size
        self.inputs: frozenset[str] | None = None
        """The observation keys the served policy reads (its metadata's `input_features`): the
        only arrays sent, as the server refuses others. None: every array of the batch."""

    def messages(self, batch: Mapping[str, Any], request: RowRequest) -> list[dict[str, Any]]:
        sent = {
            key: value
            for key, value in batch.items()
            if (self.inputs is None or key in self.inputs or not key.startswith("observation."))
            and key not in TRANSITION_FIELDS  # a pipeline's empty action, reward and flags
        }
        message: dict[str, Any] = {key: _rows_of(key, value, request.rows) for key, value in sent.items()}
        ids = request.ids()
        message[SESSION_KEY] = {
            "rows": [ids[row] for row in request.rows],
            "resets": [[ids[row], seed] for row, seed in request.resets],
            "max_actions": request.max_actions,
        }
        return [message]

    def chunks(self, replies: Sequence[Mapping[str, Any]], request: RowRequest) -> list[np.ndarray]:
        """One (horizon, action_dim) chunk per requested row: a list of them from a server that
        hands out queued actions, else one (rows, horizon, action_dim) array."""
        actions = replies[0]["actions"]
        if holds_taken_actions(replies[0]):
            if len(actions) != len(request.rows) or any(a.ndim != 2 for a in actions):
                shapes = ", ".join(str(getattr(a, "shape", "?")) for a in actions[:4])
                raise ValueError(f"expected {len(request.rows)} (steps, action_dim) arrays, got {shapes}")
            return [a.astype(np.float32, copy=False) for a in actions]
        actions = np.asarray(actions, dtype=np.float32)
        if actions.ndim == 2:  # one action per row
            actions = actions[:, None]
        if actions.ndim != 3 or actions.shape[0] != len(request.rows):
            raise ValueError(
                f"expected actions of shape ({len(request.rows)}, horizon, action_dim), got {actions.shape}"
            )
        return list(actions)


def holds_taken_actions(reply: Mapping[str, Any]) -> bool:
    """Whether a reply's `actions` are one array per row, which a lerobot-serve-policy sends
    when asked for queued actions and counts as taken (the client executes them all)."""
    actions = reply.get("actions")
    return isinstance(actions, list) and bool(actions) and all(isinstance(a, np.ndarray) for a in actions)


class _OpenpiRowFormat:
    """One request per row, one (horizon, action_dim) chunk per reply: openpi's servers keep
    no per-row state, so each env slot is a client of its own."""

    batched: ClassVar[bool] = False
    name: ClassVar[str]
    required_flags: ClassVar[str]
    """The flags that give the batch keys this layout reads, for the error when one is missing."""

    def __init__(self, resize_size: int = 224):
        self.resize_size = resize_size

    def messages(self, batch: Mapping[str, Any], request: RowRequest) -> list[dict[str, Any]]:
        missing = [key for key in self.batch_keys() if key not in batch]
        if missing:
            raise ConfigError(
                f"--policy.obs_format={self.name} reads {', '.join(missing)}; keep {self.required_flags}"
            )
        return [self._message(batch, row) for row in request.rows]

    def batch_keys(self) -> tuple[str, ...]:
        raise NotImplementedError

    def _message(self, batch: Mapping[str, Any], row: int) -> dict[str, Any]:
        raise NotImplementedError

    def _image(self, batch: Mapping[str, Any], key: str, row: int) -> np.ndarray:
        """Row `row` of camera `key` as openpi's clients send it: uint8 H x W x 3, resized
        with padding to --policy.resize_size."""
        return resize_with_pad(to_uint8_images(batch[key][row : row + 1])[0], self.resize_size)

    def chunks(self, replies: Sequence[Mapping[str, Any]], request: RowRequest) -> list[np.ndarray]:
        chunks = []
        for reply in replies:
            actions = np.asarray(reply["actions"], dtype=np.float32)
            chunks.append(actions[None] if actions.ndim == 1 else actions)
        if any(chunk.ndim != 2 for chunk in chunks):
            raise ValueError(f"expected actions of shape (horizon, action_dim), got {chunks[0].shape}")
        return chunks


def _state(batch: Mapping[str, Any], row: int) -> np.ndarray:
    return batch[OBS_STATE][row].detach().cpu().numpy().astype(np.float32)


class OpenpiLiberoFormat(_OpenpiRowFormat):
    """openpi's LIBERO example, one request per row.

    Its images are robosuite's, rotated by 180 degrees: exactly our LIBERO env's upright
    images, so only the resize with padding remains. Its state is the same 8 numbers as ours
    (end-effector position, axis-angle, gripper fingers); its prompt is the task description.
    """

    name = "openpi_libero"
    required_flags = "LIBERO's default --env.camera_name_mapping and --env.obs_type=pixels_agent_pos"
    replan_steps: ClassVar[int] = 5
    """openpi's LIBERO client executes 5 actions of each chunk."""
    camera_keys: ClassVar[dict[str, str]] = {
        "observation/image": f"{OBS_IMAGES}.image",
        "observation/wrist_image": f"{OBS_IMAGES}.image2",
    }

    def batch_keys(self) -> tuple[str, ...]:
        return (*self.camera_keys.values(), OBS_STATE)

    def _message(self, batch: Mapping[str, Any], row: int) -> dict[str, Any]:
        message: dict[str, Any] = {
            openpi_key: self._image(batch, key, row) for openpi_key, key in self.camera_keys.items()
        }
        message["observation/state"] = _state(batch, row)
        message["prompt"] = str(batch[TASK][row]) if TASK in batch else ""
        return message


class OpenpiAlohaFormat(_OpenpiRowFormat):
    """openpi's ALOHA sim example (`examples/aloha_sim`), one request per row.

    It sends the top camera as `images.cam_high`, uint8 and channels first (3 x 224 x 224
    after the resize with padding), and gym-aloha's 14 joint positions as `state`: exactly
    our ALOHA env's top camera and `agent_pos`. It sends no prompt, so the server's default
    prompt applies (`pi0_aloha_sim`: "Transfer cube"), as the checkpoint was trained.
    """

    name = "openpi_aloha"
    required_flags = "--env.obs_type=pixels_agent_pos"
    replan_steps: ClassVar[int] = 10
    """openpi's ALOHA sim client executes 10 actions of each chunk (`action_horizon`)."""
    camera_key: ClassVar[str] = f"{OBS_IMAGES}.top"

    def batch_keys(self) -> tuple[str, ...]:
        return (self.camera_key, OBS_STATE)

    def _message(self, batch: Mapping[str, Any], row: int) -> dict[str, Any]:
        top = self._image(batch, self.camera_key, row)
        return {
            "state": _state(batch, row),
            "images": {"cam_high": np.ascontiguousarray(top.transpose(2, 0, 1))},
        }


FORMATS = {"lerobot": LerobotFormat, "openpi_libero": OpenpiLiberoFormat, "openpi_aloha": OpenpiAlohaFormat}


def _rows_of(key: str, value: Any, rows: Sequence[int]) -> Any:
    every_row = isinstance(value, torch.Tensor | list | tuple) and list(rows) == list(range(len(value)))
    if isinstance(value, torch.Tensor):
        picked = value if every_row or value.ndim == 0 else value[list(rows)]
        if key.startswith(OBS_IMAGE) and picked.ndim == 4:
            return to_uint8_images(picked)
        return picked.detach().cpu().numpy()
    if isinstance(value, list | tuple):
        return list(value) if every_row else [value[row] for row in rows]
    return value


def to_uint8_images(images: torch.Tensor) -> np.ndarray:
    """float (B, 3, H, W) in [0, 1] -> uint8 (B, H, W, 3): the env's pixels, recovered exactly
    (they were u / 255 in float32; 255 * (u / 255) + 0.5 truncates back to u). Converted
    before the transpose, so the copy into H x W x 3 order moves bytes, not floats."""
    pixels = images.detach().mul(255.0).add_(0.5).to(torch.uint8)
    return pixels.permute(0, 2, 3, 1).contiguous().cpu().numpy()


def resize_with_pad(image: np.ndarray, size: int) -> np.ndarray:
    """Fit an H x W x 3 uint8 image into size x size keeping its aspect ratio: bilinear
    resize until it touches the border, then black padding centred on both sides (openpi's
    `image_tools.resize_with_pad`, PIL's reading of `tf.image.resize_with_pad`)."""
    height, width = image.shape[:2]
    if (height, width) == (size, size):
        return image
    from PIL import Image

    scale = max(width / size, height / size)
    new_height, new_width = int(height / scale), int(width / scale)
    resized = np.asarray(
        Image.fromarray(image).resize((new_width, new_height), resample=Image.Resampling.BILINEAR)
    )
    padded = np.zeros((size, size, image.shape[2]), dtype=image.dtype)
    top, left = (size - new_height) // 2, (size - new_width) // 2
    padded[top : top + new_height, left : left + new_width] = resized
    return padded
