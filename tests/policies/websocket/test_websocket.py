"""`--policy.type=websocket` against real servers on 127.0.0.1: lerobot-serve-policy in a thread,
or a minimal openpi-shaped server that answers with action chunks.

Loop logic runs on the instant fake env; remote == local is also shown on real Meta-World (ACT
checkpoint) and LIBERO (slow). Killing a server process mid-run is in
tests/scripts/test_lerobot_serve_policy.py.
"""

import asyncio
import contextlib
import json
import threading
import time

import numpy as np
import pytest

from lerobot.envs.factory import make_env_config, make_task_env
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.factory import make_policy
from lerobot.policies.websocket import wire
from lerobot.policies.websocket.configuration_websocket import WebsocketConfig
from lerobot.policies.websocket.connection import MAX_REPLY_BYTES
from lerobot.policies.websocket.modeling_websocket import WebsocketPolicy
from lerobot.serving.server import PolicyServer
from lerobot.utils.errors import ConfigError, PolicyServerLostError, PolicyUnreachableError
from tests.evaluation.run.rollout.test_chunks_in_workers import ActionRewardEnv
from tests.evaluation.run.rollout.test_loop import make_vec
from tests.fakes import fake_spaces
from tests.remote import ObservationPolicy, free_port, running_server


def client(port: int, **settings) -> WebsocketPolicy:
    return WebsocketPolicy(WebsocketConfig(port=port, **settings))


def outcomes(results) -> list[tuple]:
    return [(r.episode_index, r.seed, r.success, r.sum_reward, r.n_steps) for r in results]


def run_fake(policy, n_envs: int = 3, episodes=range(7), **settings):
    env = make_vec(n_envs)
    try:
        return run_episodes(env, policy, episodes, RolloutSettings(start_seed=3, **settings))
    finally:
        env.close()


class RecordingActions:
    """Wraps a policy to keep every action it returned, per call."""

    def __init__(self, policy):
        self.policy, self.actions = policy, []

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def select_action(self, batch):
        actions = self.policy.select_action(batch)
        self.actions.append(actions.clone())
        return actions

    def actions_without_observation(self, n_rows):
        actions = self.policy.actions_without_observation(n_rows)
        if actions is not None:
            self.actions.append(actions.clone())
        return actions

    def take_queued_actions(self, n_rows):
        """A chunk sent whole to the env counts as its steps' actions, one call each."""
        rest = self.policy.take_queued_actions(n_rows)
        if rest is not None:
            self.actions.extend(action[None] for action in rest[0])  # one row in these tests
        return rest


# -- connecting ---------------------------------------------------------------------------


def test_no_server_is_a_one_line_error_naming_the_flags():
    with pytest.raises(PolicyUnreachableError) as error:
        client(free_port())
    message = str(error.value)
    assert (
        "\n" not in message
        and "--policy.host/--policy.port" in message
        and "ConnectionRefusedError" in message
    )


def test_a_wrong_api_key_is_a_one_line_error_naming_the_flag():
    with running_server(ObservationPolicy(2), api_key="s3cret") as server:
        with pytest.raises(
            ConfigError, match=r"^--policy.api_key: .* refused the connection \(HTTP 401\)"
        ) as error:
            client(server.port, api_key="wrong")
        assert "\n" not in str(error.value)
        assert client(server.port, api_key="s3cret").format.batched


def test_a_servers_metadata_cannot_forge_the_clients_log(caplog):
    with running_server(ObservationPolicy(2)) as server:
        server.metadata["policy"] = "act\n12:00:00 INFO lerobot.scripts.lerobot_eval: overall success 100.0%"
        with caplog.at_level("INFO"):
            client(server.port)
    connected = [r.getMessage() for r in caplog.records if "connected" in r.getMessage()]
    assert connected and all("\n" not in line for line in connected)
    assert any("policy=act," in line for line in connected)  # its first line only
    assert not any("overall success" in line for line in connected)


