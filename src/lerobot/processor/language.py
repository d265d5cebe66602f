"""Instruction steps of a policy preprocessor: end the task with a newline, write π0.5's
prompt, tokenise it.

Language-conditioned checkpoints (SmolVLA, π0, π0.5) save these steps in
policy_preprocessor.json, under LeRobot's registry names and settings (as the pipeline steps
that run them, lerobot.processor.newline_task_processor and .tokenizer_processor, write them):

    {"registry_name": "smolvla_new_line_processor", "config": {}}       (π0: pi0_new_line_processor)
    {"registry_name": "pi05_prepare_state_tokenizer_processor_step", "config": {}}
    {"registry_name": "tokenizer_processor", "config": {"tokenizer_name": ..., "max_length": 48,
        "task_key": "task", "padding_side": "right", "padding": "max_length", "truncation": true}}

Each step reads and returns a batch dict; the tokenizer adds `observation.language.tokens`
(int64, B x L) and `observation.language.attention_mask` (bool, B x L) on the batch's device.
The tokenizer is transformers' `AutoTokenizer` for the named directory or hub repo, so the
token ids are exactly those LeRobot's step computes; transformers is imported only when such a
step is built. π0.5's prompt step reads the *normalised* state: it and the steps after it run
after the normaliser (`runs_on_normalized_state`), as in LeRobot's saved pipeline.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from lerobot.utils.constants import OBS_LANGUAGE_ATTENTION_MASK, OBS_LANGUAGE_TOKENS, OBS_STATE, TASK

NEWLINE_STEP = "smolvla_new_line_processor"
STATE_PROMPT_STEP = "pi05_prepare_state_tokenizer_processor_step"
TOKENIZER_STEP = "tokenizer_processor"
STATE_BINS = 256
"""π0.5 writes each normalised state entry as its bin among 256 equal bins of [-1, 1]."""
PADDINGS = ("longest", "max_length", "do_not_pad")
PADDING_SIDES = ("left", "right")
CACHED_BATCHES = 64


class TaskStepError(ValueError):
    """A saved instruction step with settings this build cannot honour; one line."""


@dataclass(frozen=True)
class NewlineTask:
    """Ends every instruction with "\\n" (PaliGemma-style prompts: π0, and SmolVLA, which kept them)."""

    runs_on_normalized_state: ClassVar[bool] = False
    task_key: str = TASK

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(batch)
        task = out.get(self.task_key)
        if isinstance(task, str):
            out[self.task_key] = task if task.endswith("\n") else task + "\n"
        elif isinstance(task, list | tuple) and all(isinstance(t, str) for t in task):
            out[self.task_key] = [t if t.endswith("\n") else t + "\n" for t in task]
        return out


@dataclass(frozen=True)
class StatePromptTask:
    """π0.5's prompt, "Task: <instruction>, State: <bins>;\\nAction: ", in place of the
    instruction: underscores and newlines become spaces, and each entry of the normalised state
    (not padded) is written as its bin index, -1 below -1 and 255 from the last bin up."""

    runs_on_normalized_state: ClassVar[bool] = True
    task_key: str = TASK

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        state = batch.get(OBS_STATE)
        if not isinstance(state, torch.Tensor):
            raise ValueError(f"π0.5's prompt needs the state ({OBS_STATE}); the batch has none")
        bins = state_bins(state[:, -1] if state.ndim > 2 else state)
        tasks = batch.get(self.task_key)
        if isinstance(tasks, str):
            tasks = [tasks] * len(bins)
        if not isinstance(tasks, list | tuple) or len(tasks) != len(bins):
            raise ValueError(
                f"π0.5's prompt needs one instruction per row under {self.task_key!r}; the batch has "
                f"{type(tasks).__name__} for {len(bins)} rows"
            )
        out = dict(batch)
        out[self.task_key] = [_state_prompt(task, row) for task, row in zip(tasks, bins, strict=True)]
        return out


def state_bins(state: torch.Tensor):
    """(B, D) normalised state -> (B, D) int64 numpy bins, as numpy's digitize puts them."""
    edges = np.linspace(-1, 1, STATE_BINS + 1)[:-1]
    return np.digitize(state.detach().cpu().numpy(), bins=edges) - 1


