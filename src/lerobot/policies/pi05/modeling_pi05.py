"""π0.5: the π network (lerobot.policies.pi.modeling) with the time in the expert's norms.

Module and parameter names match LeRobot's `PI05Policy` (`model.time_mlp_in.weight`,
`model.paligemma_with_expert.gemma_expert.model.layers.0.input_layernorm.dense.weight`, ...).
Differences from π0, all in the suffix:
- no state token: the (normalised, discretised) state reaches the model through the prompt
  (lerobot.processor.language.StatePromptTask);
- the action tokens are the noisy actions' projection alone;
- the time's sine-cosine embedding passes an MLP (silu after each layer) and conditions every
  RMS norm of the expert (adaRMS: scale, shift and a gate on each residual branch).
"""

from __future__ import annotations

import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from lerobot.policies.pi.configuration import PiFlowConfig
from lerobot.policies.pi.modeling import PiFlowMatching, PiFlowPolicy
from lerobot.policies.pi05.configuration_pi05 import PI05Config
from lerobot.utils.not_in_this_build import refused_names


class PI05Policy(PiFlowPolicy):
    config_class = PI05Config
    name = "pi05"

    @staticmethod
    def network_class() -> type[PiFlowMatching]:
        return PI05FlowMatching


class PI05FlowMatching(PiFlowMatching):
    """π0.5's network: the π network, with the time MLP conditioning the expert's norms."""

    def add_time_projections(self, config: PiFlowConfig, width: int) -> None:
        self.time_mlp_in = nn.Linear(width, width)
        self.time_mlp_out = nn.Linear(width, width)

    def embed_suffix(
        self, state: Tensor | None, noisy_actions: Tensor, time: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(action tokens, padding mask, block starts, the expert's norm condition)."""
        action_emb = self.action_in_proj(noisy_actions)
        cond = F.silu(self.time_mlp_out(F.silu(self.time_mlp_in(self.time_embedding(time)))))
        return action_emb, *self.suffix_masks(action_emb, 0), cond


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
