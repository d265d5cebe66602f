"""lerobot-serve-policy's server on real sockets: openpi's own client against it, bad input,
api keys, the health check, and batching across connections."""

import contextlib
import threading
import time
import urllib.request

import msgpack
import numpy as np
import pytest
import torch
from openpi_client.websocket_client_policy import WebsocketClientPolicy
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from lerobot.policies.websocket import wire
from tests.policies.checkpoints import load, materialize
from tests.remote import ObservationPolicy, free_port, memory_mb, reset_peak, running_server, serving_process

# openpi's client (and our raw connection that vanishes) connect outside a `with`, which
# websockets >= 17.1 warns about.
pytestmark = pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")


@pytest.fixture(scope="module")
def act(tmp_path_factory):
    """The ACT fixture checkpoint (Meta-World: 96x96 camera, 4-d state, 4-d actions)."""
    return materialize("act", tmp_path_factory.mktemp("act"))


@pytest.fixture(scope="module")
def act_server(act):
    served = load(act)
    with running_server(
        served.policy, preprocessor=served.preprocessor, postprocessor=served.postprocessor
    ) as s:
        yield s


def act_observation(step: int) -> dict:
    rng = np.random.default_rng(step)
    return {
        "observation.image": rng.integers(0, 256, (96, 96, 3), dtype=np.uint8),
        "observation.state": rng.normal(size=4).astype(np.float32),
    }


def test_openpi_client_gets_the_actions_a_local_evaluation_computes(act, act_server):
    """openpi's client sends unbatched observations: the connection is one row whose queue
    the server keeps, so 7 requests give the 7 actions of a local rollout (two chunks)."""
    local = load(act)
    expected = []
    for step in range(7):
        observation = act_observation(step)
        batch = {
            "observation.image": torch.from_numpy(observation["observation.image"][None]).permute(0, 3, 1, 2)
            / 255.0,
            "observation.state": torch.from_numpy(observation["observation.state"][None]),
        }
        expected.append(local.act(batch).numpy())
    client = WebsocketClientPolicy("127.0.0.1", act_server.port)
    assert client.get_server_metadata()["action_dim"] == 4
    assert client.get_server_metadata()["input_features"]["observation.state"] == {
        "type": "STATE",
        "shape": [4],
    }
    for step in range(7):
        reply = client.infer(act_observation(step))
        assert reply["actions"].shape == (1, 4)
        np.testing.assert_array_equal(reply["actions"], expected[step], err_msg=f"step {step}")
        assert reply["server_timing"]["batch_rows"] == 1


def ask(ws, step: int, **session) -> np.ndarray | list[np.ndarray]:
    """One batched request of row 0 (the observation of `step`); the reply's actions."""
    observation = {key: value[None] for key, value in act_observation(step).items()}
    ws.send(wire.pack({**observation, "__lerobot__": {"rows": [0], "resets": [], **session}}))
    return wire.unpack(ws.recv(timeout=30))["actions"]


def test_a_row_can_be_handed_the_rest_of_its_chunk_with_its_action(act_server):
    """ACT's n_action_steps is 5. One action per request (openpi's way, and the default), a
    bound of 3, and no bound: the same 7 actions, from 7, 3 and 2 requests; the server counts
    what it handed out as taken."""
    url = f"ws://127.0.0.1:{act_server.port}"
    taken = {}
    for name, max_actions in (("one", 1), ("three", 3), ("all", None)):
        actions = []
        with connect(url, compression=None, max_size=None) as ws:
            ws.recv()  # metadata
            for step in range(20):
                reply = ask(ws, len(actions), resets=[[0, 0]] if step == 0 else [], max_actions=max_actions)
                actions.extend(np.concatenate(reply) if isinstance(reply, list) else reply[:, 0])
                if len(actions) >= 7:
                    taken[name] = (np.stack(actions[:7]), step + 1)
                    break
    np.testing.assert_array_equal(taken["three"][0], taken["one"][0])
    np.testing.assert_array_equal(taken["all"][0], taken["one"][0])
    assert [taken[name][1] for name in ("one", "three", "all")] == [7, 3, 2]  # 3+2+3, 5+5


