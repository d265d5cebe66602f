"""The evaluation library: rollout loop, metrics, videos; `lerobot-eval` is a thin CLI on top."""
