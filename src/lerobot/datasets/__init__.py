"""LeRobot datasets (format v3): recording simulator rollouts and reading them back to train."""
