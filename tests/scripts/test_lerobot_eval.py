"""`lerobot-eval` end to end on real Meta-World."""

import json
import subprocess
import sys
import textwrap

import imageio.v3 as iio
import pytest

from lerobot.scripts.lerobot_eval import main


def run_cli(tmp_path, *flags: str) -> dict:
    out = tmp_path / "out"
    assert main([*flags, f"--output_dir={out}"]) == 0
    text = (out / "eval_info.json").read_text()
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def per_episode_outcomes(info: dict) -> list[tuple]:
    return [
        (e["task"], e["episode_index"], e["seed"], e["success"], round(e["sum_reward"], 9), e["n_steps"])
        for e in info["per_episode"]
    ]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["push-v3", "reach-v3", "pick-place-v3"])
def test_scripted_expert_solves_the_task(tmp_path, task):
    info = run_cli(
        tmp_path,
        "--policy.type=metaworld_expert",
        "--env.type=metaworld",
        f"--env.task={task}",
        "--env.obs_type=state",
        "--eval.n_episodes=10",
        "--eval.max_episodes_rendered=0",
    )
    assert info["overall"]["n_episodes"] == 10
    assert info["overall"]["pc_success"] >= 90.0


@pytest.mark.slow
def test_random_policy_stays_near_zero(tmp_path):
    info = run_cli(
        tmp_path,
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=push-v3,pick-place-v3",
        "--env.obs_type=state",
        "--eval.n_episodes=10",
        "--eval.max_episodes_rendered=0",
    )
    assert info["overall"]["n_episodes"] == 20
    assert info["overall"]["pc_success"] <= 10.0
    assert all(e["n_steps"] == 500 for e in info["per_episode"] if not e["success"])


