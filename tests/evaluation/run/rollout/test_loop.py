"""The rollout loop's bookkeeping, on the instant fake env (real Meta-World runs are in tests/scripts)."""

import functools
import json

import numpy as np
import pytest
import torch

from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.commands import StepResult
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.adapters.lerobot_compat import eval_policy, eval_policy_all
from lerobot.evaluation.run.plan import shard_episodes
from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes
from lerobot.evaluation.run.rollout.episode import RunningEpisode
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.policies.random.modeling_random import RandomPolicy
from tests.fakes import FakeEnv, fake_spaces


def make_vec(n_envs: int, use_async: bool = False, task: str = "fake-task") -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    factory = functools.partial(FakeEnv, task=task)
    return LazyVectorEnv(
        [factory] * n_envs,
        obs_space,
        act_space,
        use_async=use_async,
        metadata={"render_fps": 10, "task": task, "task_description": f"do the {task}"},
    )


class RecordingPolicy(PreTrainedPolicy):
    """Zero actions; remembers resets and what it was asked, to check the loop's calls."""

    name = "recording"

    def __init__(self, action_dim: int = 2, bad: str | None = None):
        super().__init__(PreTrainedConfig.get_choice_class("random")(device="cpu"))
        self.action_dim, self.bad = action_dim, bad
        self.resets: list[tuple[list[int] | None, list[int] | None]] = []
        self.tasks: list[list[str]] = []

    def reset(self, env_ids=None, seeds=None):
        self.resets.append(
            (None if env_ids is None else list(env_ids), None if seeds is None else list(seeds))
        )

    def select_action(self, batch):
        self.tasks.append(list(batch["task"]))
        n = batch["observation.state"].shape[0]
        actions = torch.zeros(n, self.action_dim)
        if self.bad == "nan":
            actions[0, 0] = float("nan")
        return actions


def expected_length(seed: int) -> int:
    return 2 + seed % 5


def test_each_episode_follows_its_seed_and_stops_counting_when_done():
    results = run_episodes(make_vec(2), RecordingPolicy(), range(5), RolloutSettings(start_seed=100))
    assert [r.episode_index for r in results] == [0, 1, 2, 3, 4]
    assert [r.seed for r in results] == [100, 101, 102, 103, 104]
    for r in results:
        assert r.n_steps == expected_length(r.seed)
        assert r.sum_reward == r.n_steps  # 1 per step, nothing after the end
        assert r.max_reward == 1.0
        assert r.success == (r.seed % 2 == 0) == r.success_at_end


@pytest.mark.parametrize("n_envs", [1, 2, 3])
@pytest.mark.parametrize("continuous_batching", [True, False])
def test_results_do_not_depend_on_batch_size_or_refilling(n_envs, continuous_batching):
    policy = RandomPolicy(RandomConfig(device="cpu"), -np.ones(2), np.ones(2))
    settings = RolloutSettings(start_seed=3, continuous_batching=continuous_batching)
    results = run_episodes(make_vec(n_envs), policy, range(7), settings)
    reference = run_episodes(
        make_vec(1), RandomPolicy(RandomConfig(device="cpu"), -np.ones(2), np.ones(2)), range(7), settings
    )
    strip = lambda rs: [(r.episode_index, r.seed, r.success, r.sum_reward, r.n_steps) for r in rs]  # noqa: E731
    assert strip(results) == strip(reference)


def test_finished_slots_are_refilled_and_reset_row_by_row():
    policy = RecordingPolicy()
    run_episodes(make_vec(2), policy, range(4), RolloutSettings(start_seed=0))
    # seeds 0 (2 steps) and 1 (3 steps) start together; slot 0 frees first and takes episode 2
    assert policy.resets == [([0, 1], [0, 1]), ([0], [2]), ([1], [3])]
    assert policy.tasks[0] == ["do the fake-task", "do the fake-task"]


def test_each_reset_tells_the_env_its_episode_index():
    env = make_vec(2)
    run_episodes(env, RecordingPolicy(), range(4), RolloutSettings(start_seed=0))
    assert env.call("episode_index") == (2, 3)  # the last episodes each slot ran


def test_results_keep_the_init_state_the_env_reported():
    results = run_episodes(make_vec(2), RecordingPolicy(), range(5), RolloutSettings(start_seed=0))
    assert [r.init_state_index for r in results] == [0, 1, 2, 0, 1]


def test_without_refilling_a_new_wave_waits_for_the_whole_batch():
    policy = RecordingPolicy()
    run_episodes(make_vec(2), policy, range(4), RolloutSettings(start_seed=0, continuous_batching=False))
    assert policy.resets == [([0, 1], [0, 1]), ([0, 1], [2, 3])]


def test_wrong_action_shape_names_policy_shape_and_step():
    with pytest.raises(
        ValueError,
        match=r"policy 'recording' returned actions of shape \(2, 3\) at step 0; expected \(2, 2\)",
    ):
        run_episodes(make_vec(2), RecordingPolicy(action_dim=3), range(2), RolloutSettings())


