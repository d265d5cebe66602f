"""A checkpoint our `save_pretrained` writes loads in LeRobot 0.6.1 itself, and acts the same.

Needs LeRobot 0.6.1's scratch environment (never a dependency of this project): `make
lerobot-ref` builds it, tests/lerobot_ref.py finds it. Without it the test is skipped, saying so; the config.json our save writes is checked against
LeRobot's field lists without it (test_pretrained.py).
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest
import torch
from safetensors.torch import load_file, save_file

from lerobot.policies.factory import get_policy_class
from tests.lerobot_ref import NO_LEROBOT_REASON, lerobot_ref_python
from tests.policies.checkpoints import expected, load, raw_step

LEROBOT_PYTHON = lerobot_ref_python() or ""
pytestmark = pytest.mark.skipif(not LEROBOT_PYTHON, reason=NO_LEROBOT_REASON)

LEROBOT_SIDE = textwrap.dedent(
    """
    import sys, torch
    from safetensors.torch import load_file, save_file
    from lerobot.policies.factory import get_policy_class
    policy_type, checkpoint, inputs, output = sys.argv[1:]
    policy = get_policy_class(policy_type).from_pretrained(checkpoint)
    batch = load_file(inputs)
    noise = batch.pop("noise", None)
    torch.manual_seed(0)
    with torch.no_grad():
        chunk = policy.predict_action_chunk(batch, noise=noise) if noise is not None else policy.predict_action_chunk(batch)
    save_file({"chunk": chunk.contiguous()}, output)
    """
)


def history_batch(batch: dict[str, torch.Tensor], n_obs_steps: int) -> dict[str, torch.Tensor]:
    """Diffusion's offline input: each observation repeated over its history."""
    return {key: value.unsqueeze(1).repeat_interleave(n_obs_steps, dim=1) for key, value in batch.items()}


@pytest.mark.parametrize("name", ["act", "diffusion"])
def test_lerobot_loads_our_save_and_predicts_the_same_chunk(checkpoints, tmp_path, name):
    policy = get_policy_class(name).from_pretrained(checkpoints[name])
    policy.save_pretrained(tmp_path / "ours")
    batch = {
        k: v
        for k, v in load(checkpoints[name]).preprocessor(raw_step(expected(name), 0)).items()
        if isinstance(v, torch.Tensor)
    }
    kwargs = {}
    if name == "diffusion":
        batch = history_batch(batch, policy.config.n_obs_steps)
        shape = (
            batch["observation.state"].shape[0],
            policy.config.horizon,
            policy.config.action_feature.shape[0],
        )
        kwargs["noise"] = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    save_file({**batch, **kwargs}, tmp_path / "inputs.safetensors")
    subprocess.run(
        [
            LEROBOT_PYTHON,
            "-c",
            LEROBOT_SIDE,
            name,
            str(tmp_path / "ours"),
            str(tmp_path / "inputs.safetensors"),
            str(tmp_path / "out.safetensors"),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,  # not this repository: LeRobot's own `lerobot` package must be the one imported
    )
    torch.manual_seed(0)
    with torch.no_grad():
        ours = policy.predict_action_chunk(batch, **kwargs)
    theirs = load_file(tmp_path / "out.safetensors")["chunk"]
    torch.testing.assert_close(theirs, ours, rtol=0, atol=1e-5)