def test_pings_and_a_fragmented_request_are_answered_as_websockets_would(act_server):
    """The server reads whole binary frames itself; pings go on to websockets, and a message
    sent in fragments hands the connection to websockets, which still answers it."""
    with connect(f"ws://127.0.0.1:{act_server.port}", compression=None) as ws:
        ws.recv()
        expected = ask(ws, 0)
        assert ws.ping().wait(10)
        observation = {key: value[None] for key, value in act_observation(0).items()}
        frame = wire.pack({**observation, "__lerobot__": {"rows": [1], "resets": []}})
        ws.send([frame[:100], frame[100:5000], frame[5000:]])  # three frames: one message
        np.testing.assert_array_equal(wire.unpack(ws.recv(timeout=30))["actions"][0], expected[0])
        assert ws.ping().wait(10)
        np.testing.assert_array_equal(ask(ws, 0)[0].shape, expected[0].shape)


def test_health_check_answers_200():
    with running_server(ObservationPolicy(2), api_key="k") as server:  # no key needed for it
        response = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=10)
        assert response.status == 200 and response.read() == b"OK\n"


def test_an_api_key_is_required_when_set():
    with running_server(ObservationPolicy(2), api_key="s3cret") as server:
        with pytest.raises(InvalidStatus) as refused:
            WebsocketClientPolicy("127.0.0.1", server.port, api_key="wrong")
        assert refused.value.response.status_code == 401
        with pytest.raises(InvalidStatus):
            WebsocketClientPolicy("127.0.0.1", server.port)
        client = WebsocketClientPolicy("127.0.0.1", server.port, api_key="s3cret")
        assert client.infer({"observation.state": np.zeros(2, np.float32)})["actions"].shape == (1, 2)


def test_two_authorization_headers_get_400_in_one_log_line(caplog):
    with running_server(ObservationPolicy(2), api_key="s3cret") as server:
        twice = [("Authorization", "Api-Key s3cret"), ("Authorization", "Api-Key other")]
        with pytest.raises(InvalidStatus) as refused:
            connect(f"ws://127.0.0.1:{server.port}", additional_headers=twice)
        assert refused.value.response.status_code == 400
        with connect(f"ws://127.0.0.1:{server.port}", additional_headers=twice[:1]):
            pass  # one header, the right key: accepted
    assert not [r for r in caplog.records if r.exc_info]  # no traceback
    assert any("2 Authorization headers" in r.getMessage() for r in caplog.records)


def test_web_pages_cannot_connect_unless_their_origin_is_allowed():
    """Without a key the server is open to this machine, but not to a web page in its browser."""
    with running_server(ObservationPolicy(2)) as server:
        with pytest.raises(InvalidStatus) as refused:
            connect(f"ws://127.0.0.1:{server.port}", origin="https://evil.example")
        assert refused.value.response.status_code == 403
        with connect(f"ws://127.0.0.1:{server.port}"):
            pass  # evaluators send no Origin
    with running_server(ObservationPolicy(2), allowed_origins=["http://localhost:3000"]) as server:
        connect(f"ws://127.0.0.1:{server.port}", origin="http://localhost:3000").close()


def ndarray(data: bytes, dtype: str, shape: list) -> dict:
    return {b"__ndarray__": True, b"data": data, b"dtype": dtype, b"shape": shape}


