"""Shards (`--eval.shard=i/n`) merged with `lerobot-eval-merge` equal the unsharded run."""

import json

import pytest

from lerobot.scripts.lerobot_eval import main as eval_main
from lerobot.scripts.lerobot_eval_merge import main as merge_main

COMMON = [
    "--policy.type=random",
    "--env.type=metaworld",
    "--env.task=reach-v3,push-v3",
    "--env.obs_type=state",
    "--env.episode_length=15",
    "--eval.n_episodes=5",
    "--eval.batch_size=1",
    "--eval.max_episodes_rendered=0",
]


def outcomes(info: dict) -> list[tuple]:
    return [
        (
            e["task_group"],
            e["task_id"],
            e["episode_index"],
            e["seed"],
            e["success"],
            round(e["sum_reward"], 9),
        )
        for e in info["per_episode"]
    ]


def load(out) -> dict:
    return json.loads((out / "eval_info.json").read_text())


@pytest.mark.slow
def test_merged_shards_equal_the_unsharded_run(tmp_path, capsys):
    assert eval_main([*COMMON, f"--output_dir={tmp_path / 'full'}"]) == 0
    for i in range(2):
        assert eval_main([*COMMON, f"--eval.shard={i}/2", f"--output_dir={tmp_path / f'shard{i}'}"]) == 0
    shard0 = load(tmp_path / "shard0")
    assert [e["episode_index"] for e in shard0["per_episode"]] == [0, 2, 4, 0, 2, 4]

    # one shard alone is an incomplete merge that says what is missing
    assert merge_main([str(tmp_path / "shard0"), f"--output_dir={tmp_path / 'half'}"]) == 1
    half = load(tmp_path / "half")
    assert half["complete"] is False
    assert {(m["task_group"], m["episode_index"]) for m in half["missing_episodes"]} == {
        (g, e) for g in ("reach-v3", "push-v3") for e in (1, 3)
    }

    dirs = [
        str(tmp_path / "shard0"),
        str(tmp_path / "shard1"),
        str(tmp_path / "shard0"),
    ]  # duplicates are dropped
    assert merge_main([*dirs, f"--output_dir={tmp_path / 'merged'}"]) == 0
    merged, full = load(tmp_path / "merged"), load(tmp_path / "full")
    assert merged["complete"] is True and merged["missing_episodes"] == []
    assert outcomes(merged) == outcomes(full)
    assert merged["overall"]["pc_success"] == full["overall"]["pc_success"]
    assert merged["overall"]["n_episodes"] == 10
    assert (tmp_path / "merged" / "report.html").exists()


def test_merge_refuses_runs_of_different_evaluations(tmp_path, capsys):
    args = [*COMMON, "--env.task=reach-v3", "--eval.n_episodes=1", "--env.episode_length=2"]
    assert eval_main([*args, "--seed=1", f"--output_dir={tmp_path / 'a'}"]) == 0
    assert eval_main([*args, "--seed=2", f"--output_dir={tmp_path / 'b'}"]) == 0
    capsys.readouterr()
    assert merge_main([str(tmp_path / "a"), str(tmp_path / "b"), f"--output_dir={tmp_path / 'm'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a shard of the same evaluation" in err and "--seed: was 1, now 2" in err


def test_merge_never_writes_over_results_unless_told(tmp_path, capsys):
    args = [*COMMON, "--env.task=reach-v3", "--eval.n_episodes=2", "--env.episode_length=2"]
    for i in range(2):
        assert eval_main([*args, f"--eval.shard={i}/2", f"--output_dir={tmp_path / f's{i}'}"]) == 0
    assert eval_main([*args, "--seed=7", f"--output_dir={tmp_path / 'other'}"]) == 0
    before = (tmp_path / "other" / "eval_info.json").read_text()
    shards = [str(tmp_path / "s0"), str(tmp_path / "s1")]
    capsys.readouterr()

    assert merge_main([*shards, f"--output_dir={tmp_path / 'other'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "holds results of an earlier run; pass --overwrite=true" in err
    assert (tmp_path / "other" / "eval_info.json").read_text() == before

    assert merge_main([*shards, f"--output_dir={tmp_path / 's0'}"]) == 2
    assert "is one of the shards being merged" in capsys.readouterr().err

    assert merge_main([*shards, f"--output_dir={tmp_path / 'other'}", "--overwrite=true"]) == 0
    merged = load(tmp_path / "other")
    assert merged["complete"] is True and merged["overall"]["n_episodes"] == 2
    assert not (tmp_path / "other" / "run_config.json").exists()  # no stale config of the replaced run
    capsys.readouterr()

    (tmp_path / "s1" / "run_config.json").unlink()
    assert merge_main([*shards, f"--output_dir={tmp_path / 'm2'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "s1 has no run_config.json" in err
