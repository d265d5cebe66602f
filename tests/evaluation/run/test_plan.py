"""Run plans: which episodes a run (a shard, a resume) still has to execute, cut into units."""

from lerobot.configs.env import TaskSpec
from lerobot.configs.eval import EvalConfig
from lerobot.evaluation.run.plan import RunPlan, WorkUnit, shard_episodes


def test_units_skip_done_episodes_and_other_shards():
    tasks = [TaskSpec("easy", 0, "reach-v3", "", fps=80), TaskSpec("easy", 1, "push-v3", "", fps=80)]
    eval_cfg = EvalConfig(n_episodes=10, shard="1/2")
    plan = RunPlan.from_config(tasks, eval_cfg, {("easy", 0): dict.fromkeys([1, 3]), ("easy", 1): {}})
    assert plan.units(unit_size=2) == [
        WorkUnit(tasks[0], (5, 7)),
        WorkUnit(tasks[0], (9,)),
        WorkUnit(tasks[1], (1, 3)),
        WorkUnit(tasks[1], (5, 7)),
        WorkUnit(tasks[1], (9,)),
    ]
    assert plan.n_done == 2


def test_without_a_unit_size_each_task_is_one_unit():
    tasks = [TaskSpec("libero_10", 3, "t3", "", fps=30)]
    plan = RunPlan.from_config(tasks, EvalConfig(n_episodes=4), {("libero_10", 3): dict.fromkeys([2])})
    assert plan.units() == [WorkUnit(tasks[0], (0, 1, 3))]
    assert (
        RunPlan.from_config(
            tasks, EvalConfig(n_episodes=2), {("libero_10", 3): dict.fromkeys([0, 1])}
        ).units()
        == []
    )


def test_shards_partition_the_episodes():
    shards = [shard_episodes(range(7), (i, 3)) for i in range(3)]
    assert shards == [[0, 3, 6], [1, 4], [2, 5]]
    assert shard_episodes(range(3), None) == [0, 1, 2]