def test_nan_actions_end_that_rows_episode_as_the_policys_failure():
    """Row 0 always acts NaN: its episodes (0, then 2) end at their first step, scored as the
    policy's failures (in the rates, unlike the harness's); row 1's episode runs to its end."""
    from lerobot.evaluation.results import scored

    results = run_episodes(make_vec(2), RecordingPolicy(bad="nan"), range(3), RolloutSettings(start_seed=0))
    by_index = {r.episode_index: r for r in results}
    for index in (0, 2):
        episode = by_index[index]
        assert (
            episode.policy_error == "policy 'recording' returned NaN or inf actions at step 0 of the episode"
        )
        assert (episode.success, episode.success_at_end, episode.n_steps) == (False, False, 0)
        assert episode.failure_reason is None
    assert by_index[1].policy_error is None and by_index[1].n_steps == expected_length(1)
    assert len(scored(results)) == 3


def test_videos_stream_one_frame_per_step_plus_the_first(tmp_path):
    import imageio.v3 as iio

    results = run_episodes(
        make_vec(2),
        RecordingPolicy(),
        range(3),
        RolloutSettings(start_seed=0, max_episodes_rendered=2, videos_dir=tmp_path),
    )
    assert [r.video_path is not None for r in results] == [True, True, False]
    for r in results[:2]:
        frames = list(iio.imiter(r.video_path))
        assert len(frames) == r.n_steps + 1


def test_eval_policy_all_aggregates_and_closes_every_env(tmp_path):
    envs = {"g1": {0: make_vec(2, task="a"), 1: make_vec(2, task="b")}, "g2": {0: make_vec(2, task="c")}}
    info = eval_policy_all(envs, RecordingPolicy(), n_episodes=4, start_seed=0)
    assert [(t["task_group"], t["task_id"], t["task"]) for t in info["per_task"]] == [
        ("g1", 0, "a"),
        ("g1", 1, "b"),
        ("g2", 0, "c"),
    ]
    # seeds 0..3: even seeds succeed -> 50%
    assert info["overall"]["pc_success"] == 50.0 and info["overall"]["n_episodes"] == 12
    assert info["per_group"]["g1"]["n_episodes"] == 8
    assert info["overall"] == info["aggregated"]
    assert len(info["per_episode"]) == 12
    assert all(not env.started for by_id in envs.values() for env in by_id.values())
    json.dumps(info, allow_nan=False)


def test_eval_policy_single_env_shape():
    info = eval_policy(make_vec(1), RecordingPolicy(), n_episodes=3, start_seed=0)
    assert info["aggregated"]["n_episodes"] == 3
    assert [e["episode_ix"] for e in info["per_episode"]] == [0, 1, 2]


def test_a_shard_runs_every_nth_episode_with_the_same_results():
    full = run_episodes(make_vec(2), RecordingPolicy(), range(7), RolloutSettings(start_seed=0))
    shards = [
        run_episodes(
            make_vec(2), RecordingPolicy(), shard_episodes(range(7), (i, 3)), RolloutSettings(start_seed=0)
        )
        for i in range(3)
    ]
    assert [[r.episode_index for r in shard] for shard in shards] == [[0, 3, 6], [1, 4], [2, 5]]
    merged = sorted((r for shard in shards for r in shard), key=lambda r: r.episode_index)
    strip = lambda rs: [(r.seed, r.success, r.sum_reward, r.n_steps) for r in rs]  # noqa: E731
    assert strip(merged) == strip(full)


def test_the_task_description_comes_from_the_task_spec_not_from_the_workers():
    from lerobot.configs.env import TaskSpec

    env = make_vec(2, use_async=True)

    def no_worker_calls(*args, **kwargs):
        raise AssertionError("the rollout asked a worker for an attribute")

    env.call = no_worker_calls
    policy = RecordingPolicy()
    task = TaskSpec("g", 3, "fake-task", "put the fake block away", fps=10)
    try:
        run_episodes(env, policy, range(2), RolloutSettings(), task)
    finally:
        env.close()
    assert policy.tasks and all(rows == ["put the fake block away"] * 2 for rows in policy.tasks)


def test_a_huge_failure_text_is_kept_as_one_bounded_line():
    """A server's 20 MB error must not land whole in episodes.jsonl, eval_info.json and the report."""
    from lerobot.evaluation.results import EpisodeResult
    from lerobot.utils.logging_utils import MAX_QUOTED_CHARS

    reason = "server error: " + "A" * 20_000_000 + "\nforged line"
    failed = EpisodeResult.failed(episode_index=0, seed=0, reason=reason, retries=0)
    assert failed.failure_reason.startswith("server error: AAA")
    assert len(failed.failure_reason) < MAX_QUOTED_CHARS + 50 and "\n" not in failed.failure_reason


def test_each_success_records_the_step_it_first_succeeded_at():
    """The fake env succeeds at its last step only: that step, counted as n_steps counts."""
    results = run_episodes(make_vec(2), RecordingPolicy(), range(5), RolloutSettings(start_seed=100))
    for r in results:
        assert r.success_step == (r.n_steps if r.success else None)


def test_success_step_is_the_first_success_even_when_it_does_not_last():
    episode = RunningEpisode(index=0, seed=0)
    for success in (False, True, False, True):
        episode.record(StepResult(None, 0.0, False, False, {"is_success": success}))
    result = episode.finish()
    assert (result.success_step, result.n_steps, result.success_at_end) == (2, 4, True)
