"""B against A: pairing decided from the episodes, pairs with harness failures left out, the sentence."""

from dataclasses import replace

import pytest
from scipy import stats

from lerobot.evaluation.paired_statistics import episodes_for_half_width
from lerobot.evaluation.report.budget import plan_budget
from lerobot.evaluation.report.paired import compare_runs, compare_two, pairing_problem
from lerobot.evaluation.results import EpisodeResult, RunResult, TaskResult, run_from_eval_info


def episodes(outcomes: str, first_seed: int = 1000) -> tuple[EpisodeResult, ...]:
    """'SFxS': success, failure, harness failure (x), one episode per letter, seeds from `first_seed`."""
    made = []
    for i, outcome in enumerate(outcomes):
        made.append(
            EpisodeResult(
                episode_index=i,
                seed=first_seed + i,
                success=outcome == "S",
                success_at_end=outcome == "S",
                sum_reward=0.0,
                max_reward=0.0,
                n_steps=10,
                wall_s=0.1,
                failure_reason="worker crashed" if outcome == "x" else None,
            )
        )
    return tuple(made)


def run(tasks: dict[str, str], first_seed: int = 1000) -> RunResult:
    """A run read back from its eval_info.json, as `lerobot-eval-report` sees it."""
    results = [
        TaskResult(name, i, name, "", episodes(outcomes, first_seed), 1.0)
        for i, (name, outcomes) in enumerate(tasks.items())
    ]
    return run_from_eval_info(RunResult.of(results, eval_s=1.0).to_eval_info())


A = {"reach-v3": "SSSSFFSS", "push-v3": "FFFFFFSS"}
B = {"reach-v3": "SSSSSSSS", "push-v3": "SSSSSSFS"}


def test_same_tasks_episodes_and_seeds_pair_up_with_counts_and_exact_p():
    comparison = compare_two(run(A), run(B))
    assert comparison.paired
    push = comparison.tasks[1]
    assert (push.counts.a_won, push.counts.b_won, push.counts.both, push.counts.neither) == (1, 6, 1, 0)
    assert push.p_value == pytest.approx(stats.binomtest(6, 7).pvalue)
    overall = comparison.overall
    assert (overall.counts.a_won, overall.counts.b_won, overall.n_a) == (1, 8, 16)
    assert overall.p_value == pytest.approx(stats.binomtest(8, 9).pvalue)
    assert overall.difference == pytest.approx(7 / 16)
    # p = 0.5 (reach: 0 and 2 discordant) and 0.125 (push); Holm doubles the smaller, then keeps order.
    assert [t.holm_p_value for t in comparison.tasks] == pytest.approx([0.5, 0.25])
    assert comparison.conclusion() == (
        "B is better than A: better on 0 of 2 tasks (Holm-adjusted p < 0.05); overall +43.8 points, "
        "95% CI 8.8 to 67.6, exact p = 0.039 (paired, 16 episode pairs)."
    )


def test_a_harness_failure_drops_its_pair_from_both_sides_and_is_counted():
    comparison = compare_two(run(A), run({"reach-v3": "SSSSSSSx", "push-v3": "xSSSSSFS"}))
    assert comparison.paired and comparison.n_pairs_dropped == 2
    reach, push = comparison.tasks
    assert (reach.n_a, reach.successes_a, reach.successes_b) == (7, 5, 7)  # A's episode 7 left out too
    assert (push.counts.a_won, push.counts.b_won) == (1, 5)
    assert "2 pairs left out for harness failures" in comparison.conclusion()


@pytest.mark.parametrize(
    ("b", "first_seed", "reason"),
    [
        (B, 2000, "not paired: reach-v3 episode 0 has seed 1000 in A and 2000 in B"),
        (
            {"reach-v3": "SSSS", "push-v3": "SSSSSSFS"},
            1000,
            "not paired: reach-v3 has 8 episodes in A and 4 in B",
        ),
        ({"reach-v3": "SSSSSSSS"}, 1000, "not paired: task push-v3 is only in A"),
    ],
)
def test_other_seeds_episode_counts_or_tasks_are_not_paired_and_say_why(b, first_seed, reason):
    run_a, run_b = run(A), run(b, first_seed)
    assert pairing_problem(run_a, run_b) == reason
    comparison = compare_two(run_a, run_b)
    assert not comparison.paired and comparison.tasks[0].p_value is None
    reach = comparison.tasks[0]
    assert reach.interval == pytest.approx(
        _newcombe_unpaired(reach.successes_a, reach.n_a, reach.successes_b, reach.n_b)
    )
    assert f"({reason}; unpaired, " in comparison.conclusion()


def _newcombe_unpaired(successes_a, n_a, successes_b, n_b):
    from statsmodels.stats.proportion import confint_proportions_2indep

    return confint_proportions_2indep(successes_b, n_b, successes_a, n_a, method="newcomb")


def test_a_missing_seed_prevents_pairing():
    run_b = run(B)
    task = run_b.tasks[0]
    no_seed = replace(task, episodes=(replace(task.episodes[0], seed=None), *task.episodes[1:]))
    run_b = replace(run_b, tasks=(no_seed, *run_b.tasks[1:]))
    assert pairing_problem(run(A), run_b) == "not paired: reach-v3 episode 0 has no recorded seed in B"


def test_every_later_run_is_compared_with_the_first():
    comparisons = compare_runs([run(A), run(B), run(A, 5000)], ["A", "B", "C"])
    assert [(c.name_a, c.name_b, c.paired) for c in comparisons] == [("A", "B", True), ("A", "C", False)]


def test_budget_has_episodes_per_task_and_pairs_for_paired_comparisons_only():
    budget = plan_budget([run(A), run(B), run(A, 5000)], ["A", "B", "C"])
    reach_a = budget.runs[0].tasks[0]
    assert (reach_a.n_episodes, reach_a.rate, reach_a.episodes_needed) == (
        8,
        0.75,
        episodes_for_half_width(0.75),
    )
    (pairs,) = budget.comparisons
    assert pairs.name_b == "B" and pairs.tasks[1].discordance == pytest.approx(7 / 8)
    assert pairs.pairs_per_task == -(-pairs.overall.pairs_needed // 2)


def test_comparison_pages_show_the_sentence_the_tests_and_the_budget(tmp_path):
    import xml.etree.ElementTree as ET

    from lerobot.evaluation.report import write_comparison

    html_path, md_path = write_comparison([run(A), run(B)], tmp_path)
    root = ET.fromstring(html_path.read_text(encoding="utf-8"))  # well-formed, no script
    assert not list(root.iter("script"))
    page = " ".join("".join(root.itertext()).split())
    assert compare_two(run(A), run(B)).conclusion() in page
    push = [tr for tr in root.iter("tr") if "".join(tr.itertext()).startswith("push-v3")][1]
    assert [" ".join("".join(td.itertext()).split()) for td in push] == [
        "push-v3",
        "25.0",
        "87.5",
        "+62.5 (0.0 to 88.3)",
        "1",
        "6",
        "0.125",
        "0.250",
    ]
    assert "Episode pairs to detect 5 points between B and A" in page
    markdown = md_path.read_text()
    assert "| push-v3 | 25.0 | 87.5 | +62.5 (0.0 to 88.3) | 1 | 6 | 0.125 | 0.250 |" in markdown
    assert "### Episodes per task for a 95% interval of \u00b15 points" in markdown
