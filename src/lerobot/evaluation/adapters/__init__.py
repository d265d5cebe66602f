"""Other ways in to the same rollout loop: LeRobot's `eval_policy`, `eval_policy_all` and
`rollout` on envs and policies built elsewhere (`lerobot_compat`), and `lerobot-record-sim`,
which records rollouts as a LeRobot dataset (`record_sim`; what its `--resume=true` checks
first, without torch: `record_sim_resume`).
"""