def _state_prompt(task: str, bins) -> str:
    cleaned = task.strip().replace("_", " ").replace("\n", " ")
    return f"Task: {cleaned}, State: {' '.join(str(b) for b in bins)};\nAction: "


@dataclass(frozen=True)
class TokenizerSettings:
    """The saved settings of LeRobot's tokenizer step (its defaults where a key is absent)."""

    tokenizer_name: str
    max_length: int = 512
    task_key: str = TASK
    padding_side: str = "right"
    padding: str = "max_length"
    truncation: bool = True

    def __post_init__(self) -> None:
        if self.padding not in PADDINGS:
            raise TaskStepError(
                f"tokenizer_processor: padding={self.padding!r}; must be one of {', '.join(PADDINGS)}"
            )
        if self.padding_side not in PADDING_SIDES:
            raise TaskStepError(
                f"tokenizer_processor: padding_side={self.padding_side!r}; must be one of {', '.join(PADDING_SIDES)}"
            )
        if self.max_length < 1:
            raise TaskStepError(f"tokenizer_processor: max_length={self.max_length}; must be positive")


class TaskTokenizer:
    """Tokenises the batch's instructions; a batch of instructions seen before is not
    tokenised again (an episode repeats its instruction every step)."""

    runs_on_normalized_state: ClassVar[bool] = False

    def __init__(self, settings: TokenizerSettings, tokenizer: Any = None):
        """`tokenizer`: a transformers tokenizer already built (else the named one is loaded)."""
        self.settings = settings
        self.tokenizer = tokenizer if tokenizer is not None else _load_tokenizer(settings.tokenizer_name)
        self._cache: OrderedDict[tuple[str, ...], tuple[torch.Tensor, torch.Tensor]] = OrderedDict()

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        tasks = self._tasks(batch)
        tokens, mask = self.tokenize(tasks)
        device = _batch_device(batch)
        out = dict(batch)
        out[OBS_LANGUAGE_TOKENS] = tokens.to(device)
        out[OBS_LANGUAGE_ATTENTION_MASK] = mask.to(device)
        return out

    def tokenize(self, tasks: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(token ids int64, attention mask bool), each (len(tasks), L), on the CPU."""
        key = tuple(tasks)
        if key not in self._cache:
            s = self.settings
            encoded = self.tokenizer(
                list(tasks),
                max_length=s.max_length,
                truncation=s.truncation,
                padding=s.padding,
                padding_side=s.padding_side,
                return_tensors="pt",
            )
            self._cache[key] = (encoded["input_ids"], encoded["attention_mask"].to(dtype=torch.bool))
            if len(self._cache) > CACHED_BATCHES:
                self._cache.popitem(last=False)
        return self._cache[key]

    def _tasks(self, batch: Mapping[str, Any]) -> list[str]:
        task = batch.get(self.settings.task_key)
        if isinstance(task, str):
            return [task] * _batch_rows(batch)
        if isinstance(task, list | tuple) and all(isinstance(t, str) for t in task):
            return list(task)
        raise ValueError(
            f"the policy reads an instruction per row under {self.settings.task_key!r}; the batch has "
            f"{type(task).__name__}"
        )


def _load_tokenizer(name: str) -> Any:
    from transformers import AutoTokenizer

    from lerobot.configs.vlm_files import resolve_tokenizer_dir

    return AutoTokenizer.from_pretrained(resolve_tokenizer_dir(name))


def _batch_device(batch: Mapping[str, Any]) -> torch.device:
    for value in batch.values():
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def _batch_rows(batch: Mapping[str, Any]) -> int:
    for value in batch.values():
        if isinstance(value, torch.Tensor) and value.ndim > 0:
            return value.shape[0]
    return 1
