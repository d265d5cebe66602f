"""`lerobot-train`: behaviour cloning from a LeRobot dataset, with in-loop evaluation."""