@pytest.mark.slow
def test_a_measured_batch_size_is_run_and_remembered_for_the_same_workload(tmp_path, monkeypatch):
    from lerobot.evaluation.run.batching import measure
    from lerobot.utils.threads import usable_cores

    monkeypatch.setenv("LEROBOT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(measure, "WARMUP_S", 0.2)
    monkeypatch.setattr(measure, "WINDOW_S", 0.6)
    common = [
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.obs_type=state",
        "--eval.n_episodes=6",
        "--eval.max_episodes_rendered=0",
        "--seed=7",
    ]

    def batch_size_run(name: str, *flags: str) -> tuple[tuple[int, int, bool | None], list[tuple]]:
        info = run_cli(tmp_path / name, *common, *flags)
        ran = json.loads((tmp_path / name / "out" / "run_config.json").read_text())["eval"]
        return (ran["batch_size"], ran["row_groups"], ran["independent_rows"]), per_episode_outcomes(info)

    measured, outcomes = batch_size_run(
        "measured", "--env.episode_length=20", "--eval.measure_batch_size=true"
    )
    [entry] = json.loads((tmp_path / "cache" / "eval_batch_sizes.json").read_text())
    tried = [(r["batch_size"], r["row_groups"], r["independent_rows"]) for r in entry["measured"]]
    lockstep = [batch for batch, groups, independent in tried if groups == 1 and not independent]
    assert lockstep == measure.candidate_batches(usable_cores())[: len(lockstep)]
    assert tried[-1][1:] == (1, True)  # the fastest batch, with rows advancing independently
    assert all(r["env_steps_per_s"] > 0 for r in entry["measured"])
    remembered = (entry["batch_size"], entry["row_groups"], entry["independent_rows"])
    assert measured[:2] == remembered[:2] and remembered in tried
    assert measured[2] == (True if entry["independent_rows"] else None)
    assert entry["workload"]["env"]["type"] == "metaworld" and entry["workload"]["policy"]["type"] == "random"

    assert batch_size_run("remembered", "--env.episode_length=20") == (measured, outcomes)
    one = batch_size_run("one", "--env.episode_length=20", "--eval.batch_size=1", "--eval.row_groups=1")
    assert one == ((1, 1, None), outcomes)
    other_workload, _ = batch_size_run("other", "--env.episode_length=10")
    assert other_workload == (0, 0, None)  # auto: nothing was measured for these env settings


@pytest.mark.slow
def test_a_batch_size_that_cannot_be_remembered_is_still_run(tmp_path, monkeypatch, capsys):
    from lerobot.evaluation.run.batching import measure

    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("LEROBOT_CACHE_DIR", str(tmp_path / "not-a-folder"))
    monkeypatch.setattr(measure, "WARMUP_S", 0.1)
    monkeypatch.setattr(measure, "WINDOW_S", 0.3)
    flags = ["--policy.type=random", "--env.type=metaworld", "--env.task=reach-v3", "--env.obs_type=state"]
    flags += ["--env.episode_length=10", "--eval.n_episodes=2", "--eval.max_episodes_rendered=0"]
    info = run_cli(tmp_path, *flags, "--eval.measure_batch_size=true")
    assert info["overall"]["n_episodes"] == 2
    warned = capsys.readouterr().err
    assert "the fastest measured, not remembered: " in warned
    assert (
        "eval_batch_sizes.json: cannot write (" in warned and "set LEROBOT_CACHE_DIR to a writable" in warned
    )


@pytest.mark.slow
def test_results_are_identical_for_any_batch_and_wherever_its_envs_run(tmp_path):
    common = [
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.obs_type=state",
        "--env.episode_length=25",
        "--eval.n_episodes=5",
        "--eval.max_episodes_rendered=0",
        "--seed=7",
    ]
    # (batch size, envs the main process steps beside the workers, envs per worker, groups
    # taking turns or "ind": rows advancing independently): all in-process, one env per worker,
    # several per worker, mixed, the batch split into groups (one per worker; an env of the
    # main process as a group), and every worker on its own.
    layouts = [
        (1, 1, 1, 1),
        (2, 0, 1, 1),
        (2, 1, 1, 1),
        (3, 0, 1, 1),
        (3, 2, 1, 1),
        (3, 0, 2, 1),
        (3, 1, 2, 1),
        (3, 0, 1, 2),
        (3, 1, 1, 3),
        (4, 0, 2, 2),
        (3, 0, 1, "ind"),
        (4, 2, 1, "ind"),
    ]
    runs = [
        run_cli(
            tmp_path / f"bs{bs}-main{main}-per{per_worker}-groups{groups}",
            *common,
            f"--eval.batch_size={bs}",
            f"--eval.envs_in_main_process={main}",
            f"--eval.envs_per_worker={per_worker}",
            *(["--eval.independent_rows=true"] if groups == "ind" else [f"--eval.row_groups={groups}"]),
        )
        for bs, main, per_worker, groups in layouts
    ]
    assert all(per_episode_outcomes(run) == per_episode_outcomes(runs[0]) for run in runs[1:])
    assert [e["seed"] for e in runs[0]["per_episode"]] == [7, 8, 9, 10, 11]


@pytest.mark.slow
def test_default_observation_eval_writes_schema_and_video(tmp_path):
    info = run_cli(
        tmp_path,
        "--policy.type=metaworld_expert",
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.observation_height=64",
        "--env.observation_width=64",
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        "--eval.max_episodes_rendered=1",
    )
    assert set(info) >= {"per_episode", "per_task", "per_group", "overall", "aggregated"}
    for key in (
        "pc_success",
        "n_episodes",
        "avg_sum_reward",
        "avg_max_reward",
        "eval_s",
        "eval_ep_s",
        "video_paths",
    ):
        assert key in info["overall"], key
    assert info["overall"]["pc_success"] == 100.0  # the expert works from the default observations
    task = info["per_task"][0]
    assert (task["task_group"], task["task_id"], task["task"]) == ("reach-v3", 0, "reach-v3")
    assert task["task_description"] == "Reach a goal position"
    assert list(info["per_group"]) == ["reach-v3"]
    episode = info["per_episode"][0]
    assert {"episode_index", "seed", "success", "sum_reward", "max_reward", "n_steps"} <= set(episode)
    [video] = info["overall"]["video_paths"]
    assert video.endswith("videos/reach-v3_0/eval_episode_0.mp4")
    frames = list(iio.imiter(video))
    assert len(frames) == episode["n_steps"] + 1 and frames[0].shape == (64, 64, 3)
    assert info["per_episode"][1]["video_path"] is None


BAD_INPUTS = {
    "unknown env type": (
        ["--env.type=nope", "--policy.type=random"],
        "--env.type: invalid choice: 'nope' (choose from",
    ),
    "unknown task": (
        ["--env.type=metaworld", "--env.task=pushh-v3", "--policy.type=random"],
        "--env.task='pushh-v3': unknown Meta-World task",
    ),
    "unknown ALOHA task": (
        ["--env.type=aloha", "--env.task=AlohaTransfer-v0", "--policy.type=aloha_scripted"],
        "--env.task='AlohaTransfer-v0': unknown ALOHA task; did you mean 'AlohaTransferCube-v0'?",
    ),
    "PushT obs type": (
        ["--env.type=pusht", "--env.obs_type=pixels", "--policy.type=random"],
        "--env.obs_type='pixels': must be one of pixels_agent_pos, environment_state_agent_pos, state",
    ),
    "zero episodes": (
        ["--env.type=metaworld", "--eval.n_episodes=0", "--policy.type=random"],
        "--eval.n_episodes=0: must be a positive integer",
    ),
    "negative batch": (
        ["--env.type=metaworld", "--eval.batch_size=-2", "--policy.type=random"],
        "--eval.batch_size=-2: must be 0 (auto) or a positive integer",
    ),
    "unknown policy": (
        ["--env.type=metaworld", "--policy.type=pi0_fast"],
        "--policy.type: invalid choice: 'pi0_fast' (choose from",
    ),
    "missing policy": (["--env.type=metaworld"], "--policy.type: required; choose one of"),
    "unknown log level": (
        ["--env.type=metaworld", "--policy.type=random", "--log_level=LOUD"],
        "argument --log_level: invalid choice: 'LOUD' (choose from 'DEBUG', 'INFO', 'WARNING', 'ERROR')",
    ),
    "non-integer": (
        ["--env.type=metaworld", "--policy.type=random", "--eval.n_episodes=ten"],
        "--eval.n_episodes: Couldn't parse 'ten' into an int",
    ),
}


def test_bad_input_fails_in_one_line_before_any_simulator(tmp_path):
    """Each bad command line exits 2 with one line naming the flag; no simulator is imported."""
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, multiprocessing, sys
        from lerobot.scripts.lerobot_eval import main
        cases = json.loads({json.dumps(json.dumps({k: v[0] for k, v in BAD_INPUTS.items()}))})
        results = {{}}
        for name, argv in cases.items():
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(argv + ["--output_dir={tmp_path}/never"])
            results[name] = [code, err.getvalue()]
        simulators = ("metaworld", "mujoco", "dm_control", "gym_aloha", "gym_pusht", "pygame")
        results["_started"] = [any(m in sys.modules for m in simulators), multiprocessing.active_children()]
        print(json.dumps(results, default=str))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results.pop("_started") == [False, []]
    for name, (_, expected) in BAD_INPUTS.items():
        code, stderr = results[name]
        assert code == 2, name
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, (name, stderr)
        assert expected in lines[0], (name, lines[0])
    assert not (tmp_path / "never").exists()


def test_a_shard_without_episodes_says_so_instead_of_zero_success(tmp_path, capsys):
    code = main(
        [
            "--policy.type=random",
            "--env.type=metaworld",
            "--env.obs_type=state",
            "--eval.n_episodes=2",
            "--eval.shard=2/3",
            f"--output_dir={tmp_path}",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0 and "no episodes ran to their end" in err and "0.0%" not in err
    info = json.loads((tmp_path / "eval_info.json").read_text())
    assert info["overall"]["n_episodes"] == 0 and info["overall"]["pc_success"] is None
