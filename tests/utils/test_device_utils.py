"""LeRobot's device helpers, under both of LeRobot's module paths."""

import pytest
import torch

from lerobot.utils import device_utils
from lerobot.utils.utils import get_safe_torch_device


def test_get_safe_torch_device_under_lerobots_old_and_new_paths():
    assert get_safe_torch_device is device_utils.get_safe_torch_device
    assert get_safe_torch_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="^Requested device 'cuda:0' but cuda is not available"):
            get_safe_torch_device("cuda:0")


def test_the_machines_best_device_and_what_runs_on_it():
    best = device_utils.auto_select_torch_device()
    assert best.type == device_utils.auto_device()
    assert device_utils.is_torch_device_available("cpu") and device_utils.is_amp_available("cpu")
    assert not device_utils.is_amp_available("mps")
    with pytest.raises(ValueError, match="Unknown device tpu"):
        device_utils.is_torch_device_available("tpu")
    assert device_utils.get_safe_dtype(torch.float64, "mps") is torch.float32
    assert device_utils.get_safe_dtype(torch.float64, torch.device("cpu")) is torch.float64
    assert device_utils.resolve_safetensors_device(torch.device("cpu")) == "cpu"
