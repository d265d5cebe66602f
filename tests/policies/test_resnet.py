"""Our ResNet trunks against torchvision's parameter names and shapes (no torchvision needed)."""

import json

import pytest
import torch
from torch import nn

from lerobot.policies.backbones import RESNETS
from lerobot.policies.resnet import SPECS, FrozenBatchNorm2d, feature_channels, feature_map_size, resnet_trunk
from tests.policies.checkpoints import FIXTURES


def test_resnet50_names_and_shapes_match_torchvision():
    """Recorded from torchvision.models.resnet50() by scripts/make_policy_fixtures.py; the
    pooling and classifier (fc) are what LeRobot's policies cut off."""
    torchvision_shapes = json.loads((FIXTURES / "resnet50_state_dict_shapes.json").read_text())
    expected = {k: v for k, v in torchvision_shapes.items() if not k.startswith("fc.")}
    ours = nn.Sequential(resnet_trunk("resnet50")).state_dict()
    assert {k: list(v.shape) for k, v in ours.items()} == expected
    assert feature_channels("resnet50") == torchvision_shapes["fc.weight"][1]


def test_frozen_batch_norm_stores_no_batch_counter():
    trunk = nn.Sequential(resnet_trunk("resnet18", FrozenBatchNorm2d))
    assert not any(k.endswith("num_batches_tracked") for k in trunk.state_dict())
    assert "layer2.0.downsample.1.running_var" in trunk.state_dict()


@pytest.mark.parametrize("size", [63, 84, 96, 97])
@pytest.mark.parametrize(("name", "dilate"), [("resnet18", False), ("resnet50", True)])
def test_feature_map_size_matches_a_forward_pass(size, name, dilate):
    trunk = nn.Sequential(resnet_trunk(name, dilate_last=dilate)).eval()
    with torch.no_grad():
        out = trunk(torch.zeros(1, 3, size, size + 5))
    assert out.shape[1:] == (
        feature_channels(name),
        feature_map_size(size, dilate),
        feature_map_size(size + 5, dilate),
    )


def test_frozen_batch_norm_applies_the_stored_affine_map():
    norm = FrozenBatchNorm2d(2)
    norm.weight.copy_(torch.tensor([2.0, 1.0]))
    norm.bias.copy_(torch.tensor([0.5, 0.0]))
    norm.running_mean.copy_(torch.tensor([1.0, -1.0]))
    norm.running_var.copy_(torch.tensor([4.0, 1.0]))
    x = torch.ones(1, 2, 1, 1)
    expected = torch.tensor([2.0 * 0.0 / (4.0 + 1e-5) ** 0.5 + 0.5, 2.0 / (1.0 + 1e-5) ** 0.5])
    torch.testing.assert_close(norm(x).flatten(), expected)


def test_every_backbone_the_configs_accept_is_one_this_module_builds():
    assert tuple(SPECS) == RESNETS
