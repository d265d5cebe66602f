"""Loading model.safetensors tensor by tensor into a module built on the meta device."""

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from lerobot.policies.flow.streaming_weights import (
    WeightsError,
    load_streaming,
    read_entries,
    to_empty_keeping_ties,
)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 3)
        self.head = nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight
        self.norm = nn.LayerNorm(3).to(torch.bfloat16)
        self.register_buffer("steps", torch.zeros(2, dtype=torch.int64))


def empty_module() -> Tied:
    with torch.device("meta"):
        module = Tied()
    return to_empty_keeping_ties(module, "cpu")


def test_tensors_land_in_place_with_each_targets_dtype_and_tied_names_once(tmp_path):
    source = Tied()
    source.steps += 7
    state = {k: v.float() if v.dtype == torch.bfloat16 else v for k, v in source.state_dict().items()}
    del state["head.weight"]  # safetensors keeps one name of a tied tensor
    save_file(state, tmp_path / "model.safetensors")
    module = empty_module()
    storage = module.embed.weight.data_ptr()
    load_streaming(module, tmp_path / "model.safetensors")
    assert module.embed.weight.data_ptr() == storage and module.head.weight is module.embed.weight
    torch.testing.assert_close(module.embed.weight, source.embed.weight, atol=0, rtol=0)
    assert module.norm.weight.dtype == torch.bfloat16  # the file's float32 cast to the module's dtype
    torch.testing.assert_close(module.norm.weight, source.norm.weight, atol=0, rtol=0)
    assert module.steps.tolist() == [7, 7]
    assert set(read_entries(tmp_path / "model.safetensors")) == set(state)


def test_names_shapes_and_truncation_fail_in_one_line(tmp_path):
    state = {k: v.float() for k, v in Tied().state_dict().items() if k != "head.weight"}
    path = tmp_path / "model.safetensors"
    save_file({**state, "extra": torch.zeros(1)}, path)
    with pytest.raises(WeightsError, match=r"does not fit the config: 1 unexpected key\(s\) \(e.g. extra\)"):
        load_streaming(empty_module(), path)
    save_file({k: v for k, v in state.items() if k != "norm.bias"}, path)
    with pytest.raises(WeightsError, match=r"1 missing key\(s\) \(e.g. norm.bias\)"):
        load_streaming(empty_module(), path)
    save_file({**state, "embed.weight": torch.zeros(6, 3)}, path)
    with pytest.raises(
        WeightsError, match=r"other shapes than the config implies, e.g. embed.weight \[6, 3\] vs \[5, 3\]"
    ):
        load_streaming(empty_module(), path)
    save_file(state, path)
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(WeightsError, match="ends 8 bytes early"):
        load_streaming(empty_module(), path)
