"""LeRobot's own policy, answering the harness over this process's stdin and stdout.

This file runs under the interpreter of an environment where LeRobot is installed
(`--policy.python`), as `python child.py '<settings json>'`. There `import lerobot` is
LeRobot, not the harness (both are named `lerobot`), so the file imports nothing of the
harness; the harness imports it too, for the frame format below, and never calls the parts
that import LeRobot.

Frames, both ways: a 4-byte big-endian length, that many bytes of UTF-8 JSON (the header),
then the raw bytes of the arrays the header lists as [name, numpy dtype string, shape], in
order, C-contiguous. Nothing is pickled.

What the child does is what LeRobot's lerobot-eval does for one episode: LeRobot's
`preprocess_observation` conversion of the images, the env's processors (LeRobot's
`make_env_pre_post_processors`, less the LIBERO conversion the harness's env already made),
the checkpoint's processors, `select_action` under `torch.inference_mode()`, then the
postprocessors. LeRobot's policies keep one action queue (and history) for a whole batch,
while the harness starts episodes in different rows at different steps, so each row gets its
own copy of the policy's state (sharing the weights) and its own random state, seeded with
the episode's seed: an episode's actions depend on its seed, not on its neighbours. A policy
whose `select_action` only replays `predict_action_chunk` (ACT without temporal
ensembling) runs rows together in one batch instead, and says which rows will read the next
observation.
"""

from __future__ import annotations

import copy
import json
import os
import struct
import sys
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

LENGTH = struct.Struct(">I")
MIN_LEROBOT = (0, 5)
# LeRobot's key for the task description in a batch (`lerobot.utils.constants.TASK`'s value).
TASK_KEY = "task"
ACTION_KEY = "action"
# Processor steps whose conversion the harness's env has already made.
DONE_BY_THE_HARNESS_ENV = ("LiberoProcessorStep",)


# -- frames ------------------------------------------------------------------------------------


