"""Running an evaluation: which episodes run (`plan`), where (`backend`: this process and its
env workers, or Ray actors in `ray_backend`), how episodes run (`rollout`), and what the runner
does with every finished episode (`collector`: journal, progress bars, per-task lines;
`recording`: the datasets of `--eval.recording`).
"""
