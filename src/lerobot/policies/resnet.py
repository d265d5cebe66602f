"""ResNet trunks (He et al., 2016) with torchvision's parameter names, without torchvision.

LeRobot's ACT and Diffusion Policy read images with a torchvision ResNet cut before its
pooling and classifier; their checkpoints store those weights under torchvision's names
(`conv1`, `bn1`, `layer1.0.conv1`, `layer1.0.downsample.0`, ...). Building the same module tree
here lets those weights load with strict key matching. Weights always come from the
checkpoint: nothing here downloads pretrained ImageNet weights.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

NormLayer = Callable[[int], nn.Module]


@dataclass(frozen=True)
class ResNetSpec:
    bottleneck: bool
    blocks_per_stage: tuple[int, int, int, int]


SPECS = {
    "resnet18": ResNetSpec(False, (2, 2, 2, 2)),
    "resnet34": ResNetSpec(False, (3, 4, 6, 3)),
    "resnet50": ResNetSpec(True, (3, 4, 6, 3)),
    "resnet101": ResNetSpec(True, (3, 4, 23, 3)),
    "resnet152": ResNetSpec(True, (3, 8, 36, 3)),
}
STAGE_WIDTHS = (64, 128, 256, 512)


class FrozenBatchNorm2d(nn.Module):
    """Batch norm with fixed statistics and affine terms, stored as buffers.

    ACT uses this variant (torchvision.ops.FrozenBatchNorm2d), so its checkpoints hold
    weight, bias, running_mean and running_var but no num_batches_tracked.
    """

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight.reshape(1, -1, 1, 1) * (self.running_var.reshape(1, -1, 1, 1) + self.eps).rsqrt()
        shift = self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale
        return x * scale + shift


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and a skip connection (ResNet-18/34)."""

    expansion = 1

    def __init__(self, in_ch: int, width: int, stride: int, dilation: int, norm: NormLayer):
        super().__init__()
        if dilation > 1:
            raise ValueError("dilation is not supported by ResNet-18/34 blocks; use resnet50 or larger")
        self.conv1 = nn.Conv2d(in_ch, width, 3, stride, padding=1, bias=False)
        self.bn1 = norm(width)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(width, width, 3, 1, padding=1, bias=False)
        self.bn2 = norm(width)
        self.downsample = _projection(in_ch, width, stride, norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + skip)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided, as in torchvision's "v1.5"), 1x1 expand (ResNet-50 and up)."""

    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int, dilation: int, norm: NormLayer):
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = norm(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, padding=dilation, dilation=dilation, bias=False)
        self.bn2 = norm(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = norm(out_ch)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _projection(in_ch, out_ch, stride, norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + skip)


def _projection(in_ch: int, out_ch: int, stride: int, norm: NormLayer) -> nn.Sequential | None:
    """The 1x1 convolution that matches the skip path's shape, when the block changes it."""
    if stride == 1 and in_ch == out_ch:
        return None
    return nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride, bias=False), norm(out_ch))


def resnet_trunk(name: str, norm: NormLayer = nn.BatchNorm2d, dilate_last: bool = False) -> OrderedDict:
    """The ResNet's modules up to its last stage, in torchvision's order and names.

    ACT wraps them in an `nn.Sequential(OrderedDict)` (keys `conv1.weight`), Diffusion Policy
    in a plain `nn.Sequential` (keys `0.weight`), as LeRobot's two policies do.
    """
    spec = SPECS[name]
    block = Bottleneck if spec.bottleneck else BasicBlock
    modules = OrderedDict(
        conv1=nn.Conv2d(3, 64, 7, 2, padding=3, bias=False),
        bn1=norm(64),
        relu=nn.ReLU(inplace=True),
        maxpool=nn.MaxPool2d(3, 2, padding=1),
    )
    in_ch, dilation = 64, 1
    for stage, (width, n_blocks) in enumerate(zip(STAGE_WIDTHS, spec.blocks_per_stage, strict=True)):
        stride = 1 if stage == 0 else 2
        first_dilation = dilation
        if dilate_last and stage == 3:
            dilation, stride = dilation * stride, 1
        blocks = [block(in_ch, width, stride, first_dilation, norm)]
        in_ch = width * block.expansion
        blocks += [block(in_ch, width, 1, dilation, norm) for _ in range(n_blocks - 1)]
        modules[f"layer{stage + 1}"] = nn.Sequential(*blocks)
    return modules


def feature_channels(name: str) -> int:
    """Channels of the last stage's feature map (torchvision's `fc.in_features`)."""
    return STAGE_WIDTHS[-1] * (Bottleneck.expansion if SPECS[name].bottleneck else BasicBlock.expansion)


def feature_map_size(size: int, dilate_last: bool = False) -> int:
    """Height (or width) of the trunk's output for an input of `size` pixels.

    The stem convolution, the max pool and the first block of stages 2-4 each halve the size,
    rounding up (kernel 2p+1, padding p, stride 2 gives ceil(n / 2)).
    """
    for _ in range(4 if dilate_last else 5):
        size = (size + 1) // 2
    return size
