"""The slot API: what the rollout loop steps, declared in one place.

A vector env for evaluation is a row of slots, slot i being the policy's batch row i, each
stepped and reset on its own (`SlotEnv`). Where slots step while the caller computes (worker
processes now, a batched simulator on a GPU later), a round splits in two halves, a send and a
gather, so that the policy computes one group's actions while another group's slots step
(`SplitSlotEnv`). Gymnasium's `VectorEnv` declares its `step_async` / `step_wait` pair and
guards the order with a state; here the order is per slot (`RepliesOwed`), since groups of
slots send and gather independently: a second send before a gather, or a gather with nothing
sent, is an error naming the slots rather than a reply read by the wrong round or a hang.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lerobot.configs.env import TaskSpec

if TYPE_CHECKING:
    import gymnasium as gym
    import numpy as np

    from lerobot.envs.commands import ChunkResult, StepResult

DEFAULT_FPS = 30
"""Video frame rate of an env that states none."""


@dataclass(frozen=True)
class SlotFailure:
    """A sub-env that could not answer: it raised, its worker died, or it did not answer in time."""

    env_id: int
    kind: str  # "error", "died" or "timeout"
    message: str

    def describe(self, command: str) -> str:
        return f"env {self.env_id} failed during {command} ({self.kind}): {self.message}"


StepOutcomes = list["StepResult | ChunkResult | SlotFailure"]
ResetOutcomes = list["tuple[Any, dict] | SlotFailure"]


@dataclass(frozen=True)
class SlotRound:
    """What one round asks of a slot env: slots that step (one action each, or a (steps,
    action_dim) chunk) while others reset for their next episodes (a seed and options each),
    those of the stepping slots that render a frame, and those whose images nobody will read
    (`step_without_images`). A slot steps or resets, never both."""

    step_ids: Sequence[int] = ()
    actions: Sequence[np.ndarray] = ()
    reset_ids: Sequence[int] = ()
    seeds: Sequence[int | None] = ()
    options: Sequence[dict | None] = ()
    render_ids: Sequence[int] = ()
    blind_ids: Sequence[int] = ()

    @property
    def slots(self) -> list[int]:
        """Every slot the round sends a command to."""
        return [*self.step_ids, *self.reset_ids]

    def on(self, slot_ids: Sequence[int]) -> SlotRound:
        """The same round with slot i named `slot_ids[i]`: a group's round on its parent env."""

        def renamed(ids: Sequence[int]) -> list[int]:
            return [slot_ids[i] for i in ids]

        return replace(
            self,
            step_ids=renamed(self.step_ids),
            reset_ids=renamed(self.reset_ids),
            render_ids=renamed(self.render_ids),
            blind_ids=renamed(self.blind_ids),
        )