def test_the_server_must_return_the_envs_action_size():
    env_cfg = make_env_config("metaworld", task="reach-v3", obs_type="state")  # 4-d actions
    expected = pytest.raises(ConfigError, match="returns 7-d actions, the env takes 4-d ones")
    with running_server(ObservationPolicy(7), action_dim=7) as server, expected:
        make_policy(WebsocketConfig(port=server.port), env_cfg=env_cfg)


@pytest.mark.parametrize(("obs_format", "env_type"), [("openpi_libero", "libero"), ("openpi_aloha", "aloha")])
def test_an_openpi_layout_on_another_benchmark_fails_at_parse_time(obs_format, env_type):
    with pytest.raises(
        ConfigError, match=f"--policy.obs_format={obs_format}: made for --env.type={env_type}"
    ):
        WebsocketConfig(obs_format=obs_format).check_env(make_env_config("metaworld"))


def test_openpis_libero_layout_serves_libero_pro_too():
    """LIBERO-PRO's envs are LIBERO's, perturbed: the same observations reach the server."""
    env_cfg = make_env_config("libero_pro", task="libero_goal_swap")
    assert env_cfg.format_type == "libero"
    WebsocketConfig(obs_format="openpi_libero").check_env(env_cfg)


# -- served == local ----------------------------------------------------------------------


def test_served_results_equal_local_ones_step_by_step():
    """A stateful policy whose actions depend on every observation: same episodes, same actions."""
    local = RecordingActions(ObservationPolicy(2))
    reference = run_fake(local)
    with running_server(ObservationPolicy(2)) as server:
        remote = RecordingActions(client(server.port))
        results = run_fake(remote)
    assert outcomes(results) == outcomes(reference)
    assert len(remote.actions) == len(local.actions)
    for served, computed in zip(remote.actions, local.actions, strict=True):
        np.testing.assert_array_equal(served.numpy(), computed.numpy())


