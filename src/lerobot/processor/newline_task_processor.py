"""LeRobot's newline steps: every instruction ends with "\\n" (SmolVLA's and π0's prompts)."""

from __future__ import annotations

from dataclasses import dataclass

from lerobot.processor.instruction_steps import InstructionStep
from lerobot.processor.language import NEWLINE_STEP, NewlineTask
from lerobot.processor.steps import ProcessorStepRegistry

PI0_NEWLINE_STEP = "pi0_new_line_processor"


@ProcessorStepRegistry.register(name=NEWLINE_STEP)
@dataclass
class NewLineTaskProcessorStep(InstructionStep):
    def __post_init__(self) -> None:
        self.batch_step = NewlineTask()


@ProcessorStepRegistry.register(name=PI0_NEWLINE_STEP)
@dataclass
class Pi0NewLineProcessor(NewLineTaskProcessorStep):
    """π0's newline step: the same step under π0's registry name."""