GOOD = act_observation(0)
BAD_REQUESTS = {
    "text frame": ("hello", "requests are binary msgpack frames"),
    "not msgpack": (b"\xc1\xc1\xc1", "not a msgpack message"),
    "a list": (msgpack.packb([1, 2]), "a request must be a msgpack map"),
    "no arrays": (wire.pack({"prompt": "hi"}), "holds no observation array"),
    "object dtype": (msgpack.packb({"observation.state": ndarray(b"\0" * 8, "|O", [1])}), "|O is not sent"),
    "short data": (
        msgpack.packb({"observation.state": ndarray(b"\0" * 3, "<f4", [4])}),
        "needs 4 bytes per item",
    ),
    "missing input": (wire.pack({"observation.state": GOOD["observation.state"]}), "reads observation.image"),
    # ACT reads 96x96 frames and does not resize them: other sizes would run, slower and wrong.
    "image one pixel short": (
        wire.pack({**GOOD, "observation.image": np.zeros((95, 96, 3), np.uint8)}),
        "'observation.image': shape (95, 96, 3) per row, the policy reads (3, 96, 96)",
    ),
    "image four times larger": (
        wire.pack({**GOOD, "observation.image": np.zeros((192, 192, 3), np.uint8)}),
        "the policy reads (3, 96, 96)",
    ),
    # 20,000 one-byte maps would cost ~1.5 MB of memory each 20 KB; the count stops decoding.
    "a flood of empty maps": (
        msgpack.packb([[{}] * 100] * 200),
        "more than 10000 maps and lists in one frame",
    ),
    "too many values": (msgpack.packb([0] * 200_000), "200000 items (at most 131072 values in one frame)"),
    # Refused at its length prefix: a 12 MiB prompt would be decoded into 12 MiB more first.
    "a prompt of 100 KB": (
        wire.pack({**GOOD, "prompt": "x" * 100_000}),
        "a string of 100000 bytes (at most 65536)",
    ),
    "an array it does not read": (
        wire.pack({**GOOD, "observation.extra": np.zeros((64, 64), np.float32)}),
        "'observation.extra': not an input of the served policy (it reads observation.image, observation.state)",
    ),
    "wrong state size": (
        wire.pack({**GOOD, "observation.state": np.zeros(7, np.float32)}),
        "the policy reads (4,)",
    ),
    "bad rows": (wire.pack({**GOOD, "__lerobot__": {"rows": [0, 0]}}), "distinct row ids"),
    "no actions asked": (
        wire.pack({**GOOD, "__lerobot__": {"rows": [0], "resets": [], "max_actions": 0}}),
        "max_actions must be a positive integer or nil, not 0",
    ),
    "rows vs arrays": (
        wire.pack({**GOOD, "__lerobot__": {"rows": [0, 1]}}),
        "does not start with the 2 requested",
    ),
    "reset of another row": (
        wire.pack({**GOOD, "__lerobot__": {"resets": [[3, 1]]}}),
        "[3, 1] is not a [row, seed] pair of a requested row",
    ),
}


def test_a_frame_above_the_limit_closes_its_connection_and_the_server_goes_on(act_server):
    """ACT's declared inputs make a request of 32 rows ~3.5 MB: the limit is the 16 MiB floor."""
    assert act_server.max_frame_bytes == 16 * 2**20
    with connect(f"ws://127.0.0.1:{act_server.port}", compression=None, max_size=None) as ws:
        ws.recv()  # metadata
        ws.send(b"\x00" * (17 * 2**20))
        with pytest.raises(Exception):  # noqa: B017  (closed by the server)
            ws.recv(timeout=30)
        assert ws.close_code == 1009  # message too big
    client = WebsocketClientPolicy("127.0.0.1", act_server.port)
    assert client.infer(act_observation(0))["actions"].shape == (1, 4)


def test_what_a_client_sends_cannot_forge_or_flood_the_servers_log(act_server, caplog):
    forged_key = "observation.state\n17:00:00 INFO lerobot.serving.server: client 99 connected from 6.6.6.6:1"
    huge_dtype = "<" + "f" * 1_000_000
    frames = [
        msgpack.packb({forged_key: ndarray(b"\0" * 16, "<f4", [4])}),
        msgpack.packb({"observation.state": ndarray(b"\0" * 16, huge_dtype, [4])}),
    ]
    for frame in frames:
        with connect(f"ws://127.0.0.1:{act_server.port}", compression=None, max_size=None) as ws:
            ws.recv()  # metadata
            ws.send(frame)
            answer = ws.recv(timeout=30)
            assert "\n" not in answer and len(answer) < 1_000
    logged = [r.getMessage() for r in caplog.records if "bad request" in r.getMessage()]
    assert len(logged) == 2
    assert all("\n" not in line and len(line) < 1_000 for line in logged)


