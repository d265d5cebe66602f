"""`--dataset.*` of `lerobot-train`: which demonstrations to train on and how they are read.

The flags and defaults are LeRobot 0.6.1's. Frames are decoded once, by this build's own decoder,
into a memory-mapped cache, so the settings of LeRobot's per-sample decoding (video backend,
uint8 frames) are accepted and change nothing. What needs the network while training (streaming,
storage buckets) or is not built yet (image augmentation) is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lerobot.configs.fields import facts
from lerobot.utils.errors import ConfigError, require_choice

REPO_TYPES = ("dataset", "bucket")
VIDEO_BACKENDS = ("torchcodec", "pyav", "video_reader")
DEPTH_UNITS = ("mm", "m")


DATASET_MODULES = ("pyarrow",)
"""What the `train` extra installs that reading or writing a dataset needs: its frame tables
are parquet files."""


@dataclass
class ImageTransformConfig:
    """One augmentation LeRobot may draw for a frame: a torchvision transform by name."""

    weight: float = 1.0
    """Relative chance of being drawn."""
    type: str = "Identity"
    """The transform's name (ColorJitter, SharpnessJitter, RandomAffine, ...)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """The transform's arguments, e.g. {"brightness": [0.8, 1.2]}."""


def _lerobot_transforms() -> dict[str, ImageTransformConfig]:
    """LeRobot 0.6.1's default set: mild colour, sharpness and geometry jitter."""
    return {
        "brightness": ImageTransformConfig(type="ColorJitter", kwargs={"brightness": (0.8, 1.2)}),
        "contrast": ImageTransformConfig(type="ColorJitter", kwargs={"contrast": (0.8, 1.2)}),
        "saturation": ImageTransformConfig(type="ColorJitter", kwargs={"saturation": (0.5, 1.5)}),
        "hue": ImageTransformConfig(type="ColorJitter", kwargs={"hue": (-0.05, 0.05)}),
        "sharpness": ImageTransformConfig(type="SharpnessJitter", kwargs={"sharpness": (0.5, 1.5)}),
        "affine": ImageTransformConfig(
            type="RandomAffine", kwargs={"degrees": (-5.0, 5.0), "translate": (0.05, 0.05)}
        ),
    }


@dataclass
class ImageTransformsConfig:
    """LeRobot's training-time image augmentation. Off by default, as in LeRobot; turning it on
    is refused: augmentation is not in this build yet."""

    enable: bool = False
    """Augment camera frames while training; true is refused (not in this build yet)."""
    max_num_transforms: int = 3
    """At most this many of --dataset.image_transforms.tfs per frame."""
    random_order: bool = False
    """Apply the drawn transforms in random order instead of the listed one."""
    tfs: dict[str, ImageTransformConfig] = field(default_factory=_lerobot_transforms)
    """The transforms to draw from, by name (LeRobot's default set)."""

    def __post_init__(self) -> None:
        self.tfs = {
            name: tf if isinstance(tf, ImageTransformConfig) else ImageTransformConfig(**tf)
            for name, tf in self.tfs.items()
        }
        if self.enable:
            raise ConfigError(
                "--dataset.image_transforms.enable=true: image augmentation is not in this build yet; "
                "drop the flag (training sees the frames as recorded)"
            )
        if self.max_num_transforms < 1:
            raise ConfigError(
                f"--dataset.image_transforms.max_num_transforms={self.max_num_transforms}: must be 1 or more"
            )


@dataclass
class DatasetConfig:
    repo_id: str | None = None
    """A LeRobot v3 dataset on the hub, read from the hub cache (fetched first when online);
    --dataset.root wins when both are given."""
    repo_type: str = "dataset"
    """The hub repo type of --dataset.repo_id: `dataset`. LeRobot's `bucket` (an HF storage
    bucket, read by streaming) is refused: it needs the network while training."""
    root: Path | None = None
    """A LeRobot v3 dataset directory (e.g. written by lerobot-record-sim)."""
    episodes: list[int] | None = None
    """Train on these episodes only, e.g. [0,1]; default all."""
    image_transforms: ImageTransformsConfig = field(default_factory=ImageTransformsConfig)
    """Training-time image augmentation (LeRobot's); off, and not in this build yet."""
    revision: str | None = None
    """The hub revision (branch, tag or commit) of --dataset.repo_id; default the main branch."""
    use_imagenet_stats: bool = True
    """Normalise cameras with ImageNet's mean and std instead of the dataset's (LeRobot's
    default); it changes nothing for policies that leave images unnormalised, as SmolVLA."""
    video_backend: str | None = field(default=None, metadata=facts(result_neutral=True))
    """LeRobot's video decoder (torchcodec, pyav or video_reader; its default depends on what
    loads). Accepted and result-neutral: this build decodes every frame once into the frame
    cache, with imageio-ffmpeg's ffmpeg (PyAV where that is missing: the same bytes), whatever
    this says."""
    return_uint8: bool = field(default=False, metadata=facts(result_neutral=True))
    """LeRobot's choice of uint8 frames for its data loader. Accepted and result-neutral: this
    build always carries uint8 frames and converts them to floats on the training device."""
    depth_output_unit: str = "mm"
    """Unit of depth maps: `mm` or `m`. No effect on datasets without depth cameras (every
    dataset this build records)."""
    streaming: bool = False
    """LeRobot reads the dataset from the hub while training; true is refused (it needs the
    network): --dataset.repo_id is downloaded once to the hub cache and read from disk."""
    eval_split: float = 0.0
    """Fraction of each task's episodes held out to measure an evaluation loss (with
    --eval_steps); 0 holds out none. In [0, 1)."""
    frame_cache_dir: Path | None = field(default=None, metadata=facts(result_neutral=True))
    """Where camera frames are decoded to once (memory-mapped while training); default
    <root>/.cache/frames. Point it elsewhere when the dataset directory is read-only."""

    def __post_init__(self) -> None:
        if self.root is not None:
            self.root = Path(self.root)
        self._check_source()
        if self.video_backend is not None:
            require_choice("--dataset.video_backend", self.video_backend, VIDEO_BACKENDS)
        require_choice("--dataset.depth_output_unit", self.depth_output_unit, DEPTH_UNITS)
        if not 0.0 <= self.eval_split < 1.0:
            raise ConfigError(f"--dataset.eval_split={self.eval_split}: must be in [0, 1)")
        self._check_episodes()

    def _check_source(self) -> None:
        require_choice("--dataset.repo_type", self.repo_type, REPO_TYPES)
        if self.repo_type == "bucket":
            raise ConfigError(
                "--dataset.repo_type=bucket: storage buckets are read by streaming, which needs the "
                "network while training; copy the dataset to disk and pass --dataset.root=<dir>"
            )
        if self.streaming:
            raise ConfigError(
                "--dataset.streaming=true: reading from the hub while training needs the network; drop "
                "the flag (--dataset.repo_id is downloaded once to the hub cache) or pass --dataset.root=<dir>"
            )

    def _check_episodes(self) -> None:
        if self.episodes is None:
            return
        negative = [e for e in self.episodes if e < 0]
        repeated = sorted({e for e in self.episodes if self.episodes.count(e) > 1})
        if negative or repeated:
            problem = f"negative indices {negative}" if negative else f"repeated indices {repeated}"
            raise ConfigError(f"--dataset.episodes={self.episodes}: {problem}; list each episode once")