@runtime_checkable
class SlotEnv(Protocol):
    """What the rollout loop steps in lockstep: `num_envs` slots, each stepped and reset on its
    own, slot i being the policy's batch row i.

    `LazyVectorEnv` implements it (for our envs and gymnasium's SyncVectorEnvs), and
    `lerobot.envs.gym_vector.WholeBatchEnv` for other vector envs, which it steps whole.
    """

    num_envs: int
    single_action_space: gym.spaces.Box
    task: TaskSpec | None
    """The task every slot runs, when the env knows it."""
    metadata: dict[str, Any]
    runs_action_chunks: bool
    """True when `step_and_reset_at` takes a (steps, action_dim) chunk for a slot and steps it
    in that slot's worker, answering a ChunkResult: one round trip per chunk, not per step."""

    def step_and_reset_at(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        """Run a round: the outcomes of its stepping slots, then of its resetting ones; a slot
        that fails answers a SlotFailure."""

    def render_at(
        self, env_ids: Sequence[int], tolerate_failures: bool = False
    ) -> list[np.ndarray | SlotFailure]:
        """The current frame of each of `env_ids`."""

    def restart(self, env_ids: Sequence[int]) -> None:
        """Replace the given slots' envs by fresh ones (after a crash or a hang)."""

    def close(self) -> None:
        """Close every slot's env."""


@runtime_checkable
class SplitSlotEnv(SlotEnv, Protocol):
    """A `SlotEnv` whose rounds split into a send and a gather, so that the caller computes
    while the slots step. Each slot's sends and gathers alternate (`RepliesOwed`)."""

    in_process_slots: int
    """How many slots (the first ones) step in the caller's process, on send."""

    @property
    def steps_in_background(self) -> bool:
        """Whether a sent round runs while the caller goes on; False: it runs on send, and
        groups of slots taking turns would gain nothing."""

    def send_step_and_reset_at(self, round_: SlotRound) -> None:
        """The first half of `step_and_reset_at`: send the round, answer nothing yet."""

    def gather_step_and_reset(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        """The second half: the replies to `round_`, sent last to its slots (waiting for them)."""

    def answered(
        self, slot_sets: Sequence[Sequence[int]], block: bool = True, gather_s: float = 0.0
    ) -> list[int]:
        """The indices of `slot_sets` whose last round is answered, so that gathering them does
        not wait; with `block`, waits for at least one, then up to `gather_s` for more."""

    def slots_by_owner(self) -> list[list[int]]:
        """The slots that answer together (a worker process's envs; each in-process slot
        alone): the smallest groups that can step independently of one another."""


class SlotOrderError(RuntimeError):
    """A split round used out of order: sent twice before a gather, or gathered unsent."""


class RepliesOwed:
    """The slots sent a round whose replies are not gathered yet.

    A slot's replies come back in the order its commands went out; a second round sent before
    the first is gathered would hand each round the other's replies, and a gather with nothing
    sent would wait forever. So every send and gather of a `SplitSlotEnv` passes through here.
    """

    def __init__(self) -> None:
        self._owed: set[int] = set()

    def sending(self, env_ids: Sequence[int]) -> None:
        again = self._owed.intersection(env_ids)
        if again:
            raise SlotOrderError(
                f"slots {sorted(again)}: a round sent before the replies to the last one were gathered"
            )
        self._owed.update(env_ids)

    def gathering(self, env_ids: Sequence[int]) -> None:
        unsent = set(env_ids) - self._owed
        if unsent:
            raise SlotOrderError(f"slots {sorted(unsent)}: replies gathered without a round sent")
        self._owed.difference_update(env_ids)

    def check_none(self, env_ids: Sequence[int], command: str) -> None:
        """Refuse a one-shot command (`reset_at`, `render_at`, `restart`...) to slots that owe
        a round's replies: it would read them as its own."""
        owed = self._owed.intersection(env_ids)
        if owed:
            raise SlotOrderError(
                f"slots {sorted(owed)}: {command} while the replies to a sent round are not gathered"
            )

    def clear(self) -> None:
        """Forget every owed reply (the slots' envs were closed)."""
        self._owed.clear()


class SlotGroup:
    """Some slots of a `SplitSlotEnv`, as a `SplitSlotEnv` of their own: slot i here is slot
    `slot_ids[i]` there. Groups made of whole `slots_by_owner()` step independently: while one
    group's slots step, the caller computes the next actions of another."""

    def __init__(self, env: SplitSlotEnv, slot_ids: Sequence[int]):
        self.env, self.slot_ids = env, list(slot_ids)
        self.num_envs = len(self.slot_ids)
        self.single_action_space = env.single_action_space
        self.task, self.metadata = env.task, env.metadata
        self.runs_action_chunks = env.runs_action_chunks
        self.in_process_slots = sum(slot < env.in_process_slots for slot in self.slot_ids)

    @property
    def steps_in_background(self) -> bool:
        return self.env.steps_in_background

    def _global(self, env_ids: Sequence[int]) -> list[int]:
        return [self.slot_ids[env_id] for env_id in env_ids]

    def step_and_reset_at(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        return self.env.step_and_reset_at(round_.on(self.slot_ids))

    def send_step_and_reset_at(self, round_: SlotRound) -> None:
        self.env.send_step_and_reset_at(round_.on(self.slot_ids))

    def gather_step_and_reset(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        return self.env.gather_step_and_reset(round_.on(self.slot_ids))

    def answered(self, slot_sets, block: bool = True, gather_s: float = 0.0) -> list[int]:
        return self.env.answered([self._global(ids) for ids in slot_sets], block, gather_s)

    def slots_by_owner(self) -> list[list[int]]:
        mine = {slot: i for i, slot in enumerate(self.slot_ids)}
        owners = ([mine[slot] for slot in owner if slot in mine] for owner in self.env.slots_by_owner())
        return [owner for owner in owners if owner]

    def render_at(self, env_ids: Sequence[int], tolerate_failures: bool = False):
        return self.env.render_at(self._global(env_ids), tolerate_failures)

    def restart(self, env_ids: Sequence[int]) -> None:
        self.env.restart(self._global(env_ids))

    def close(self) -> None:
        """The vector env is its owner's to close."""


def task_from_metadata(
    metadata: Mapping[str, Any],
    group: str = "",
    task_id: int = 0,
    name: Any = None,
    description: Any = None,
    max_steps: int | None = None,
) -> TaskSpec:
    """The task an env's `metadata` describes (as LeRobot's env factory fills it: `task`,
    `task_description`, `render_fps`); `name` and `description` stand in where it says none."""
    return TaskSpec(
        group=group,
        task_id=task_id,
        name=str(metadata.get("task") or name or ""),
        description=str(metadata.get("task_description") or description or ""),
        fps=int(metadata.get("render_fps") or DEFAULT_FPS),
        max_steps=max_steps,
    )


def task_of(env: SlotEnv) -> TaskSpec:
    """The task a slot env runs: the one it was built for, else what its metadata says (no
    call into its workers)."""
    return env.task if env.task is not None else task_from_metadata(env.metadata or {})