@pytest.mark.parametrize("frame, reason", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_a_bad_request_gets_one_line_and_close_1011_and_the_server_goes_on(act_server, frame, reason):
    with connect(f"ws://127.0.0.1:{act_server.port}", compression=None, max_size=None) as ws:
        ws.recv()  # metadata
        ws.send(frame)
        answer = ws.recv(timeout=30)
        assert isinstance(answer, str) and answer.startswith("bad request: ") and reason in answer
        assert "\n" not in answer
        with pytest.raises(Exception):  # noqa: B017  (closed by the server, whatever the type)
            ws.recv(timeout=30)
        assert ws.close_code == 1011
    client = WebsocketClientPolicy("127.0.0.1", act_server.port)
    assert client.infer(act_observation(0))["actions"].shape == (1, 4)


def test_a_client_vanishing_mid_request_leaves_the_server_serving(act_server):
    ws = connect(f"ws://127.0.0.1:{act_server.port}", compression=None, max_size=None)
    ws.recv()
    ws.send(wire.pack(act_observation(0)))
    ws.socket.close()  # no close handshake, reply never read
    client = WebsocketClientPolicy("127.0.0.1", act_server.port)
    assert client.infer(act_observation(1))["actions"].shape == (1, 4)


class GatedPolicy(ObservationPolicy):
    """Blocks in select_action until `gate` is set (counts the rows of each call)."""

    def __init__(self, gate: threading.Event, action_dim: int = 2, fail_on=None):
        super().__init__(action_dim, fail_on=fail_on)
        self.gate, self.entered, self.rows_per_call = gate, threading.Event(), []

    def select_action(self, batch):
        self.entered.set()
        self.gate.wait(30)
        self.rows_per_call.append(batch["observation.state"].shape[0])
        return super().select_action(batch)


def test_inference_never_blocks_the_event_loop():
    """While the policy computes for one client, others connect, get metadata and health."""
    gate = threading.Event()
    policy = GatedPolicy(gate)
    with running_server(policy) as server:
        busy = WebsocketClientPolicy("127.0.0.1", server.port)
        reply = {}
        worker = threading.Thread(target=lambda: reply.update(busy.infer({"observation.state": np.ones(2)})))
        worker.start()
        assert policy.entered.wait(30)  # inference in progress, blocked on the gate
        other = WebsocketClientPolicy("127.0.0.1", server.port)  # metadata arrives meanwhile
        assert other.get_server_metadata()["server"] == "lerobot-serve-policy"
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=10) as response:
            assert response.status == 200
        gate.set()
        worker.join(30)
    assert reply["actions"].shape == (1, 2)


def test_frames_sent_while_a_request_is_computed_wait_outside_the_server():
    """A client that keeps sending while its request is computed fills the kernel's socket
    buffers, not the server's memory: before, the server read all 8 frames of 8 MiB behind the
    request (websockets queues up to 16 frames), 64 MiB held for one client."""
    gate = threading.Event()
    policy = GatedPolicy(gate)
    with running_server(policy) as server:
        ws = connect(f"ws://127.0.0.1:{server.port}", compression=None, max_size=None)
        ws.recv()  # metadata
        ws.send(wire.pack({"observation.state": np.ones(2, np.float32)}))
        assert policy.entered.wait(30)  # the request is being computed
        sent = []

        def keep_sending():
            extra = b"\x00" * (8 * 2**20)  # 64 MiB in all: more than any socket buffers hold
            with contextlib.suppress(Exception):  # the connection ends once the server reads them
                for _ in range(8):
                    ws.send(extra)
                    sent.append(len(extra))

        sender = threading.Thread(target=keep_sending, daemon=True)
        sender.start()
        sender.join(3)
        assert len(sent) <= 2, f"the server read {len(sent)} frames of 8 MiB behind a request"
        gate.set()
        with pytest.raises(Exception):  # noqa: B017  the reply, the error line, then the end
            while True:  # (the zeros are a bad request; what follows them is dropped unread)
                ws.recv(timeout=30)
        assert policy.rows_per_call[0] == 1  # the request was answered first
        sender.join(30)
        ws.socket.close()
        client = WebsocketClientPolicy("127.0.0.1", server.port)  # the server goes on
        assert client.infer({"observation.state": np.ones(2)})["actions"].shape == (1, 2)


