"""LeRobot's tokenizer step (`tokenizer_processor`) and π0.5's state prompt
(`pi05_prepare_state_tokenizer_processor_step`), which writes the instruction the tokenizer
reads. transformers is imported only when a tokenizer step is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lerobot.processor.instruction_steps import InstructionStep
from lerobot.processor.language import (
    STATE_PROMPT_STEP,
    TOKENIZER_STEP,
    StatePromptTask,
    TaskTokenizer,
    TokenizerSettings,
)
from lerobot.processor.steps import ProcessorStepRegistry
from lerobot.utils.constants import TASK
from lerobot.utils.not_in_this_build import refused_names


@ProcessorStepRegistry.register(name=TOKENIZER_STEP)
@dataclass
class TokenizerProcessorStep(InstructionStep):
    """`observation.language.tokens` and `.attention_mask` from each row's instruction, by the
    tokenizer named (a local directory or hub repo) or given."""

    tokenizer_name: str | None = None
    tokenizer: Any | None = None
    max_length: int = 512
    task_key: str = TASK
    padding_side: str = "right"
    padding: str = "max_length"
    truncation: bool = True

    def __post_init__(self) -> None:
        if self.tokenizer_name is None and self.tokenizer is None:
            raise ValueError("tokenizer_processor needs a tokenizer_name or a tokenizer")
        name = self.tokenizer_name or getattr(self.tokenizer, "name_or_path", "") or "given"
        settings = TokenizerSettings(
            name, self.max_length, self.task_key, self.padding_side, self.padding, self.truncation
        )
        self.batch_step = TaskTokenizer(settings, tokenizer=self.tokenizer)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "max_length": self.max_length,
            "task_key": self.task_key,
            "padding_side": self.padding_side,
            "padding": self.padding,
            "truncation": self.truncation,
        }
        if self.tokenizer_name is not None and self.tokenizer is None:
            config["tokenizer_name"] = self.tokenizer_name
        return config


@ProcessorStepRegistry.register(name=STATE_PROMPT_STEP)
@dataclass
class Pi05PrepareStateTokenizerProcessorStep(InstructionStep):
    """π0.5's prompt from the instruction and the normalised state (runs after the normaliser)."""

    max_state_dim: int = 32
    task_key: str = TASK

    def __post_init__(self) -> None:
        self.batch_step = StatePromptTask(task_key=self.task_key)


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
