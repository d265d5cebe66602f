"""The full `lerobot-eval` configuration."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lerobot.configs.default import EvalConfig
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.envs.configs import EnvConfig
from lerobot.utils.errors import ConfigError


@dataclass
class EvalPipelineConfig:
    env: EnvConfig
    """The benchmark: `--env.type=metaworld` and its settings (`--env.task=...`)."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Episodes, batch size, workers and videos."""
    policy: PreTrainedConfig | None = None
    """The policy: `--policy.type=metaworld_expert|random`, or a LeRobot checkpoint with
    `--policy.path=<dir or hub repo id>` (and `--policy.revision=`)."""
    output_dir: Path | None = None
    """Where eval_info.json and videos go; default outputs/eval/<date>/<time>_<job_name>."""
    job_name: str | None = None
    """Name of this run; default <env type>_<policy type>."""
    seed: int = 1000
    """Episode e of every task starts from seed + e."""
    rename_map: dict[str, str] = field(default_factory=dict)
    """Rename observation keys before the policy sees them, e.g. '{"observation.image": "observation.images.top"}'."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Console logging detail; DEBUG adds a line per finished episode."""
    trust_remote_code: bool = False
    """LeRobot's flag for hub code; accepted for compatibility. This build never imports code
    from a checkpoint or the hub, so checkpoints of other policy types fail either way."""

    def __post_init__(self) -> None:
        if self.policy is None:
            choices = ", ".join(PreTrainedConfig.get_known_choices())
            raise ConfigError(f"--policy.type: required; choose one of {choices}")
        if isinstance(self.policy, CheckpointPolicyConfig):
            if self.policy.pretrained_path is None:
                raise ConfigError(
                    f"--policy.type={self.policy.type}: needs trained weights; pass --policy.path=<checkpoint dir or repo id>"
                )
            self.policy.check_env_inputs(self.env.policy_features(), self.rename_map)
        if self.job_name is None:
            self.job_name = f"{self.env.type}_{self.policy.type}"
        if self.output_dir is None:
            now = dt.datetime.now()
            self.output_dir = Path("outputs/eval") / f"{now:%Y-%m-%d}" / f"{now:%H-%M-%S}_{self.job_name}"
        self.output_dir = Path(self.output_dir)
