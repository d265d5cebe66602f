"""The `lerobot-record-sim` configuration: which policy to roll out where, and where to write."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lerobot.configs.dataset import DATASET_MODULES
from lerobot.configs.env import EnvConfig
from lerobot.configs.eval import check_seeds
from lerobot.configs.fields import facts
from lerobot.configs.policies import PreTrainedConfig
from lerobot.utils.errors import ConfigError, require_extra

# LeRobot's defaults for when a dataset starts a new file or chunk.
CHUNKS_SIZE = 1000
DATA_FILES_SIZE_IN_MB = 100
VIDEO_FILES_SIZE_IN_MB = 200


@dataclass(frozen=True)
class FileLimits:
    """When a dataset starts a new file or chunk (LeRobot's defaults; sizes in MiB)."""

    chunks_size: int = CHUNKS_SIZE
    """Files per chunk folder."""
    data_files_size_in_mb: float = DATA_FILES_SIZE_IN_MB
    """Frame-table and episodes-table files, measured uncompressed."""
    video_files_size_in_mb: float = VIDEO_FILES_SIZE_IN_MB
    """Video files, measured on disk."""

    def __post_init__(self) -> None:
        for name in ("chunks_size", "data_files_size_in_mb", "video_files_size_in_mb"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)}: must be positive")


@dataclass
class RecordSimConfig:
    env: EnvConfig | None = None
    """The simulator and its one task: `--env.type=metaworld --env.task=reach-v3`."""
    policy: PreTrainedConfig | None = None
    """Who acts: `--policy.type=metaworld_expert`, or a checkpoint with `--policy.path=`."""
    root: Path | None = field(default=None, metadata=facts(result_neutral=True))
    """The dataset directory to create; it must not exist yet (unless --resume=true)."""
    n_episodes: int = field(default=20, metadata=facts(result_neutral=True))
    """Episodes rolled out; with --only_successful=true fewer may be kept. Each episode is in the
    dataset as soon as it ends; a resume runs those still missing up to this number."""
    resume: bool = field(default=False, metadata=facts(result_neutral=True))
    """Continue the recording in --root (stopped by Ctrl-C, SIGTERM or a crash): run the episodes
    it lacks up to --n_episodes, with the seeds they would have had, into the same dataset. The
    other settings must be those it was recorded with."""
    only_successful: bool = False
    """Keep only the episodes that succeeded at some step."""
    seed: int = 1000
    """Episode e starts from seed + e."""
    batch_size: int = field(default=1, metadata=facts(result_neutral=True))
    """Envs stepped together (in worker processes when above 1; episodes are then added in the
    order they end)."""
    data_files_size_in_mb: float = DATA_FILES_SIZE_IN_MB
    """Start a new frame-table (and episodes-table) file before one would pass this size."""
    video_files_size_in_mb: float = VIDEO_FILES_SIZE_IN_MB
    """Start a new video file before one would pass this size."""
    chunks_size: int = CHUNKS_SIZE
    """Files per chunk-XXX folder."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = field(
        default="INFO", metadata=facts(result_neutral=True)
    )
    """Console logging detail."""

    def __post_init__(self) -> None:
        if self.env is None:
            raise ConfigError(
                f"--env.type: required; choose one of {', '.join(EnvConfig.get_known_choices())}"
            )
        if self.policy is None:
            raise ConfigError(
                f"--policy.type: required; choose one of {', '.join(PreTrainedConfig.get_known_choices())}"
            )
        if self.root is None:
            raise ConfigError("--root: required; the directory the dataset is written to")
        self.root = Path(self.root)
        require_extra(f"--root={self.root}", "train", DATASET_MODULES)
        if self.root.exists() and not self.resume:
            raise ConfigError(
                f"--root={self.root}: already exists; choose a new directory, or pass --resume=true "
                "to continue the recording it holds"
            )
        if self.resume and not self.root.is_dir():
            raise ConfigError(
                f"--resume=true: --root={self.root} is not a directory; there is no recording to continue"
            )
        if self.n_episodes <= 0:
            raise ConfigError(f"--n_episodes={self.n_episodes}: must be a positive integer")
        check_seeds(self.seed, self.n_episodes)
        for flag in ("batch_size", "data_files_size_in_mb", "video_files_size_in_mb", "chunks_size"):
            if getattr(self, flag) <= 0:
                raise ConfigError(f"--{flag}={getattr(self, flag)}: must be positive")
        tasks = [task for group in self.env.task_groups().values() for task in group]
        if len(tasks) != 1:
            raise ConfigError(f"--env.task={self.env.task}: a dataset records one task; got {len(tasks)}")
