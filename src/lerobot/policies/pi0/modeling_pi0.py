"""π0 (Black et al., 2024, arXiv:2410.24164): the π network (lerobot.policies.pi.modeling) with
the state as a token of its own and the time mixed into every action token.

Parameter names match LeRobot's `PI0Policy` (`model.state_proj.weight`,
`model.action_time_mlp_in.weight`, ...). The suffix, after the cached prefix:
    [state token (a block of its own), one token per noisy action: MLP([action, time embedding])]
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from lerobot.policies.pi.configuration import PiFlowConfig
from lerobot.policies.pi.modeling import PiFlowMatching, PiFlowPolicy
from lerobot.policies.pi0.configuration_pi0 import PI0Config
from lerobot.utils.not_in_this_build import refused_names


class PI0Policy(PiFlowPolicy):
    config_class = PI0Config
    name = "pi0"

    @staticmethod
    def network_class() -> type[PiFlowMatching]:
        return PI0FlowMatching


class PI0FlowMatching(PiFlowMatching):
    """π0's network: the π network with a state token and time-mixed action tokens."""

    def add_time_projections(self, config: PiFlowConfig, width: int) -> None:
        """The state's projection, and the MLP mixing each action token with the time."""
        self.state_proj = nn.Linear(config.max_state_dim, width)
        self.action_time_mlp_in = nn.Linear(2 * width, width)
        self.action_time_mlp_out = nn.Linear(width, width)

    def embed_suffix(
        self, state: Tensor, noisy_actions: Tensor, time: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """(embeddings, padding mask, block starts, expert norm condition). π0: the state token
        (a block of its own, which the prefix cannot see), then the action tokens (one block
        attending to everything before), each an MLP of [action embedding, time embedding]."""
        if self.state_proj.weight.dtype == torch.float32:
            state = state.to(torch.float32)
        state_emb = self.state_proj(state)[:, None, :]
        action_emb = self.action_in_proj(noisy_actions)
        time_emb = self.time_embedding(time)[:, None, :].expand_as(action_emb)
        fused = self.action_time_mlp_in(torch.cat([action_emb, time_emb], dim=2))
        fused = self.action_time_mlp_out(F.silu(fused))
        embs = torch.cat([state_emb, fused], dim=1)
        return embs, *self.suffix_masks(embs, 1), None


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