def test_two_clients_share_one_server_and_keep_their_own_rows():
    reference = outcomes(run_fake(ObservationPolicy(2)))
    results = {}
    with running_server(ObservationPolicy(2), batch_timeout_ms=50) as server:

        def evaluate(name):
            results[name] = outcomes(run_fake(client(server.port)))

        threads = [threading.Thread(target=evaluate, args=(name,)) for name in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert results == {"a": reference, "b": reference}


def served_run(row_groups: int) -> tuple[list[tuple], set[int]]:
    """9 episodes on 4 envs in workers whose rewards are the actions' sums, against a fresh
    server: (outcomes, the row ids the server kept states under)."""
    obs_space, act_space = fake_spaces()
    env = LazyVectorEnv([ActionRewardEnv] * 4, obs_space, act_space, use_async=True)
    with running_server(ObservationPolicy(2)) as server:
        remote = client(server.port)
        try:
            settings = RolloutSettings(start_seed=3, row_groups=row_groups)
            results = run_episodes(env, remote, range(9), settings)
            served_rows = {key[1] for key in server.runner.states}  # before the client leaves
        finally:
            env.close()
            remote.close()
    return outcomes(results), served_rows


@pytest.mark.slow
def test_groups_taking_turns_keep_each_rows_state_on_the_server():
    """`--eval.row_groups=2` with a served policy: two groups of workers take turns with one
    client, each group's rows under ids of their own on the server, whose per-row state (the
    running sums of what each row observed) must never mix: every action, so every reward,
    as in lockstep."""
    reference, lockstep_rows = served_run(1)
    results, grouped_rows = served_run(2)
    assert results == reference
    assert lockstep_rows == {0, 1, 2, 3}
    assert len(grouped_rows) == 4 and min(grouped_rows) >= 2048  # apart from any batch row's


# -- failures -----------------------------------------------------------------------------


def test_a_server_error_fails_that_episode_for_good_with_the_servers_message():
    reference = run_fake(ObservationPolicy(2), n_envs=1)
    # FakeEnv observations are [seed, t]: episode 2 (seed 5) at its second step.
    with running_server(ObservationPolicy(2, fail_on=(5.0, 1.0))) as server:
        results = run_fake(client(server.port), n_envs=1)
    failed = [r for r in results if r.failure_reason]
    assert [r.episode_index for r in failed] == [2]
    assert failed[0].failure_reason == "policy server error: ValueError: refusing state (5.0, 1.0)"
    assert failed[0].retries == 0 and failed[0].n_steps == 1
    assert outcomes([r for r in results if not r.failure_reason]) == outcomes(
        [r for r in reference if r.episode_index != 2]
    )


def test_a_reply_over_the_clients_limit_fails_the_episode_in_one_line_unread():
    """A broken or hostile server's huge frame is refused at its header (before, the client read
    frames of any size into memory), and the episode fails as the server's, not the harness's."""
    with chunk_server(horizon=1, action_dim=2, padding=MAX_REPLY_BYTES) as (port, requests, closes):
        results = run_fake(client(port), n_envs=1, episodes=range(2))
    assert [r.failure_reason for r in results] == [
        "policy server sent a reply over 64 MiB, this client's limit"
    ] * 2
    assert len(requests) == 2 and closes == [1009, 1009]  # one request per episode, then closed
    assert all(r.retries == 0 and r.n_steps == 0 for r in results)


def test_a_server_that_restarts_mid_run_loses_nothing():
    """The server goes away while answering; the client reconnects, the episodes that were
    running re-run from their seeds, and every result equals the undisturbed run's."""
    reference = run_fake(ObservationPolicy(2))
    port = free_port()
    restarted = threading.Event()
    servers = []

    class GoesAwayOnce(ObservationPolicy):
        def select_action(self, batch):
            if self.calls == 4 and not restarted.is_set():
                restarted.set()
                threading.Thread(target=restart).start()
                threading.Event().wait(0.5)  # the server closes while this call is in flight
            return super().select_action(batch)

    def restart():
        servers[0].stop()
        servers.append(PolicyServer(ObservationPolicy(2), port=port))
        servers[-1].start()

    with running_server(GoesAwayOnce(2), port=port) as first:
        servers.append(first)
        results = run_fake(client(port, reconnect_timeout_s=30))
    servers[-1].stop()
    assert restarted.is_set()
    assert outcomes(results) == outcomes(reference)
    assert sum(r.retries for r in results) == 3  # the three running episodes, once each
    assert all(r.failure_reason is None for r in results)


def test_a_server_that_never_comes_back_stops_the_run_with_one_line():
    with running_server(ObservationPolicy(2)) as server:
        policy = client(server.port, reconnect_timeout_s=1)
    with pytest.raises(
        PolicyServerLostError, match="did not come back within 1 s.*--eval.resume=true"
    ) as err:
        run_fake(policy)
    assert not isinstance(err.value, ConfigError)  # an outage, not bad input: lerobot-eval exits 3


# -- openpi-shaped servers: chunks, no per-row state --------------------------------------


@contextlib.contextmanager
def chunk_server(horizon: int, action_dim: int, padding: int = 0):
    """A minimal openpi-shaped server: empty metadata, one (horizon, action_dim) chunk per
    request (`actions[i] = (request number + i / 100) / 1000`), every request kept. A request
    in the lerobot layout gets one such chunk per row it names. `closes` gets the close code of
    every connection that ended (None: dropped without a close frame). A hostile one adds
    `padding` bytes to every reply."""
    from websockets.asyncio.server import serve
    from websockets.exceptions import ConnectionClosed

    requests, closes, ready, stop = [], [], threading.Event(), None
    port = free_port()

    async def handler(ws):
        await ws.send(wire.pack({}))
        try:
            async for frame in ws:
                requests.append(wire.unpack(frame))
                chunk = len(requests) + np.arange(horizon, dtype=np.float32)[:, None] / 100
                actions = np.repeat(chunk, action_dim, axis=1) / 1000
                if "__lerobot__" in requests[-1]:
                    actions = np.stack([actions] * len(requests[-1]["__lerobot__"]["rows"]))
                await ws.send(
                    wire.pack({"actions": actions, **({"padding": b"\0" * padding} if padding else {})})
                )
        except ConnectionClosed:
            pass
        closes.append(ws.close_code)

    async def main():
        nonlocal stop
        stop = asyncio.Event()
        async with serve(handler, "127.0.0.1", port, compression=None, max_size=None):
            ready.set()
            await stop.wait()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield port, requests, closes
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)


