"""The rollout: episodes of one task run on a slot env with one policy, each from its seed.

- `settings`: how episodes run (`RolloutSettings`, with the seed rule `seed_of`) and the hooks
  a caller listens on;
- `rounds`: a round of a slot group (`Round`), the work groups share (`Work`), and a round's
  planning as a generator that can share its model call with other groups;
- `episode`: one running episode, recorded step by step, finished or abandoned;
- `actions`: the policy's side of a round: batches, actions on the host, chunks, NaN rows;
- `loop`: one group's loop (`RolloutLoop`);
- `schedules`: how several groups take their rounds, and `run_episodes`, the one way in.
"""

from lerobot.evaluation.run.rollout.schedules import run_episodes
from lerobot.evaluation.run.rollout.settings import (
    RolloutHooks,
    RolloutSettings,
    RolloutStoppedError,
    StepHook,
)

__all__ = ["RolloutHooks", "RolloutSettings", "RolloutStoppedError", "StepHook", "run_episodes"]
