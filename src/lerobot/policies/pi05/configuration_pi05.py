"""π0.5 settings, under the names and defaults of LeRobot's `pi05` config.json.

Every field is the π family's (lerobot.policies.pi.configuration.PiFlowConfig); π0.5 changes two
defaults (quantile normalisation, 200 prompt tokens) and its instruction steps. Importing this
module must stay cheap: nothing here touches torch or transformers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from lerobot.configs.policies import PreTrainedConfig
from lerobot.configs.types import NormalizationMode
from lerobot.policies.pi.configuration import DEFAULT_IMAGE_SIZE, PiFlowConfig

__all__ = ["DEFAULT_IMAGE_SIZE", "PI05Config"]


@PreTrainedConfig.register_subclass("pi05")
@dataclass
class PI05Config(PiFlowConfig):
    """π0.5 (Physical Intelligence, 2025, arXiv:2504.16054), as openpi's PyTorch port and LeRobot
    run it: the state is not an input token but part of the prompt ("Task: ..., State: <256-bin
    values>;\\nAction: "), and the flow-matching time modulates every norm of the action expert
    (adaRMS with gated residuals) instead of being mixed into the action tokens."""

    adaptive_expert_norms: ClassVar[bool] = True

    normalization_mapping: dict[str, NormalizationMode] = field(
        default_factory=lambda: {
            "VISUAL": NormalizationMode.IDENTITY,
            "STATE": NormalizationMode.QUANTILES,
            "ACTION": NormalizationMode.QUANTILES,
        }
    )
    tokenizer_max_length: int = 200
    """Prompts (instruction and discretised state) are truncated and padded to this many tokens."""

    def task_steps(self) -> list:
        """LeRobot's steps for a fresh π0.5, after the normaliser: the state prompt, then
        PaliGemma's tokenizer."""
        from lerobot.processor.tokenizer_processor import Pi05PrepareStateTokenizerProcessorStep

        return [Pi05PrepareStateTokenizerProcessorStep(), self.tokenizer_step()]