def test_chunks_are_consumed_replan_steps_at_a_time_per_row():
    with chunk_server(horizon=10, action_dim=2) as (port, requests, _):
        policy = RecordingActions(client(port, replan_steps=3))
        results = run_fake(policy, n_envs=1, episodes=[0])  # seed 3: 5 steps
    assert results[0].n_steps == 5
    assert len(requests) == 2  # steps 0-2 from the first chunk, 3-4 from the second
    # The second chunk's rest goes to the env whole; the episode ends before its last action.
    taken = [float(a[0, 0]) * 1000 for a in policy.actions]
    np.testing.assert_allclose(taken, [1.0, 1.01, 1.02, 2.0, 2.01, 2.02], atol=1e-4)
    assert "__lerobot__" in requests[0]  # the lerobot layout always names its rows


# -- real simulators ----------------------------------------------------------------------


def run_on(env, policy, task, episodes, **settings) -> tuple[list, dict]:
    """Episodes on an already-built env (kept open: building a simulator is the slow part),
    and the action each episode's every step sent to the env."""
    sent = {}

    def on_step(env_id, episode, observation, action, step):
        sent[episode, step] = np.array(action)

    settings = RolloutSettings(start_seed=11, **settings)
    return run_episodes(env, policy, episodes, settings, task, RolloutHooks(on_step=on_step)), sent


def assert_same_actions(sent, reference):
    assert sent.keys() == reference.keys()
    for key, action in reference.items():
        np.testing.assert_array_equal(sent[key], action, err_msg=f"episode, step = {key}")


@pytest.mark.slow
def test_served_act_checkpoint_equals_local_on_real_metaworld(checkpoints):
    """Same checkpoint, same seeds: identical episodes and actions, with the checkpoint's
    normalisation and per-row action queues applied on the server."""
    from tests.policies.checkpoints import load

    loaded = load(checkpoints["act"], "--env.episode_length=12")
    task = loaded.cfg.env.tasks()[0]
    env = make_task_env(loaded.cfg.env, task, 2, False)
    try:
        settings = {"preprocessor": loaded.preprocessor, "postprocessor": loaded.postprocessor}
        reference, reference_sent = run_on(env, loaded.policy, task, range(3), **settings)
        served = load(checkpoints["act"], "--env.episode_length=12")
        with running_server(
            served.policy, preprocessor=served.preprocessor, postprocessor=served.postprocessor
        ) as server:
            remote = make_policy(WebsocketConfig(port=server.port), env_cfg=loaded.cfg.env)
            results, sent = run_on(env, remote, task, range(3))
    finally:
        env.close()
    assert outcomes(results) == outcomes(reference)
    assert_same_actions(sent, reference_sent)


def counting_calls(policy):
    """The policy, with `policy.calls`: how many times its `select_action` ran."""
    policy.calls = 0
    select = policy.select_action

    def counted(batch):
        policy.calls += 1
        return select(batch)

    policy.select_action = counted
    return policy


