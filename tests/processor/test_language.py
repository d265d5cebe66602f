"""The instruction steps of saved pipelines: newline, then LeRobot's tokenizer settings."""

import pytest
import torch

from lerobot.processor.language import (
    NewlineTask,
    TaskStepError,
    TaskTokenizer,
    TokenizerSettings,
)
from lerobot.processor.pipeline import DataProcessorPipeline
from lerobot.processor.saved_pipeline import PipelineFileError, steps_from_config
from lerobot.utils.constants import OBS_LANGUAGE_ATTENTION_MASK, OBS_LANGUAGE_TOKENS
from tests.policies.smolvla_checkpoints import VLM_DIR


def test_newline_is_added_once_and_other_values_pass():
    step = NewlineTask()
    assert step({"task": ["open", "close\n"]})["task"] == ["open\n", "close\n"]
    assert step({"task": "open"})["task"] == "open\n"
    assert step({"task": None}) == {"task": None} and step({}) == {}


@pytest.mark.parametrize("padding", ["max_length", "longest"])
def test_tokens_are_the_vlm_tokenizers_padded_right_and_cut_at_max_length(padding):
    from transformers import AutoTokenizer

    tasks = ["open the drawer\n", "wave hello to the camera, then push the puck to the goal\n", "push\n"]
    tokenizer = TaskTokenizer(TokenizerSettings(str(VLM_DIR), max_length=12, padding=padding))
    out = tokenizer({"task": tasks, "observation.state": torch.zeros((3, 8))})
    tokens, mask = out[OBS_LANGUAGE_TOKENS], out[OBS_LANGUAGE_ATTENTION_MASK]
    reference = AutoTokenizer.from_pretrained(VLM_DIR)
    lengths = []
    for row, task in enumerate(tasks):
        ids = reference(task, max_length=12, truncation=True)["input_ids"]
        assert tokens[row][mask[row]].tolist() == ids
        assert mask[row].tolist() == [True] * len(ids) + [False] * (tokens.shape[1] - len(ids))
        lengths.append(len(ids))
    assert tokens.dtype == torch.int64 and mask.dtype == torch.bool
    assert lengths[1] == 12  # the long instruction is cut
    assert tokens.shape == (3, 12)  # "longest" pads to the longest row, here the cut one
    short = tokenizer({"task": tasks[::2], "observation.state": torch.zeros((2, 8))})[OBS_LANGUAGE_TOKENS]
    assert short.shape == (2, 12 if padding == "max_length" else max(lengths[0], lengths[2]))


def test_saved_steps_round_trip_and_bad_ones_fail_in_one_line():
    saved = {
        "registry_name": "tokenizer_processor",
        "config": {"max_length": 16, "task_key": "task", "padding_side": "right", "padding": "max_length",
                   "truncation": True, "tokenizer_name": str(VLM_DIR)},
    }  # fmt: skip
    steps = steps_from_config(
        {"steps": [saved, {"registry_name": "smolvla_new_line_processor"}]}, {}, None, "t"
    )
    pipeline = DataProcessorPipeline(steps=steps)
    assert pipeline.get_config()["steps"] == [
        {"registry_name": "tokenizer_processor", "config": saved["config"]},
        {"registry_name": "smolvla_new_line_processor", "config": {}},
    ]
    with pytest.raises(PipelineFileError, match="needs a tokenizer_name or a tokenizer"):
        steps_from_config({"steps": [{"registry_name": "tokenizer_processor", "config": {}}]}, {}, None, "t")
    with pytest.raises(
        TaskStepError, match="padding='middle'; must be one of longest, max_length, do_not_pad"
    ):
        TokenizerSettings(str(VLM_DIR), padding="middle")
