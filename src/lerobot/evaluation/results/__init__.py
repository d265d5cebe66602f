"""What an evaluation produces, as types: episodes, tasks, summaries with intervals, the run.

The rollout makes `EpisodeResult`s (`episodes`); a task's episodes make a `TaskResult`; the
tasks of a run make a `RunResult` (`run`), which knows its per-suite and overall `Summary`s
(`summary`); `time_to_success` says how fast the episodes succeeded and
`training_curve` how a training run's in-loop evaluations changed. Everything downstream
(journal, resume, merge, report, `lerobot-train`) works on these. The only dict boundaries are
eval_info.json itself: `RunResult.to_eval_info()` writes its shape, `run_from_eval_info` and
`load_run` (`eval_info`) read it back.

No torch, no simulator: reports and merges are rebuilt from files on any machine.
"""

from lerobot.evaluation.results.episodes import EpisodeResult, scored
from lerobot.evaluation.results.eval_info import (
    EVAL_INFO_FILENAME,
    RESULT_KEYS,
    UnreadableResultsError,
    load_run,
    run_from_eval_info,
)
from lerobot.evaluation.results.run import MissingEpisode, RunResult, TaskKey, TaskResult, episode_record
from lerobot.evaluation.results.summary import Summary
from lerobot.evaluation.results.time_to_success import SuccessCurve, success_curve
from lerobot.evaluation.results.training_curve import (
    PairedChange,
    StepEvaluation,
    TrainingCurve,
    training_curve,
)

__all__ = [
    "EVAL_INFO_FILENAME",
    "RESULT_KEYS",
    "EpisodeResult",
    "MissingEpisode",
    "PairedChange",
    "RunResult",
    "StepEvaluation",
    "SuccessCurve",
    "Summary",
    "TaskKey",
    "TaskResult",
    "TrainingCurve",
    "UnreadableResultsError",
    "episode_record",
    "load_run",
    "run_from_eval_info",
    "scored",
    "success_curve",
    "training_curve",
]