def encode_frame(header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> bytes:
    """One frame: the header (with the arrays' layout added) and the arrays' bytes."""
    arrays = {name: np.ascontiguousarray(a) for name, a in (arrays or {}).items()}
    layout = [[name, a.dtype.str, list(a.shape)] for name, a in arrays.items()]
    text = json.dumps({**header, "arrays": layout}).encode()
    return b"".join([LENGTH.pack(len(text)), text, *(a.tobytes() for a in arrays.values())])


def decode_frame(read_exact: Callable[[int], bytes]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The next frame from `read_exact(n)`, which returns n bytes or raises EOFError."""
    (length,) = LENGTH.unpack(read_exact(LENGTH.size))
    header = json.loads(read_exact(length))
    arrays = {}
    for name, dtype, shape in header.pop("arrays", []):
        dtype = np.dtype(dtype)
        n_bytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
        arrays[name] = np.frombuffer(read_exact(n_bytes), dtype=dtype).reshape(shape)
    return header, arrays


def stream_reader(stream: BinaryIO) -> Callable[[int], bytes]:
    def read_exact(n: int) -> bytes:
        data = stream.read(n)
        if data is None or len(data) < n:
            raise EOFError("the stream ended inside a frame" if data else "the stream ended")
        return data

    return read_exact


# -- LeRobot's side ----------------------------------------------------------------------------


def lerobot_version() -> str:
    from importlib.metadata import version

    return version("lerobot")


def check_lerobot() -> str:
    """LeRobot's version; a one-line error when `lerobot` here is the harness or too old."""
    import importlib.util

    spec = importlib.util.find_spec("lerobot")
    if spec is None:
        raise RuntimeError(f"{sys.executable} cannot import lerobot; install LeRobot in that environment")
    roots = list(spec.submodule_search_locations or [])
    if any(os.path.isdir(os.path.join(root, "evaluation", "run")) for root in roots):
        raise RuntimeError(
            f"{sys.executable} imports this harness as lerobot ({roots[0]}), not LeRobot; "
            "pass the Python of an environment where LeRobot is installed"
        )
    found = lerobot_version()
    numbers = tuple(int(part) for part in found.split(".")[:2] if part.isdigit())
    if numbers < MIN_LEROBOT:
        raise RuntimeError(f"LeRobot {found} at {sys.executable} is older than 0.5, which the bridge needs")
    return found


def pick_device(wanted: str | None) -> str:
    import torch

    if wanted:
        return wanted
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def env_processors(env_type: str | None, policy_cfg: Any) -> tuple[Any, Any]:
    """LeRobot's env processors for `env_type`, without the steps the harness's env made."""
    from lerobot.envs.configs import EnvConfig
    from lerobot.envs.factory import make_env_pre_post_processors
    from lerobot.processor import PolicyProcessorPipeline

    if env_type is None or env_type not in EnvConfig.get_known_choices():
        return PolicyProcessorPipeline(steps=[]), PolicyProcessorPipeline(steps=[])
    env_cfg = EnvConfig.get_choice_class(env_type)()
    pre, post = make_env_pre_post_processors(env_cfg=env_cfg, policy_cfg=policy_cfg)
    kept = [step for step in pre.steps if type(step).__name__ not in DONE_BY_THE_HARNESS_ENV]
    return PolicyProcessorPipeline(steps=kept), post


def replays_chunks(policy_cfg: Any) -> bool:
    """Whether `select_action` only queues `predict_action_chunk(batch)[:, :n_action_steps]`
    and draws nothing at random: then rows may share one call."""
    return policy_cfg.type == "act" and getattr(policy_cfg, "temporal_ensemble_coeff", None) is None


class Bridge:
    """A LeRobot checkpoint with LeRobot's processors, acting for the harness's rows."""

    def __init__(self, settings: dict[str, Any]):
        import torch

        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        self.version = check_lerobot()
        self.torch = torch
        path = settings["checkpoint"]
        cfg = PreTrainedConfig.from_pretrained(path)
        known = PreTrainedConfig.get_known_choices()
        if cfg.type not in known:
            raise RuntimeError(f"policy type {cfg.type!r} is unknown to LeRobot {self.version}")
        self.device = pick_device(settings.get("device"))
        cfg.device = self.device
        cfg.pretrained_path = path
        self.cfg = cfg
        self.use_amp = bool(settings.get("use_amp"))
        self.policy = get_policy_class(cfg.type).from_pretrained(path, config=cfg)
        self.policy.eval()
        self.preprocessor, self.postprocessor = make_pre_post_processors(
            policy_cfg=cfg,
            pretrained_path=path,
            preprocessor_overrides={
                "device_processor": {"device": self.device},
                "rename_observations_processor": {"rename_map": {}},
            },
        )
        self.env_preprocessor, self.env_postprocessor = env_processors(settings.get("env_type"), cfg)
        self.batched = replays_chunks(cfg)
        self.n_action_steps = int(getattr(cfg, "n_action_steps", 1) or 1)
        self.queues: dict[int, deque] = {}
        self.row_policies: dict[int, Any] = {}
        self.row_rng: dict[int, tuple] = {}
        self.shared = {id(t): t for t in (*self.policy.parameters(), *self.policy.buffers())}
        self.parked: dict[int, tuple] = {}  # row states set aside by `save`, by handle
        self.next_handle = 0

    def hello(self) -> dict[str, Any]:
        import torch

        action = self.cfg.output_features.get(ACTION_KEY)
        return {
            "op": "ready",
            "lerobot_version": self.version,
            "torch_version": torch.__version__,
            "python": sys.executable,
            "policy_type": self.cfg.type,
            "device": self.device,
            "batched": self.batched,
            "action_dim": int(action.shape[0]) if action is not None else None,
            "input_features": sorted(self.cfg.input_features),
        }

    # -- requests --------------------------------------------------------------------------

    def act(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[dict, dict]:
        """One action per row; `observed` rows carry this step's observation."""
        n_rows, observed = int(header["n_rows"]), list(header["observed"])
        for row, seed in header.get("resets", []):
            self.reset_row(int(row), seed)
        batch = self.observation(arrays, header.get("task")) if observed else None
        with self.torch.inference_mode(), self.autocast():
            if self.batched:
                actions = self.act_batched(n_rows, observed, batch)
            else:
                actions = self.act_row_by_row(n_rows, observed, batch)
            actions = self.postprocessor(actions)
            actions = self.env_postprocessor({ACTION_KEY: actions})[ACTION_KEY]
        queued = [len(self.queues.get(row, ())) for row in range(n_rows)] if self.batched else None
        action_array = actions.detach().to("cpu", self.torch.float32).numpy()
        return {"op": "actions", "queued": queued}, {ACTION_KEY: action_array}

    def save(self, header: dict[str, Any]) -> tuple[dict, dict]:
        """Set the state of `rows` aside (a policy server moves rows between batches); one
        handle per row, and how many actions each has queued."""
        handles, queued = [], []
        for row in header["rows"]:
            state = (
                self.queues.pop(row, deque()),
                self.row_policies.pop(row, None),
                self.row_rng.pop(row, None),
            )
            self.parked[self.next_handle] = state
            handles.append(self.next_handle)
            queued.append(len(state[0]))
            self.next_handle += 1
        return {"op": "saved", "handles": handles, "queued": queued if self.batched else None}, {}

    def restore(self, header: dict[str, Any]) -> tuple[dict, dict]:
        """The next batch is len(handles) rows, row i continuing from its saved state (None:
        a fresh row); handles in `dropped` belong to rows that will never come back."""
        self.queues, self.row_policies, self.row_rng = {}, {}, {}
        for handle in header.get("dropped", []):
            self.parked.pop(handle, None)
        for row, handle in enumerate(header["handles"]):
            if handle is None:
                continue
            queue, row_policy, rng = self.parked.pop(handle)
            self.queues[row] = queue
            if row_policy is not None:
                self.row_policies[row], self.row_rng[row] = row_policy, rng
        return {"op": "restored"}, {}

    def reset_row(self, row: int, seed: int | None) -> None:
        torch = self.torch
        self.queues[row] = deque()
        if self.batched:
            return
        if row not in self.row_policies:
            self.row_policies[row] = copy.deepcopy(self.policy, dict(self.shared))
        self.row_policies[row].reset()
        if seed is None:
            seed = int(torch.randint(0, 2**62, ()).item())
        torch.manual_seed(int(seed))  # as lerobot-eval seeds before an episode
        self.row_rng[row] = self.capture_rng()

    def observation(self, arrays: dict[str, np.ndarray], task: list[str] | None) -> dict[str, Any]:
        """LeRobot's `preprocess_observation` result, then the env's and the policy's processors."""
        torch = self.torch
        batch: dict[str, Any] = {}
        for key, value in arrays.items():
            tensor = torch.from_numpy(np.array(value))
            if tensor.dtype == torch.uint8:  # images, channel-first
                tensor = tensor.type(torch.float32) / 255
            batch[key] = tensor
        if task is not None:
            batch[TASK_KEY] = list(task)
        return self.preprocessor(self.env_preprocessor(batch))

    def act_batched(self, n_rows: int, observed: list[int], batch: dict[str, Any] | None) -> Any:
        if observed:
            chunk = self.policy.predict_action_chunk(batch)[:, : self.n_action_steps]
            for i, row in enumerate(observed):
                self.queues[row] = deque(chunk[i])
        empty = [row for row in range(n_rows) if not self.queues.get(row)]
        if empty:
            raise RuntimeError(f"rows {empty} have no queued actions and sent no observation")
        return self.torch.stack([self.queues[row].popleft() for row in range(n_rows)])

    def act_row_by_row(self, n_rows: int, observed: list[int], batch: dict[str, Any] | None) -> Any:
        if observed != list(range(n_rows)):
            raise RuntimeError("every row must send its observation to a policy that reads it each step")
        actions = []
        for row in range(n_rows):
            if row not in self.row_policies:
                self.reset_row(row, None)
            self.restore_rng(self.row_rng[row])
            actions.append(self.row_policies[row].select_action(row_slice(batch, row)))
            self.row_rng[row] = self.capture_rng()
        return self.torch.cat(actions)

    # -- helpers ---------------------------------------------------------------------------

    def autocast(self) -> Any:
        import contextlib

        if not self.use_amp:
            return contextlib.nullcontext()
        return self.torch.autocast(device_type=self.torch.device(self.device).type)

    def capture_rng(self) -> tuple:
        torch = self.torch
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        return torch.get_rng_state(), cuda

    def restore_rng(self, state: tuple) -> None:
        cpu, cuda = state
        self.torch.set_rng_state(cpu)
        if cuda is not None:
            self.torch.cuda.set_rng_state_all(cuda)


def row_slice(batch: dict[str, Any], row: int) -> dict[str, Any]:
    """Row `row` of a batch, still a batch of one."""
    sliced = {}
    for key, value in batch.items():
        if isinstance(value, list) or (hasattr(value, "shape") and len(value.shape) > 0):
            sliced[key] = value[row : row + 1]
        else:
            sliced[key] = value
    return sliced


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".strip()


def serve(settings: dict[str, Any], read_exact: Callable[[int], bytes], out: BinaryIO) -> int:
    def send(header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> None:
        out.write(encode_frame(header, arrays))
        out.flush()

    try:
        bridge = Bridge(settings)
    except Exception as exc:  # every start-up failure is reported, in one line
        traceback.print_exc()
        send({"op": "error", "message": one_line(exc) if not isinstance(exc, RuntimeError) else str(exc)})
        return 1
    send(bridge.hello())
    while True:
        try:
            header, arrays = decode_frame(read_exact)
        except EOFError:
            return 0
        if header.get("op") == "close":
            return 0
        try:
            handler = {"act": bridge.act, "save": bridge.save, "restore": bridge.restore}.get(
                header.get("op")
            )
            if handler is None:
                raise RuntimeError(f"unknown request {header.get('op')!r}")
            send(*handler(header, arrays) if handler == bridge.act else handler(header))
        except Exception as exc:  # the policy's failure, reported for its rows
            traceback.print_exc()
            send({"op": "error", "message": one_line(exc)})


def main(argv: list[str]) -> int:
    settings = json.loads(argv[1])
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever LeRobot prints goes to stderr, never into a frame
    return serve(settings, stream_reader(sys.stdin.buffer), out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