@pytest.mark.slow
def test_a_served_chunking_policy_is_asked_once_per_chunk_and_its_chunks_go_to_the_workers(checkpoints):
    """ACT (n_action_steps 5) served, 12-step episodes in 2 worker processes: the server hands
    each row the rest of its chunk with its action, so it computes as often as a local ACT
    does, the envs render only the observations a chunk reads, and every episode is the local
    one."""
    from tests.evaluation.run.rollout.test_blind_steps import run_watched
    from tests.policies.checkpoints import load

    flags = ("--env.episode_length=12",)
    local = load(checkpoints["act"], *flags)
    task = local.cfg.env.tasks()[0]
    settings = RolloutSettings(
        start_seed=11, preprocessor=local.preprocessor, postprocessor=local.postprocessor
    )
    counting_calls(local.policy)
    env = make_task_env(local.cfg.env, task, 2, use_async_envs=True)
    reference, _, reference_blind = run_watched(env, local.policy, range(3), settings)
    served = load(checkpoints["act"], *flags)
    counting_calls(served.policy)
    with running_server(
        served.policy, preprocessor=served.preprocessor, postprocessor=served.postprocessor
    ) as server:
        remote = make_policy(WebsocketConfig(port=server.port), env_cfg=local.cfg.env)
        env = make_task_env(local.cfg.env, task, 2, use_async_envs=True)
        results, rounds, blind = run_watched(env, remote, range(3), RolloutSettings(start_seed=11))
        remote.close()
    assert results == reference
    assert served.policy.calls == local.policy.calls == 6  # 3 chunks per episode, 2 episodes at a time
    assert any(np.ndim(action) == 2 for _, actions in rounds for action in actions)  # chunks sent whole
    assert sum(blind) == sum(reference_blind) > len(blind) // 2  # most steps render nothing


@pytest.fixture(scope="module")
def libero():
    """One small LIBERO env for the module's tests: 64x64 cameras, 6 steps per episode."""
    cfg = make_env_config(
        "libero",
        task="libero_spatial",
        task_ids=[0],
        episode_length=6,
        observation_height=64,
        observation_width=64,
    )
    task = cfg.tasks()[0]
    env = make_task_env(cfg, task, 1, False)
    yield cfg, task, env
    env.close()


@pytest.mark.slow
def test_served_results_equal_local_ones_on_real_libero(libero):
    cfg, task, env = libero
    reference, reference_sent = run_on(env, ObservationPolicy(7), task, range(2))
    with running_server(ObservationPolicy(7)) as server:
        results, sent = run_on(
            env, make_policy(WebsocketConfig(port=server.port), env_cfg=cfg), task, range(2)
        )
    assert outcomes(results) == outcomes(reference)
    assert_same_actions(sent, reference_sent)


@pytest.mark.slow
def test_openpi_libero_layout_on_real_libero(libero):
    cfg, task, env = libero
    with chunk_server(horizon=10, action_dim=7) as (port, requests, _):
        policy = make_policy(WebsocketConfig(port=port, obs_format="openpi_libero"), env_cfg=cfg)
        results, _ = run_on(env, policy, task, [0])
    assert results[0].n_steps == 6 and len(requests) == 2  # replan_steps=5
    message = requests[0]
    assert set(message) == {"observation/image", "observation/wrist_image", "observation/state", "prompt"}
    assert message["observation/image"].shape == message["observation/wrist_image"].shape == (224, 224, 3)
    assert message["observation/image"].dtype == np.uint8 and message["observation/state"].shape == (8,)
    assert message["prompt"] == task.description


