"""`lerobot-eval-report A B C` on real Meta-World runs: the expert, a noisy expert with the same
seeds (paired) and the expert with other seeds (not paired), checked against episodes.jsonl and scipy."""

import json
from pathlib import Path

import pytest
from scipy import stats

from lerobot.evaluation.report.paired import fmt_p
from lerobot.scripts import lerobot_eval, lerobot_eval_report

RUN = [
    "--policy.type=metaworld_expert",
    "--env.type=metaworld",
    "--env.task=reach-v3,push-v3",
    "--env.obs_type=state",
    "--env.episode_length=100",
    "--eval.n_episodes=6",
    "--eval.max_episodes_rendered=0",
    "--log_level=WARNING",
]


def evaluate(out: Path, *flags: str) -> Path:
    assert lerobot_eval.main([*RUN, *flags, f"--output_dir={out}"]) == 0
    return out


def outcomes(run_dir: Path) -> dict[tuple[str, int], tuple[int, bool]]:
    """(task, episode index) -> (seed, success), from the run's episodes.jsonl."""
    records = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    return {(r["task"], r["episode_index"]): (r["seed"], r["success"]) for r in records}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("paired")
    expert = evaluate(root / "expert")
    noisy = evaluate(root / "noisy", "--policy.action_noise=1.0")
    other_seeds = evaluate(root / "other_seeds", "--seed=2000")
    return expert, noisy, other_seeds


@pytest.mark.slow
def test_report_pairs_same_seed_runs_and_counts_what_the_episode_files_say(runs, tmp_path):
    expert, noisy, other_seeds = runs
    out = tmp_path / "compare"
    assert lerobot_eval_report.main([str(expert), str(noisy), str(other_seeds), f"--output_dir={out}"]) == 0
    a, b = outcomes(expert), outcomes(noisy)
    assert {key: seed for key, (seed, _) in a.items()} == {key: seed for key, (seed, _) in b.items()}
    a_won = sum(a[key][1] and not b[key][1] for key in a)
    b_won = sum(b[key][1] and not a[key][1] for key in a)
    assert a_won + b_won > 0, "the noise changed no outcome: the test would prove nothing"
    markdown = (out / "comparison.md").read_text()
    p = stats.binomtest(b_won, a_won + b_won).pvalue
    overall = next(
        line for line in markdown.splitlines() if line.startswith("| **Overall** |") and "stratified" in line
    )
    assert f"| {a_won} | {b_won} | " in overall
    assert f"exact p = {fmt_p(p)} (paired, 12 episode pairs)" in markdown
    assert "not paired: reach-v3 episode 0 has seed 1000 in A and 2000 in C" in markdown
    page = (out / "comparison.html").read_text()
    assert "Is it better?" in page and "C against A" in page


@pytest.mark.slow
def test_plan_prints_and_writes_the_budget(runs, tmp_path, capsys):
    expert, noisy, _ = runs
    assert lerobot_eval_report.main(["--plan", str(expert), str(noisy), f"--output_dir={tmp_path}"]) == 0
    printed = capsys.readouterr().out
    assert printed == (tmp_path / "budget.md").read_text()
    assert "| reach-v3 | 35 (6, 100.0%) |" in printed  # Wilson at 100%: 35 episodes for +-5 points
    assert "Episode pairs to detect 5 points between B and A" in printed
