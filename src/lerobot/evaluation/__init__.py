"""The evaluation library; `lerobot-eval` is a thin CLI on top.

- `evaluate`: the one way a run is wired up and executed, for the CLI, in-training evaluation
  and LeRobot's `eval_policy*` alike;
- `results` (with `intervals`): the result model, from one episode to the whole run, and
  eval_info.json read back;
- `run/`: the plan, the backends, the rollout loop and the collector of finished episodes;
- `store/`: the journal, the output directory, eval_info.json with provenance, merged shards;
- `report/`: report.html, summary.md and comparisons, views of eval_info.json;
- `adapters/`: LeRobot's evaluation functions and dataset recording, on the same rollout.

Sub-packages import downwards only: results < report < store < run < evaluate < adapters.
"""
