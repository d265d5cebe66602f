"""Steps whose images nobody reads skip the render (`rows_reading_images`, `step_without_images`).

Skipping must never change an episode: the same actions and results as a loop that renders
every observation; a policy never sees a black image; videos and step hooks get every frame;
and a policy that reads a row it said it would not stops the run instead of acting on black.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.commands import ChunkResult
from lerobot.envs.factory import make_task_env
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.action_queue import RowActionQueue, batch_size, select_rows
from lerobot.policies.pretrained import PreTrainedPolicy
from tests.fakes import FakeEnv
from tests.policies.checkpoints import ENV_FLAGS, load, materialize

CHUNK = 3
SIDE = 16


class CameraEnv(FakeEnv):
    """FakeEnv with a camera whose every pixel is the step count + 1 (never black), counting
    its renders in `renders` (in-process slots share the list)."""

    def __init__(self, renders: list[int], **kwargs):
        super().__init__(**kwargs)
        self.renders = renders
        self.blind = False
        self.observation_space = spaces.Dict(
            {
                "agent_pos": self.observation_space["agent_pos"],
                "pixels": spaces.Box(0, 255, (SIDE, SIDE, 3), np.uint8),
            }
        )

    def _obs(self):
        obs = {"agent_pos": super()._obs()["agent_pos"]}
        obs["pixels"] = np.zeros((SIDE, SIDE, 3), np.uint8) if self.blind else self.render()
        return obs

    def render(self):
        self.renders.append(self.t)
        return np.full((SIDE, SIDE, 3), self.t + 1, np.uint8)

    def step_without_images(self, action):
        self.blind = True
        try:
            return self.step(action)
        finally:
            self.blind = False


class ImageChunkingPolicy(PreTrainedPolicy):
    """Predicts CHUNK actions from a row's state and image, like ACT, and notes the rows whose
    image was black, by round (`rounds`: the rounds stepped so far, set by `run_watched`)."""

    name = "image_chunking"

    def __init__(self, honest: bool = True, sees_all: bool = False):
        super().__init__(PreTrainedConfig.get_choice_class("random")(device="cpu"))
        self.queue = RowActionQueue()
        self.honest, self.sees_all = honest, sees_all
        self.rounds: list = []
        self.black_rows: list[tuple[int, list[int]]] = []

    def reset(self, env_ids=None, seeds=None):
        self.queue.reset(env_ids)

    def rows_reading_images(self, n_rows):
        if self.sees_all:
            return range(n_rows)
        return self.queue.empty_rows(n_rows) if self.honest else []

    def select_action(self, batch):
        n_rows = batch_size(batch)
        rows = list(range(n_rows)) if not self.honest else self.queue.empty_rows(n_rows)
        if rows:
            picked = select_rows(batch, rows, n_rows)
            brightness = picked["observation.image"].mean(dim=(1, 2, 3))
            self.black_rows.append(
                (len(self.rounds), [r for r, b in zip(rows, brightness, strict=True) if not b > 0])
            )
            base = picked["observation.state"] + brightness[:, None]
            chunk = torch.stack([base * (1 + k / 10) for k in range(CHUNK)], dim=1)
            self.queue.fill(rows, chunk, n_rows)
        return self.queue.pop()

    def actions_without_observation(self, n_rows):
        return None if self.queue.empty_rows(n_rows) else self.queue.pop()


def camera_vec(n_envs: int, renders: list[int]) -> LazyVectorEnv:
    probe = CameraEnv(renders)
    return LazyVectorEnv(
        [functools.partial(CameraEnv, renders)] * n_envs, probe.observation_space, probe.action_space
    )


def run_watched(env, policy, episodes, settings=None, hooks=None):
    """Results, what every round stepped (slots and their actions, a chunk's actions one after
    the other), and which of those steps were blind: watched at the env's
    `step_and_reset_at`, not through a step hook, which would switch blind steps off."""
    rounds: list[tuple[list[int], list[list[float]]]] = []
    blind: list[bool] = []
    inner = env.step_and_reset_at

    def watched(round_):
        steps, resets = inner(round_)
        rounds.append((list(round_.step_ids), [np.asarray(a).tolist() for a in round_.actions]))
        for step in steps:
            blind.extend(not s.images for s in (step.steps if isinstance(step, ChunkResult) else [step]))
        return steps, resets

    env.step_and_reset_at = watched
    policy.rounds = rounds
    try:
        results = run_episodes(env, policy, episodes, settings or RolloutSettings(start_seed=0), hooks=hooks)
    finally:
        env.close()
    return [(r.episode_index, r.seed, r.success, r.sum_reward, r.n_steps) for r in results], rounds, blind


def actions_by_slot(rounds) -> dict[int, list[list[float]]]:
    """Each slot's actions in the order it stepped them, whether they came one per round or
    as chunks."""
    stepped: dict[int, list[list[float]]] = {}
    for slots, actions in rounds:
        for slot, action in zip(slots, actions, strict=True):
            stepped.setdefault(slot, []).extend(action if np.ndim(action) == 2 else [action])
    return stepped


def black_images_read(policy: ImageChunkingPolicy) -> list[tuple[int, int]]:
    """(round, slot) where the policy read a black image of a slot that steps in that round
    (an idle slot's row may repeat a blind observation: its action is never used)."""
    return [(k, row) for k, rows in policy.black_rows for row in rows if row in policy.rounds[k][0]]


@pytest.mark.parametrize("continuous_batching", [True, False])
def test_a_chunking_policy_skips_the_renders_it_does_not_read_with_unchanged_actions(continuous_batching):
    """Episodes of 2-6 steps in 3 slots: rows refill at different steps, so a round may need
    some slots' images and not the others'. One step per round: chunks sent whole are
    `test_act_on_metaworld_in_workers...`'s."""
    settings = RolloutSettings(start_seed=0, continuous_batching=continuous_batching, chunks_in_workers=False)
    blind_renders, seeing_renders = [], []
    policy = ImageChunkingPolicy()
    results, rounds, blind = run_watched(camera_vec(3, blind_renders), policy, range(9), settings)
    seeing = run_watched(
        camera_vec(3, seeing_renders), ImageChunkingPolicy(sees_all=True), range(9), settings
    )
    assert (results, rounds) == seeing[:2]
    assert black_images_read(policy) == []
    n_steps = sum(result[-1] for result in results)
    assert not any(seeing[2]) and len(seeing_renders) == n_steps + 9  # every step and reset
    assert sum(blind) > n_steps / 3 and len(blind_renders) == n_steps - sum(blind) + 9


def test_a_policy_that_reads_rows_it_said_it_would_not_stops_the_run():
    """Its NaN-filled unrendered images give NaN actions, and the run stops naming the cause."""
    with pytest.raises(ValueError, match=r"NaN or inf actions .*rows \[\d.*rows_reading_images"):
        run_watched(
            camera_vec(2, []),
            ImageChunkingPolicy(honest=False),
            range(4),
            RolloutSettings(start_seed=0, chunks_in_workers=False),
        )


def test_step_hooks_and_videos_get_every_frame(tmp_path):
    seen = []
    hooks = RolloutHooks(on_step=lambda env_id, episode, obs, action, step: seen.append(obs["pixels"].any()))
    results, _, blind = run_watched(camera_vec(2, []), ImageChunkingPolicy(), range(4), hooks=hooks)
    assert all(seen) and len(seen) == sum(r[-1] for r in results) and not any(blind)

    settings = RolloutSettings(start_seed=0, max_episodes_rendered=2, videos_dir=tmp_path)
    results, rounds, blind = run_watched(camera_vec(1, []), ImageChunkingPolicy(), range(3), settings)
    steps_of = {r[0]: r[-1] for r in results}
    first, second, third = (blind[: steps_of[0]], blind[steps_of[0] : -steps_of[2]], blind[-steps_of[2] :])
    assert not any(first) and not any(second) and any(third)  # episodes 0 and 1 are filmed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval_episode_0.mp4", "eval_episode_1.mp4"]


@pytest.fixture(scope="module")
def act_checkpoint(tmp_path_factory):
    return materialize("act", tmp_path_factory.mktemp("checkpoints") / "act")


def test_act_on_metaworld_in_workers_renders_once_per_chunk_with_unchanged_results(
    act_checkpoint, one_torch_thread
):
    """n_action_steps=5, 11-step episodes in 2 async workers: 2 of 11 steps render their
    images, each chunk's last 4 steps travel as one message, and the actions and results equal
    a loop rendering every observation, one step per round."""
    env_flags = (*ENV_FLAGS["act"], "--env.episode_length=11", "--env.fast_render=true")
    loaded = load(act_checkpoint, env_flags=env_flags)
    [task] = loaded.cfg.env.tasks()

    def run(use_async: bool, sees_all: bool):
        settings = RolloutSettings(
            start_seed=5,
            preprocessor=loaded.preprocessor,
            postprocessor=loaded.postprocessor,
            chunks_in_workers=not sees_all,
        )
        env = make_task_env(loaded.cfg.env, task, 2, use_async_envs=use_async)
        if sees_all:
            loaded.policy.rows_reading_images = lambda n_rows: range(n_rows)
        try:
            return run_watched(env, loaded.policy, range(2), settings)
        finally:
            vars(loaded.policy).pop("rows_reading_images", None)  # back to the class's method

    reference_results, reference_rounds, reference_blind = run(use_async=False, sees_all=True)
    results, rounds, blind = run(use_async=True, sees_all=False)
    assert results == reference_results and [r[-1] for r in results] == [11, 11]
    assert actions_by_slot(rounds) == actions_by_slot(reference_rounds)
    # After the round that resets: steps 1, 6 and 11 one per round (each predicting a chunk),
    # steps 2-5 and 7-10 as chunks.
    assert (len(reference_rounds), len(rounds)) == (1 + 11, 1 + 5)
    assert not any(reference_blind)
    # Per episode, steps 4 and 9 return what the chunks at steps 5 and 10 read; the other 9
    # (the last one's included) render nothing.
    assert (len(blind), sum(blind)) == (22, 18)
