"""ManiSkill's batched path (`--env.batched`): a task's whole batch in this process, in one scene on a
GPU, in one-env physx_cpu scenes stepped in turn here. Each slot must run the episode a one-env
env runs from the same seed, whatever the other slots do, and lerobot-eval's per-episode results
must equal the worker path's."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("mani_skill", reason="the maniskill extra is not installed")

from lerobot.envs.maniskill import ManiskillEnvConfig  # noqa: E402
from lerobot.envs.maniskill.env import BatchedScene, ManiskillEnv  # noqa: E402
from lerobot.envs.slots import SlotRound  # noqa: E402
from lerobot.scripts.lerobot_eval import main as lerobot_eval  # noqa: E402

pytestmark = pytest.mark.xdist_group("maniskill")


def state_config(**overrides) -> ManiskillEnvConfig:
    return ManiskillEnvConfig(
        task="PickCube-v1", obs_type="state", episode_length=6, batched=True, **overrides
    )


def actions(space, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(space.low, space.high).astype(np.float32) for _ in range(n)]


def one_env_episode(cfg: ManiskillEnvConfig, seed: int, steps: list[np.ndarray]) -> list[tuple]:
    env = ManiskillEnv(**cfg.env_kwargs("PickCube-v1"))
    try:
        obs, _ = env.reset(seed=seed)
        out = [(obs["agent_pos"], obs["environment_state"])]
        for action in steps:
            obs, reward, terminated, truncated, info = env.step(action)
            out.append(
                (
                    obs["agent_pos"],
                    obs["environment_state"],
                    reward,
                    terminated,
                    truncated,
                    info["is_success"],
                )
            )
        return out
    finally:
        env.close()


@pytest.mark.slow
def test_each_slot_runs_the_episode_a_one_env_scene_runs_from_its_seed():
    """Slot 1 starts its episode two rounds after slot 0, and slot 0 goes on to a second episode
    while slot 1 runs: every episode equals a lone env's from the same seed."""
    cfg = state_config()
    task = cfg.tasks()[0]
    scene = BatchedScene(cfg.env_kwargs(task.name), 2, task)
    space = scene.single_action_space
    plan = {1000: actions(space, 6, 0), 1001: actions(space, 6, 1), 1002: actions(space, 3, 2)}
    seen: dict[int, list[tuple]] = {}
    try:
        [(obs, _)] = scene.step_and_reset_at(SlotRound(reset_ids=[0], seeds=[1000]))[1]
        seen[1000] = [(obs["agent_pos"], obs["environment_state"])]
        running = {0: 1000}
        for k in range(9):
            stepping = sorted(running)
            round_actions = [plan[running[slot]][len(seen[running[slot]]) - 1] for slot in stepping]
            resets = {1: 1001} if k == 1 else {0: 1002} if k == 5 else {}
            steps, reset_results = scene.step_and_reset_at(
                SlotRound(stepping, round_actions, list(resets), list(resets.values()))
            )
            for slot, result in zip(stepping, steps, strict=True):
                obs = result.observation
                seen[running[slot]].append(
                    (
                        obs["agent_pos"],
                        obs["environment_state"],
                        result.reward,
                        result.terminated,
                        result.truncated,
                        result.info["is_success"],
                    )
                )
                if (
                    result.terminated
                    or result.truncated
                    or len(seen[running[slot]]) > len(plan[running[slot]])
                ):
                    del running[slot]
            for (slot, seed), (obs, _) in zip(resets.items(), reset_results, strict=True):
                seen[seed] = [(obs["agent_pos"], obs["environment_state"])]
                running[slot] = seed
    finally:
        scene.close()
    for seed, steps in plan.items():
        expected = one_env_episode(cfg, seed, steps)
        got = seen[seed]
        assert len(got) == len(expected), seed
        for k, (ours, alone) in enumerate(zip(got, expected, strict=True)):
            for a, b in zip(ours, alone, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"seed {seed}, step {k}")


def test_a_round_that_leaves_out_a_running_slot_is_refused():
    """A scene steps all its envs: a mid-episode slot left out would be stepped all the same."""
    cfg = state_config()
    task = cfg.tasks()[0]
    scene = BatchedScene(cfg.env_kwargs(task.name), 1, task)
    try:
        scene.step_and_reset_at(SlotRound(reset_ids=[0], seeds=[3]))
        with pytest.raises(RuntimeError, match=r"slots \[0\] are mid-episode but not in this round"):
            scene.step_and_reset_at(SlotRound())
    finally:
        scene.close()


def run_eval(tmp_path, name: str, *flags: str) -> list[tuple]:
    out = tmp_path / name
    lerobot_eval(
        [
            "--policy.type=random",
            "--env.type=maniskill",
            "--env.task=so100",
            "--env.observation_height=32",
            "--env.observation_width=32",
            "--env.render_size=32",
            "--env.episode_length=6",
            "--eval.n_episodes=3",
            "--eval.batch_size=2",
            f"--output_dir={out}",
            *flags,
        ]
    )
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    return sorted(
        (r["task"], r["episode_index"], r["seed"], r["success"], r["sum_reward"], r["n_steps"]) for r in rows
    )


@pytest.mark.slow
def test_lerobot_eval_gives_the_same_episodes_batched_in_one_process_as_in_workers(tmp_path):
    """The `so100` group (two tasks whose state sizes differ), cameras and videos on: the batched
    path's per-episode results are the worker path's."""
    batched = run_eval(tmp_path, "batched", "--env.batched=true")
    workers = run_eval(tmp_path, "workers", "--env.batched=false")
    assert batched == workers
    assert {row[0] for row in batched} == {"PickCubeSO100-v1", "SO100GraspCube-v1"} and len(batched) == 6


def test_auto_simulates_on_the_gpu_only_where_sapiens_physx_gpu_library_is(monkeypatch, tmp_path, caplog):
    """`auto` never has SAPIEN download its PhysX GPU library (an offline GPU machine would fail
    every scene): without it, physx_cpu and one line saying why; with it, physx_cuda."""
    from lerobot.envs.maniskill import backend

    monkeypatch.setattr(backend, "cuda_available", lambda: True)
    monkeypatch.setenv("HOME", str(tmp_path))
    backend.resolve_sim_backend.cache_clear()
    try:
        with caplog.at_level("WARNING", logger=backend.__name__):
            assert backend.resolve_sim_backend("auto") == "physx_cpu"
        assert "SAPIEN's PhysX GPU library is not at" in caplog.text and str(tmp_path) in caplog.text
        library = backend.physx_gpu_library()
        library.parent.mkdir(parents=True)
        library.touch()
        backend.resolve_sim_backend.cache_clear()
        assert backend.resolve_sim_backend("auto") == "physx_cuda"
        assert backend.resolve_sim_backend("physx_cuda") == "physx_cuda"  # asked for: SAPIEN's to fetch
    finally:
        backend.resolve_sim_backend.cache_clear()
