"""π0 settings, under the names and defaults of LeRobot's `pi0` config.json: every field is the
π family's (`lerobot.policies.pi.configuration.PiFlowConfig`).

Importing this module must stay cheap: it registers `--policy.type=pi0` whenever
`lerobot.policies` is imported, so nothing here touches torch or transformers.
"""

from __future__ import annotations

from dataclasses import dataclass

from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.pi.configuration import DEFAULT_IMAGE_SIZE, PiFlowConfig

__all__ = ["DEFAULT_IMAGE_SIZE", "PI0Config"]


@PreTrainedConfig.register_subclass("pi0")
@dataclass
class PI0Config(PiFlowConfig):
    """π0 (Black et al., 2024, arXiv:2410.24164): the normalised state enters the action expert
    as one token of its own, and the flow-matching time is mixed into each noisy action's token
    by an MLP."""

    def task_steps(self) -> list:
        """LeRobot's instruction steps for a fresh π0: newline, then PaliGemma's tokenizer."""
        from lerobot.processor.newline_task_processor import Pi0NewLineProcessor

        return [Pi0NewLineProcessor(), self.tokenizer_step()]
