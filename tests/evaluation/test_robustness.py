"""LIBERO-PRO results regrouped by perturbation family and base suite: eval_info.json's
`per_perturbation`, and the "Under perturbation" table of report.html, summary.md and a
comparison of a plain LIBERO run with a LIBERO-PRO one."""

import json

import pytest

from lerobot.evaluation.intervals import pc_wilson_interval
from lerobot.evaluation.report import write_comparison, write_report
from lerobot.evaluation.results import RunResult, load_run
from lerobot.evaluation.robustness import robustness
from tests.evaluation.report.test_report import make_task, parse_xml, row_text, write_run

TASK = "pick_up_the_black_bowl_between_the_plate_and_the_ramekin_and_place_it_on_the_plate"


def pro_tasks(successes_by_suite: dict[str, int], n: int = 10):
    return [
        make_task(suite, 0, TASK if "_" not in suite.removeprefix("libero_") else f"{suite}/{TASK}", k, n=n)
        for suite, k in successes_by_suite.items()
    ]


def test_eval_info_groups_suites_by_family_and_base_suite():
    run = RunResult.of(
        pro_tasks(
            {"libero_spatial": 9, "libero_spatial_swap": 3, "libero_goal_swap": 5, "libero_goal_lan": 8}
        ),
        eval_s=1.0,
    )
    info = run.to_eval_info()["per_perturbation"]
    assert list(info) == ["unperturbed", "ood_spatial_relation", "ood_language"]
    swap = info["ood_spatial_relation"]
    assert swap["per_base_suite"]["libero_spatial"]["suite"] == "libero_spatial_swap"
    assert swap["per_base_suite"]["libero_spatial"]["pc_success"] == 30.0
    assert swap["per_base_suite"]["libero_spatial"]["pc_success_change"] == pytest.approx(-60.0)
    # libero_goal was not run unperturbed: no change to report
    assert "pc_success_change" not in swap["per_base_suite"]["libero_goal"]
    # a family's overall pools its suites' episodes, with the Wilson interval of the pool
    assert swap["overall"]["n_episodes"] == 20 and swap["overall"]["n_successes"] == 8
    assert swap["overall"]["pc_success_ci95"] == pytest.approx(pc_wilson_interval(8, 20))
    assert info["unperturbed"]["per_base_suite"] == {
        "libero_spatial": {
            "suite": "libero_spatial",
            "pc_success": 90.0,
            "pc_success_ci95": pytest.approx(pc_wilson_interval(9, 10)),
            "n_successes": 9,
            "n_episodes": 10,
        }
    }


def test_plain_libero_and_meta_world_runs_have_no_perturbation_section():
    run = RunResult.of(pro_tasks({"libero_spatial": 9, "libero_object": 4}), eval_s=1.0)
    assert "per_perturbation" not in run.to_eval_info()
    assert robustness(run.groups) is None


def test_report_puts_each_family_beside_the_unperturbed_suite(tmp_path):
    out = tmp_path / "pro"
    write_run(
        out, pro_tasks({"libero_spatial": 9, "libero_spatial_swap": 3, "libero_spatial_lan": 7}), "smolvla"
    )
    html, md = write_report(out)
    rows = {row_text(tr) for tr in parse_xml(html).iter("tr")}
    (spatial,) = [r for r in rows if r.startswith("libero_spatial ") and "pts" in r]
    assert "90.0 [59.6–98.2] n=10" in spatial
    assert "30.0 [10.8–60.3] n=10 (-60.0 pts)" in spatial
    assert "70.0 [39.7–89.2] n=10 (-20.0 pts)" in spatial
    summary = md.read_text()
    assert "### Under perturbation" in summary
    assert (
        "| libero_spatial | 90.0 (59.6–98.2), n=10 | 30.0 (10.8–60.3), n=10, -60.0 pts "
        "| 70.0 (39.7–89.2), n=10, -20.0 pts |"
    ) in summary
    assert json.loads((out / "eval_info.json").read_text())["per_perturbation"]["ood_language"]


def test_comparison_of_a_libero_run_with_a_libero_pro_run_shows_the_drop(tmp_path):
    """`lerobot-eval-report A B`: the unperturbed suites of one run beside the perturbed ones
    of the other."""
    write_run(tmp_path / "plain", pro_tasks({"libero_goal": 8}), "plain")
    write_run(tmp_path / "pro", pro_tasks({"libero_goal_object": 2, "libero_goal_task": 0}), "pro")
    runs = [load_run(tmp_path / "plain"), load_run(tmp_path / "pro")]
    html, md = write_comparison(runs, tmp_path / "cmp")
    rows = [row_text(tr) for tr in parse_xml(html).iter("tr")]
    (goal,) = [r for r in rows if r.startswith("libero_goal ") and "pts" in r]
    assert (
        "80.0" in goal
        and "20.0 [5.7–51.0] n=10 (-60.0 pts)" in goal
        and "0.0 [0.0–27.8] n=10 (-80.0 pts)" in goal
    )
    assert "ood_object" in md.read_text() and "-80.0 pts" in md.read_text()
