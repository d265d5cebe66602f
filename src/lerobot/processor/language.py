"""Instruction steps of a policy preprocessor: end the task with a newline, tokenise it.

Language-conditioned checkpoints (SmolVLA) save these steps in policy_preprocessor.json, under
LeRobot's registry names and settings:

    {"registry_name": "smolvla_new_line_processor", "config": {}}
    {"registry_name": "tokenizer_processor", "config": {"tokenizer_name": ..., "max_length": 48,
        "task_key": "task", "padding_side": "right", "padding": "max_length", "truncation": true}}

Each step reads and returns a batch dict; the tokenizer adds `observation.language.tokens`
(int64, B x L) and `observation.language.attention_mask` (bool, B x L) on the batch's device.
The tokenizer is transformers' `AutoTokenizer` for the named directory or hub repo, so the
token ids are exactly those LeRobot's step computes; transformers is imported only when such a
step is built.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import torch

from lerobot.utils.constants import OBS_LANGUAGE_ATTENTION_MASK, OBS_LANGUAGE_TOKENS, TASK

NEWLINE_STEP = "smolvla_new_line_processor"
TOKENIZER_STEP = "tokenizer_processor"
PADDINGS = ("longest", "max_length", "do_not_pad")
PADDING_SIDES = ("left", "right")
CACHED_BATCHES = 64


class TaskStepError(ValueError):
    """A saved instruction step with settings this build cannot honour; one line."""


@dataclass(frozen=True)
class NewlineTask:
    """Ends every instruction with "\\n" (PaliGemma-style prompts, which SmolVLA kept)."""

    registry_name: ClassVar[str] = NEWLINE_STEP
    task_key: str = TASK

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(batch)
        task = out.get(self.task_key)
        if isinstance(task, str):
            out[self.task_key] = task if task.endswith("\n") else task + "\n"
        elif isinstance(task, list | tuple) and all(isinstance(t, str) for t in task):
            out[self.task_key] = [t if t.endswith("\n") else t + "\n" for t in task]
        return out

    def to_json(self) -> dict[str, Any]:
        return {"registry_name": self.registry_name, "config": {}}


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

    registry_name: ClassVar[str] = TOKENIZER_STEP

    def __init__(self, settings: TokenizerSettings):
        from transformers import AutoTokenizer

        from lerobot.configs.vlm_files import resolve_vlm_dir

        self.settings = settings
        self.tokenizer = AutoTokenizer.from_pretrained(resolve_vlm_dir(settings.tokenizer_name))
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

    def to_json(self) -> dict[str, Any]:
        return {"registry_name": self.registry_name, "config": asdict(self.settings)}


def task_step_from_json(step: Mapping[str, Any]) -> NewlineTask | TaskTokenizer:
    """The step a saved pipeline entry describes (its registry name is one of TASK_STEP_NAMES)."""
    name, config = step.get("registry_name"), dict(step.get("config") or {})
    if name == NEWLINE_STEP:
        return NewlineTask()
    if "tokenizer_name" not in config:
        raise TaskStepError(
            "tokenizer_processor: saved without tokenizer_name (it was given a tokenizer object); "
            "this build can only load a named tokenizer"
        )
    known = {k: v for k, v in config.items() if k in TokenizerSettings.__dataclass_fields__}
    return TaskTokenizer(TokenizerSettings(**known))


TASK_STEP_NAMES = (NEWLINE_STEP, TOKENIZER_STEP)


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
