"""LeRobot's processor pipeline (`lerobot.processor.pipeline`): steps run in order on a
transition, with converters at both ends, saved as one JSON file plus a safetensors file per
step that keeps tensors.

`make_pre_post_processors` returns these for every policy, so code written against LeRobot's
pipelines (calling them on batches, `step_through`, hooks, `save_pretrained`, indexing) runs
unchanged, and files either package writes load in the other (`saved_pipeline` reads them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar

import torch

from lerobot.processor.converters import batch_to_transition, create_transition, transition_to_batch
from lerobot.processor.core import EnvTransition, TransitionKey
from lerobot.processor.steps import (
    ActionProcessorStep,
    ComplementaryDataProcessorStep,
    DoneProcessorStep,
    Features,
    IdentityProcessorStep,
    InfoProcessorStep,
    ObservationProcessorStep,
    PolicyActionProcessorStep,
    ProcessorStep,
    ProcessorStepRegistry,
    RewardProcessorStep,
    RobotActionProcessorStep,
    TruncatedProcessorStep,
)
from lerobot.utils.cache_dir import lerobot_cache_dir
from lerobot.utils.io import write_safetensors

__all__ = [
    "ActionProcessorStep",
    "ComplementaryDataProcessorStep",
    "DataProcessorPipeline",
    "DoneProcessorStep",
    "IdentityProcessorStep",
    "InfoProcessorStep",
    "ObservationProcessorStep",
    "PolicyActionProcessorStep",
    "PolicyProcessorPipeline",
    "ProcessorKwargs",
    "ProcessorMigrationError",
    "ProcessorStep",
    "ProcessorStepRegistry",
    "RewardProcessorStep",
    "RobotActionProcessorStep",
    "RobotProcessorPipeline",
    "TruncatedProcessorStep",
]

TInput = TypeVar("TInput")
TOutput = TypeVar("TOutput")
Hook = Callable[[int, EnvTransition], None]


class ProcessorKwargs(TypedDict, total=False):
    """The keyword arguments a pipeline is built with besides its steps."""

    to_transition: Callable[[dict[str, Any]], EnvTransition] | None
    to_output: Callable[[EnvTransition], Any] | None
    name: str | None
    before_step_hooks: list[Hook] | None
    after_step_hooks: list[Hook] | None


class ProcessorMigrationError(Exception):
    """A checkpoint older than LeRobot's processor files (statistics inside model.safetensors).

    `make_pre_post_processors` reads such checkpoints directly; loading one as a pipeline
    raises this with the reason."""

    def __init__(self, model_path: str | Path, migration_command: str, original_error: str):
        self.model_path = model_path
        self.migration_command = migration_command
        self.original_error = original_error
        super().__init__(f"{model_path}: {original_error}; {migration_command}")


@dataclass
class DataProcessorPipeline(Generic[TInput, TOutput]):
    """Steps applied in order: `to_transition(data)`, each step, then `to_output`.

    The default converters take and give a flat batch (`batch_to_transition`); a
    postprocessor uses `policy_action_to_transition` / `transition_to_policy_action`.
    """

    steps: Sequence[ProcessorStep] = field(default_factory=list)
    name: str = "DataProcessorPipeline"
    to_transition: Callable[[TInput], EnvTransition] = field(default=batch_to_transition, repr=False)
    to_output: Callable[[EnvTransition], TOutput] = field(default=transition_to_batch, repr=False)
    before_step_hooks: list[Hook] = field(default_factory=list, repr=False)
    after_step_hooks: list[Hook] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        for step in self.steps:
            if not isinstance(step, ProcessorStep):
                raise TypeError(f"{self.name}: {step!r} is not a ProcessorStep")

    def __call__(self, data: TInput) -> TOutput:
        return self.to_output(self._forward(self.to_transition(data)))

    def _forward(self, transition: EnvTransition) -> EnvTransition:
        if not (self.before_step_hooks or self.after_step_hooks):
            for step in self.steps:
                transition = step(transition)
            return transition
        for index, step in enumerate(self.steps):
            for hook in self.before_step_hooks:
                hook(index, transition)
            transition = step(transition)
            for hook in self.after_step_hooks:
                hook(index, transition)
        return transition

    def step_through(self, data: TInput) -> Iterable[EnvTransition]:
        """The transition before the first step and after each one, for inspection."""
        transition = self.to_transition(data)
        yield transition
        for step in self.steps:
            transition = step(transition)
            yield transition

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int | slice) -> ProcessorStep | DataProcessorPipeline[TInput, TOutput]:
        if isinstance(index, slice):
            return DataProcessorPipeline(
                steps=list(self.steps[index]),
                name=self.name,
                to_transition=self.to_transition,
                to_output=self.to_output,
                before_step_hooks=list(self.before_step_hooks),
                after_step_hooks=list(self.after_step_hooks),
            )
        return self.steps[index]

    def register_before_step_hook(self, fn: Hook) -> None:
        self.before_step_hooks.append(fn)

    def unregister_before_step_hook(self, fn: Hook) -> None:
        _remove_hook(self.before_step_hooks, fn, "before")

    def register_after_step_hook(self, fn: Hook) -> None:
        self.after_step_hooks.append(fn)

    def unregister_after_step_hook(self, fn: Hook) -> None:
        _remove_hook(self.after_step_hooks, fn, "after")

    def reset(self) -> None:
        """Forget each step's per-episode state (call it between episodes)."""
        for step in self.steps:
            step.reset()

    def transform_features(self, initial_features: Features) -> Features:
        """The features after every step, from `initial_features` (no data needed)."""
        features = initial_features
        for step in self.steps:
            features = step.transform_features(features)
        return features

    # --- saving: one JSON entry per step, a safetensors file per step that keeps tensors ---

    def saved_steps(self) -> list[tuple[int, ProcessorStep]]:
        """(index in the saved file, step) of the steps a file records; steps this package adds
        at run time only (`saved = False`: blank cameras) are left out, so LeRobot loads the file."""
        kept = [step for step in self.steps if getattr(step, "saved", True)]
        return list(enumerate(kept))

    def get_config(self) -> dict[str, Any]:
        """What `save_pretrained` writes as JSON."""
        entries = []
        for index, step in self.saved_steps():
            registry_name = getattr(type(step), "_registry_name", None)
            entry: dict[str, Any] = (
                {"registry_name": registry_name}
                if registry_name
                else {"class": f"{type(step).__module__}.{type(step).__name__}"}
            )
            entry["config"] = step.get_config()
            if step.state_dict():
                entry["state_file"] = self._state_filename(index, registry_name)
            entries.append(entry)
        return {"name": self.name, "steps": entries}

    def state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """{state file name without .safetensors: the step's tensors (cloned)}."""
        state = {}
        for index, step in self.saved_steps():
            tensors = step.state_dict()
            if tensors:
                key = self._state_filename(index, getattr(type(step), "_registry_name", None))
                state[key.removesuffix(".safetensors")] = {k: v.clone() for k, v in tensors.items()}
        return state

    def load_state_dict(self, state_dict: dict[str, dict[str, torch.Tensor]]) -> None:
        """Each step's tensors from `state_dict` (keys as `state_dict()` gives them)."""
        used = set()
        for index, step in self.saved_steps():
            key = self._state_filename(index, getattr(type(step), "_registry_name", None))
            key = key.removesuffix(".safetensors")
            if key in state_dict:
                step.load_state_dict(state_dict[key])
                used.add(key)
            elif step.state_dict():
                raise KeyError(f"{self.name}: no state {key!r} for step {index}; have {sorted(state_dict)}")
        unexpected = sorted(set(state_dict) - used)
        if unexpected:
            raise KeyError(f"{self.name}: state {unexpected} matches no step")

    def save_pretrained(
        self,
        save_directory: str | Path | None = None,
        *,
        repo_id: str | None = None,
        push_to_hub: bool = False,
        card_kwargs: dict[str, Any] | None = None,
        config_filename: str | None = None,
        **push_to_hub_kwargs: Any,
    ) -> None:
        """`<config_filename or name>.json` and each stateful step's safetensors file, in
        `save_directory` (default: the lerobot cache's processors/<name>); `push_to_hub` then
        uploads the directory to `repo_id`."""
        if save_directory is None:
            save_directory = lerobot_cache_dir() / "processors" / self.file_stem()
        directory = Path(save_directory)
        directory.mkdir(parents=True, exist_ok=True)
        for key, tensors in self.state_dict().items():
            write_safetensors(
                {k: v.contiguous() for k, v in tensors.items()}, directory / f"{key}.safetensors"
            )
        filename = config_filename or f"{self.file_stem()}.json"
        (directory / filename).write_text(json.dumps(self.get_config(), indent=2))
        if push_to_hub:
            _upload(directory, repo_id or self.file_stem(), push_to_hub_kwargs)

    @classmethod
    def from_pretrained(
        cls,
        pretrained_model_name_or_path: str | Path,
        config_filename: str,
        *,
        force_download: bool = False,
        resume_download: bool | None = None,
        proxies: dict[str, str] | None = None,
        token: str | bool | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        revision: str | None = None,
        overrides: dict[str, Any] | None = None,
        to_transition: Callable[[TInput], EnvTransition] | None = None,
        to_output: Callable[[EnvTransition], TOutput] | None = None,
        **kwargs: Any,
    ) -> DataProcessorPipeline[TInput, TOutput]:
        """The pipeline saved in a directory, as a file, or in a hub repo (read from the local
        cache when offline); `overrides` ({step name: {argument: value}}) change a step's saved
        settings, and each must name a step of the file."""
        from lerobot.configs.hub import HubOptions
        from lerobot.processor.saved_pipeline import read_pipeline_file, steps_from_config

        hub = HubOptions(cache_dir, force_download, token, local_files_only)
        config, directory = read_pipeline_file(pretrained_model_name_or_path, config_filename, revision, hub)
        steps = steps_from_config(config, overrides or {}, directory, where=config_filename)
        return cls(
            steps=steps,
            name=config.get("name", "DataProcessorPipeline"),
            to_transition=to_transition or batch_to_transition,
            to_output=to_output or transition_to_batch,
        )

    @classmethod
    def from_config(
        cls,
        config: dict[str, Any],
        *,
        state_dict: dict[str, dict[str, torch.Tensor]] | None = None,
        overrides: dict[str, Any] | None = None,
        to_transition: Callable[[TInput], EnvTransition] | None = None,
        to_output: Callable[[EnvTransition], TOutput] | None = None,
    ) -> DataProcessorPipeline[TInput, TOutput]:
        """The pipeline a `get_config()` dict describes, with `state_dict`'s tensors."""
        from lerobot.processor.saved_pipeline import steps_from_config

        pipeline = cls(
            steps=steps_from_config(config, overrides or {}, None, where="the config"),
            name=config.get("name", "DataProcessorPipeline"),
            to_transition=to_transition or batch_to_transition,
            to_output=to_output or transition_to_batch,
        )
        if state_dict is not None:
            pipeline.load_state_dict(state_dict)
        return pipeline

    def file_stem(self) -> str:
        """The name as saved files start with it: lower case, `_` for anything else than letters,
        digits and `_` ("policy_preprocessor")."""
        return re.sub(r"[^a-zA-Z0-9_]", "_", self.name.lower())

    def _state_filename(self, index: int, registry_name: str | None) -> str:
        stem = self.file_stem()
        suffix = f"_{registry_name}" if registry_name else ""
        return f"{stem}_step_{index}{suffix}.safetensors"

    # --- one part of a transition at a time (LeRobot's helpers) ---

    def process_observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        return self._forward(create_transition(observation=observation))[TransitionKey.OBSERVATION]

    def process_action(self, action: Any) -> Any:
        return self._forward(create_transition(action=action))[TransitionKey.ACTION]

    def process_reward(self, reward: float | torch.Tensor) -> float | torch.Tensor:
        return self._forward(create_transition(reward=reward))[TransitionKey.REWARD]

    def process_done(self, done: bool | torch.Tensor) -> bool | torch.Tensor:
        return self._forward(create_transition(done=done))[TransitionKey.DONE]

    def process_truncated(self, truncated: bool | torch.Tensor) -> bool | torch.Tensor:
        return self._forward(create_transition(truncated=truncated))[TransitionKey.TRUNCATED]

    def process_info(self, info: dict[str, Any]) -> dict[str, Any]:
        return self._forward(create_transition(info=info))[TransitionKey.INFO]

    def process_complementary_data(self, complementary_data: dict[str, Any]) -> dict[str, Any]:
        transition = self._forward(create_transition(complementary_data=complementary_data))
        return transition[TransitionKey.COMPLEMENTARY_DATA]


RobotProcessorPipeline = DataProcessorPipeline[TInput, TOutput]
PolicyProcessorPipeline = DataProcessorPipeline[TInput, TOutput]


def _upload(directory: Path, repo_id: str, options: dict[str, Any]) -> None:
    from huggingface_hub import HfApi

    api = HfApi(token=options.get("token"))
    api.create_repo(repo_id, private=options.get("private"), exist_ok=True)
    api.upload_folder(repo_id=repo_id, folder_path=directory, commit_message=options.get("commit_message"))


def _remove_hook(hooks: list[Hook], fn: Hook, when: str) -> None:
    if fn not in hooks:
        raise ValueError(f"{fn!r} is not registered as a {when}-step hook")
    hooks.remove(fn)
