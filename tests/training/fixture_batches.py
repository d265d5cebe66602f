"""The fixed training batch of tests/fixtures/training/ (scripts/make_training_fixtures.py builds
it in LeRobot's environment, tests/training/test_presets.py here): torch only, no lerobot import.

The recorded normalized inputs of a policy fixture (tests/fixtures/policies/<name>), repeated
over the observation history for Diffusion, with seeded normalized actions, two of them padding.
"""

from __future__ import annotations

import torch

ACTION_SEED = 7


def training_batch(
    expected: dict[str, torch.Tensor], action_steps: int, action_dim: int, history: int | None = None
) -> dict[str, torch.Tensor]:
    image = expected["normalized.0.observation.image"]
    state = expected["normalized.0.observation.state"]
    if history is None:
        batch = {"observation.image": image, "observation.state": state}
    else:
        batch = {
            "observation.image": image.unsqueeze(1).repeat_interleave(history, dim=1),
            "observation.state": state.unsqueeze(1).repeat_interleave(history, dim=1),
        }
    generator = torch.Generator().manual_seed(ACTION_SEED)
    batch["action"] = torch.randn((state.shape[0], action_steps, action_dim), generator=generator)
    batch["action_is_pad"] = torch.zeros((state.shape[0], action_steps), dtype=torch.bool)
    batch["action_is_pad"][1, -2:] = True
    return batch
