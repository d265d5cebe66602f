"""Normalisation maps, as LeRobot's processors define them."""

import pytest
import torch

from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.processor.normalize import Normalizer

STATE = PolicyFeature(FeatureType.STATE, (2,))
IMAGE = PolicyFeature(FeatureType.VISUAL, (3, 4, 4))
ACTION = PolicyFeature(FeatureType.ACTION, (2,))


def normalizer(
    mode: str, stats: dict, feature: PolicyFeature = STATE, key: str = "observation.state"
) -> Normalizer:
    return Normalizer({key: feature}, {feature.type: NormalizationMode(mode)}, {key: stats})


def test_mean_std_adds_eps_to_std_and_inverts_without_it():
    norm = Normalizer(
        {"observation.state": STATE, "action": ACTION},
        {FeatureType.STATE: NormalizationMode.MEAN_STD, FeatureType.ACTION: NormalizationMode.MEAN_STD},
        {
            "observation.state": {"mean": torch.tensor([1.0, 2.0]), "std": torch.tensor([2.0, 0.0])},
            "action": {"mean": torch.tensor([1.0, -1.0]), "std": torch.tensor([0.5, 2.0])},
        },
    )
    out = norm.normalize({"observation.state": torch.tensor([[3.0, 2.0]]), "task": ["x"]})
    torch.testing.assert_close(out["observation.state"], torch.tensor([[2.0 / (2.0 + 1e-8), 0.0]]))
    assert out["task"] == ["x"]
    torch.testing.assert_close(
        norm.unnormalize_action(torch.tensor([[2.0, 1.0]])), torch.tensor([[2.0, 1.0]])
    )


def test_min_max_maps_the_range_to_minus_one_one_and_guards_a_zero_range():
    norm = normalizer("MIN_MAX", {"min": torch.tensor([0.0, 5.0]), "max": torch.tensor([4.0, 5.0])})
    out = norm.normalize({"observation.state": torch.tensor([[0.0, 5.0], [4.0, 5.0]])})["observation.state"]
    torch.testing.assert_close(out, torch.tensor([[-1.0, -1.0], [1.0, -1.0]]))


def test_quantiles_use_q01_and_q99():
    norm = normalizer("QUANTILES", {"q01": torch.tensor([-2.0, 0.0]), "q99": torch.tensor([2.0, 1.0])})
    out = norm.normalize({"observation.state": torch.tensor([[0.0, 1.0]])})["observation.state"]
    torch.testing.assert_close(out, torch.tensor([[0.0, 1.0]]))


def test_image_statistics_broadcast_per_channel():
    stats = {"mean": torch.tensor([0.5, 0.0, 1.0]), "std": torch.tensor([0.5, 1.0, 1.0])}
    norm = normalizer("MEAN_STD", stats, IMAGE, "observation.image")
    out = norm.normalize({"observation.image": torch.ones(1, 3, 4, 4)})["observation.image"]
    assert out[0, :, 0, 0].tolist() == pytest.approx([1.0, 1.0, 0.0])


def test_identity_and_missing_statistics_pass_through():
    x = torch.tensor([[3.0, 4.0]])
    assert normalizer("IDENTITY", {}).normalize({"observation.state": x})["observation.state"] is x
    unknown = Normalizer({"observation.state": STATE}, {FeatureType.STATE: NormalizationMode.MEAN_STD}, {})
    assert unknown.normalize({"observation.state": x})["observation.state"] is x


def test_incomplete_or_infinite_statistics_are_refused():
    with pytest.raises(ValueError, match="needs statistics std"):
        normalizer("MEAN_STD", {"mean": torch.zeros(2)})
    with pytest.raises(ValueError, match="not finite"):
        normalizer("MIN_MAX", {"min": torch.full((2,), torch.inf), "max": torch.ones(2)})


def test_statistics_follow_the_input_dtype():
    norm = normalizer("MEAN_STD", {"mean": torch.tensor([1.0, 1.0]), "std": torch.tensor([1.0, 1.0])})
    out = norm.normalize({"observation.state": torch.ones(1, 2, dtype=torch.float64)})["observation.state"]
    assert out.dtype == torch.float64