@pytest.mark.slow
def test_openpi_aloha_layout_on_real_aloha_is_what_openpis_example_sends():
    """Our ALOHA env's first request equals openpi's ALOHA sim example's conversion of
    gym-aloha's own observation at the same seed; chunks are taken 10 actions at a time."""
    import gym_aloha  # noqa: F401  (registers gym_aloha/*)
    import gymnasium

    from tests.policies.websocket.test_obs_formats import openpi_aloha_observation

    cfg = make_env_config("aloha", task="AlohaTransferCube-v0", episode_length=12)
    task = cfg.tasks()[0]
    env = make_task_env(cfg, task, 1, False)
    try:
        with chunk_server(horizon=50, action_dim=14) as (port, requests, _):
            policy = make_policy(WebsocketConfig(port=port, obs_format="openpi_aloha"), env_cfg=cfg)
            results, sent = run_on(env, policy, task, [0])
    finally:
        env.close()
    assert results[0].n_steps == 12 and len(requests) == 2  # steps 0-9, then 10-11
    np.testing.assert_allclose(sent[0, 9], np.full(14, 1.09e-3), rtol=1e-5)
    np.testing.assert_allclose(sent[0, 10], np.full(14, 2e-3), rtol=1e-5)

    reference = gymnasium.make("gym_aloha/AlohaTransferCube-v0", obs_type="pixels_agent_pos")
    try:
        observation, _ = reference.reset(seed=11)  # run_on's start seed, episode 0
    finally:
        reference.close()
    expected = openpi_aloha_observation(observation["pixels"]["top"], observation["agent_pos"])
    message = requests[0]
    assert set(message) == {"state", "images"} and set(message["images"]) == {"cam_high"}
    np.testing.assert_array_equal(message["images"]["cam_high"], expected["images"]["cam_high"])
    np.testing.assert_array_equal(message["state"], expected["state"].astype(np.float32))


def test_lerobot_eval_says_goodbye_to_the_server_when_it_ends(tmp_path):
    """An openpi server logs a traceback for every client that drops its socket: the run closes
    its connection (code 1000) whether it ends well or not."""
    from lerobot.scripts.lerobot_eval import main as eval_main

    argv = [
        "--policy.type=websocket",
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.obs_type=state",
        "--env.episode_length=3",
        "--eval.n_episodes=2",
        "--eval.batch_size=1",  # one request per episode
        "--eval.use_async_envs=false",
    ]
    with chunk_server(horizon=10, action_dim=4) as (port, requests, closes):
        assert eval_main([*argv, f"--policy.port={port}", f"--output_dir={tmp_path / 'run'}"]) == 0
        assert len(requests) == 2 and wait_for(lambda: closes == [1000])  # one per episode
    # a run that stops on an error (actions of the wrong size) closes as cleanly
    with chunk_server(horizon=10, action_dim=3) as (port, requests, closes):
        assert eval_main([*argv, f"--policy.port={port}", f"--output_dir={tmp_path / 'bad'}"]) == 2
        assert len(requests) == 1 and wait_for(lambda: closes == [1000])


def wait_for(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.mark.slow
def test_tasks_in_parallel_threads_each_get_their_own_connection(tmp_path):
    """--env.max_parallel_tasks copies the policy per task thread: a served policy's copy is a
    client of its own, and the results equal the local policy's."""
    from lerobot.policies.factory import make_policy_config
    from lerobot.scripts.lerobot_eval import main as eval_main

    argv = [
        "--env.type=metaworld",
        "--env.task=reach-v3,push-v3",
        "--env.obs_type=state",
        "--env.episode_length=20",
        "--eval.n_episodes=2",
        "--eval.use_async_envs=false",
        "--env.max_parallel_tasks=2",
    ]
    assert eval_main(["--policy.type=metaworld_expert", *argv, f"--output_dir={tmp_path / 'local'}"]) == 0
    expert = make_policy(make_policy_config("metaworld_expert"), env_cfg=make_env_config("metaworld"))
    with running_server(expert) as server:
        served = ["--policy.type=websocket", f"--policy.port={server.port}"]
        assert eval_main([*served, *argv, f"--output_dir={tmp_path / 'remote'}"]) == 0
    assert episode_outcomes(tmp_path / "remote") == episode_outcomes(tmp_path / "local")


def episode_outcomes(run_dir) -> list[tuple]:
    info = json.loads((run_dir / "eval_info.json").read_text())
    return sorted(
        (e["task"], e["episode_index"], e["success"], e["sum_reward"], e["n_steps"])
        for e in info["per_episode"]
    )
