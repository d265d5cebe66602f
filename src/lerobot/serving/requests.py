"""A client's message -> a validated inference request, or a one-line reason why not.

Two shapes of message are accepted, both msgpack maps of observation arrays and strings:

- unbatched, as openpi's clients send it: one observation, arrays without a batch axis; the
  connection's single row (row 0) answers with `actions` of shape (1, action_dim);
- batched, as `--policy.type=websocket` sends it: a `__lerobot__` map with `rows` (the
  client's row ids, one per leading-axis entry of every array and list) and `resets` (pairs
  `[row, seed]`: episodes that start with this observation); `actions` (rows, 1, action_dim).
  With `max_actions` (a positive integer, or nil for no bound) in that map, `actions` is one
  (steps, action_dim) array per row instead: the row's action and those after it that the
  policy would take without reading an observation (the rest of its chunk), at most
  `max_actions` in all. The server counts them as taken.

uint8 arrays of shape (..., H, W, 3) are camera images; the policy gets them as float
(..., 3, H, W) in [0, 1], exactly as in a local evaluation. Other floats become float32.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.websocket.obs_formats import MAX_ROWS, SESSION_KEY
from lerobot.utils.logging_utils import one_line


class BadRequest(ValueError):  # noqa: N818  (reads as what it is: the client's fault)
    """A message the server cannot run; its text goes back to that client as one line."""


@dataclass(frozen=True)
class InferenceRequest:
    """One client message, ready to join a batch."""

    session: int
    """The connection it came from: rows of different connections never share state."""
    rows: tuple[int, ...]
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Key -> (len(rows), ...) array."""
    texts: Mapping[str, list[str]] = field(default_factory=dict)
    """Key -> one string per row (the task description, the env's task name)."""
    resets: Mapping[int, int | None] = field(default_factory=dict)
    """Row -> seed of the episode that starts at it."""
    batched: bool = True
    max_actions: int | None = 1
    """Actions per row the reply may hold: 1 (openpi's clients; ours before they asked for
    more), at most that many, or None: each row's action and the rest of its queued chunk,
    the actions the policy would take without reading another observation."""

    @property
    def signature(self) -> tuple:
        """Requests with equal signatures can be stacked into one batch."""
        arrays = tuple(sorted((k, v.shape[1:], v.dtype.str) for k, v in self.arrays.items()))
        return arrays, tuple(sorted(self.texts))


def parse_request(message: Any, session: int) -> InferenceRequest:
    if not isinstance(message, dict) or not all(isinstance(k, str) for k in message):
        raise BadRequest("a request must be a msgpack map with string keys")
    message = dict(message)
    meta = message.pop(SESSION_KEY, None)
    if meta is not None and not isinstance(meta, dict):
        raise BadRequest(f"{SESSION_KEY} must be a map with 'rows' and 'resets'")
    batched = meta is not None and "rows" in meta
    rows = _rows(meta["rows"]) if batched else (0,)
    resets = _resets((meta or {}).get("resets", []), rows)
    max_actions = _max_actions(meta["max_actions"]) if batched and "max_actions" in meta else 1
    arrays, texts = {}, {}
    for key, value in message.items():
        if _is_text(value, batched):
            texts[key] = list(value) if batched else [value]
        else:
            arrays[key] = _array(key, value, len(rows), batched)
    if not arrays:
        raise BadRequest("the request holds no observation array")
    for key, values in texts.items():
        if len(values) != len(rows):
            raise BadRequest(f"{key!r}: {len(values)} strings for {len(rows)} rows")
    return InferenceRequest(session, rows, arrays, texts, resets, batched, max_actions)


def _max_actions(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise BadRequest(
        f"{SESSION_KEY}.max_actions must be a positive integer or nil, not {one_line(repr(value), 40)}"
    )


def _rows(value: Any) -> tuple[int, ...]:
    if (
        not isinstance(value, list)
        or not 0 < len(value) <= MAX_ROWS
        or not all(isinstance(r, int) and 0 <= r < MAX_ROWS for r in value)
        or len(set(value)) != len(value)
    ):
        raise BadRequest(
            f"{SESSION_KEY}.rows must list 1 to {MAX_ROWS} distinct row ids in 0..{MAX_ROWS - 1}"
        )
    return tuple(value)


def _resets(value: Any, rows: tuple[int, ...]) -> dict[int, int | None]:
    if not isinstance(value, list):
        raise BadRequest(f"{SESSION_KEY}.resets must be a list of [row, seed] pairs")
    resets = {}
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and pair[0] in rows):
            raise BadRequest(f"{SESSION_KEY}.resets: {pair!r} is not a [row, seed] pair of a requested row")
        if pair[1] is not None and not isinstance(pair[1], int):
            raise BadRequest(f"{SESSION_KEY}.resets: seed {pair[1]!r} must be an integer or nil")
        resets[pair[0]] = pair[1]
    return resets


def _is_text(value: Any, batched: bool) -> bool:
    if batched:
        return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def _array(key: str, value: Any, n_rows: int, batched: bool) -> np.ndarray:
    if isinstance(value, np.generic | int | float | bool | list):
        try:
            value = np.asarray(value)
        except ValueError:
            value = None
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise BadRequest(f"{key!r}: expected a numeric array or a string")
    value = value if batched else value[None]
    if value.ndim == 0 or value.shape[0] != n_rows:
        raise BadRequest(f"{key!r}: shape {value.shape} does not start with the {n_rows} requested rows")
    if value.dtype.kind == "f" and value.dtype != np.float32:
        return value.astype(np.float32)
    return value.astype(value.dtype.newbyteorder("=")) if not value.dtype.isnative else value


def check_inputs(
    request: InferenceRequest,
    features: Mapping[str, PolicyFeature],
    empty_cameras: int = 0,
    resizes_images: bool = True,
) -> None:
    """Every input the policy reads is there with its size (a vector's length; a camera's
    channels, and its height and width unless the checkpoint's processor resizes images), and
    nothing else (an unknown array could be any size); up to `empty_cameras` cameras may be
    missing (the policy gets black frames). A policy declaring no inputs takes any."""
    unknown = [key for key in request.arrays if features and key not in features]
    if unknown:
        raise BadRequest(
            f"{one_line(unknown[0], 80)!r}: not an input of the served policy (it reads {', '.join(features)})"
        )
    missing = [key for key in features if key not in request.arrays]
    missing_cameras = [key for key in missing if features[key].type is FeatureType.VISUAL]
    if len(missing) > len(missing_cameras) or len(missing_cameras) > empty_cameras:
        raise BadRequest(
            f"the policy reads {', '.join(missing)}, which the request lacks (it has {', '.join(request.arrays)})"
        )
    for key, feature in features.items():
        if key in request.arrays and not _fits(request.arrays[key], feature, resizes_images):
            raise BadRequest(
                f"{key!r}: shape {request.arrays[key].shape[1:]} per row, the policy reads {tuple(feature.shape)}"
                + (" (images: uint8 H x W x 3)" if feature.type is FeatureType.VISUAL else "")
            )


def _fits(array: np.ndarray, feature: PolicyFeature, resizes_images: bool = True) -> bool:
    if feature.type is not FeatureType.VISUAL:
        return array.shape[1:] == tuple(feature.shape)
    if array.ndim != 4:
        return False
    # uint8 frames come as H x W x C, float ones as C x H x W (the policy's own layout).
    channels, size = (
        (array.shape[-1], array.shape[1:3]) if array.dtype == np.uint8 else (array.shape[1], array.shape[2:4])
    )
    return channels == feature.shape[0] and (resizes_images or tuple(size) == tuple(feature.shape[1:3]))
