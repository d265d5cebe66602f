"""The batch: how many envs a task runs at once, where they step, and how that is decided.

- `layout`: where a task's envs run (`BatchLayout.of`, `task_envs`) and the core-count rule for
  what `--eval.*` leaves to auto;
- `measure`: the env steps per second of the real loop at a few batch sizes and groupings
  (`--eval.measure_batch_size`);
- `remembered`: measurements kept per workload on this machine ($LEROBOT_CACHE_DIR);
- `settle`: given, measured now, remembered, or the rule: the batch a run's plan runs at, the
  same for `lerobot-eval` and the evaluation inside training.
"""