def test_a_large_request_costs_the_server_its_size_once_and_is_given_back(act):
    """In a server process of its own, its peak RSS read from /proc: before, websockets' read
    buffer and its two copies of the payload, then msgpack's copy of the array, made a 15 MiB
    request cost 2.1-2.7x its size, kept by the allocator afterwards."""
    port = free_port()
    request = wire.pack({**GOOD, "observation.extra": np.ones(15 * 2**18, np.float32)})
    with serving_process(act, port) as server, connect(f"ws://127.0.0.1:{port}", max_size=None) as ws:
        ws.recv()
        ask(ws, 0)  # the policy's first inference has taken its memory
        time.sleep(0.5)
        reset_peak(server.pid)
        before = memory_mb(server.pid, "VmRSS")
        ws.send(request)
        assert "not an input of the served policy" in ws.recv(timeout=30)
        time.sleep(0.5)
        growth, kept = memory_mb(server.pid, "VmHWM") - before, memory_mb(server.pid, "VmRSS") - before
    size = len(request) / 2**20
    assert growth < 1.3 * size, f"a {size:.1f} MB request grew the server by {growth:.1f} MB"
    assert kept < 0.2 * size, f"{kept:.1f} MB of a {size:.1f} MB request kept after it was refused"


def infer_together(port: int, observations: list[dict]) -> list[dict]:
    """One openpi client per observation, all sending at once; their replies."""
    clients = [WebsocketClientPolicy("127.0.0.1", port) for _ in observations]
    replies = [None] * len(observations)

    def infer(i):
        try:
            replies[i] = clients[i].infer(observations[i])
        except RuntimeError as exc:  # openpi's client raises on a server error frame
            replies[i] = str(exc)

    threads = [threading.Thread(target=infer, args=(i,)) for i in range(len(observations))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return replies


def test_requests_of_several_clients_run_as_one_batch_with_their_own_results():
    observations = [{"observation.state": np.full(2, float(i), np.float32)} for i in range(3)]
    alone = [
        ObservationPolicy(2).select_action(
            {"observation.state": torch.from_numpy(o["observation.state"][None])}
        )
        for o in observations
    ]
    gate = threading.Event()
    policy = GatedPolicy(gate)
    with running_server(policy, batch_timeout_ms=10_000) as server:  # all three connected: no wait
        gate.set()
        replies = infer_together(server.port, observations)
    assert policy.rows_per_call == [3]
    for reply, expected in zip(replies, alone, strict=True):
        assert reply["server_timing"]["batch_requests"] == 3 and reply["server_timing"]["batch_rows"] == 3
        np.testing.assert_array_equal(reply["actions"], expected.numpy())


def test_a_failing_request_fails_alone_when_batched_with_others():
    gate = threading.Event()
    policy = GatedPolicy(gate, fail_on=(1.0, 1.0))
    observations = [{"observation.state": np.full(2, float(i), np.float32)} for i in range(3)]
    with running_server(policy, batch_timeout_ms=10_000) as server:
        gate.set()
        replies = infer_together(server.port, observations)
    assert policy.rows_per_call[0] == 3  # the batch, then each request alone
    assert isinstance(replies[1], str) and "ValueError: refusing state (1.0, 1.0)" in replies[1]
    assert replies[0]["actions"].shape == replies[2]["actions"].shape == (1, 2)
