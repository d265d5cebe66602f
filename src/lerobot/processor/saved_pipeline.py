"""Pipelines on disk, in LeRobot's layout: `<name>.json` ({"name", "steps": [{"registry_name" or
"class", "config", "state_file"?}]}) beside one safetensors file per step that keeps tensors.

Every way a file can fail to load is one line naming the file and the step: a step nobody
registered (and what to import), a class path that does not import, settings its class refuses,
an override naming no step, a state file outside the directory or unreadable.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from safetensors.torch import load_file

from lerobot.configs.hub import HubOptions
from lerobot.processor.steps import ProcessorStep, ProcessorStepRegistry, StepNotRegisteredError


class PipelineFileError(ValueError):
    """A saved pipeline that cannot be loaded; one line naming the file and the reason."""


def read_pipeline_file(
    source: str | Path, config_filename: str, revision: str | None, hub: HubOptions
) -> tuple[dict[str, Any], Path]:
    """(the pipeline's JSON, the directory its state files are in) for a directory, a JSON
    file, or a hub repo id."""
    path = Path(source)
    if path.is_dir():
        file = path / config_filename
        if not file.is_file():
            raise FileNotFoundError(f"{path}: no {config_filename} in this directory")
    elif path.is_file():
        file = path
    else:
        file = _hub_file(str(source), config_filename, revision, hub)
    try:
        config = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PipelineFileError(f"{file}: not JSON ({exc})") from None
    if not _is_pipeline_config(config):
        found = sorted(config) if isinstance(config, dict) else type(config).__name__
        raise PipelineFileError(f"{file}: not a processor pipeline (needs a list of steps; found {found})")
    return config, file.parent


def steps_from_config(
    config: Mapping[str, Any], overrides: Mapping[str, Mapping[str, Any]], directory: Path | None, where: str
) -> list[ProcessorStep]:
    """The steps a pipeline config names, built with their saved settings (updated by
    `overrides`, keyed by registry name or class name) and their saved tensors."""
    unused = set(overrides)
    steps = []
    for index, entry in enumerate(config["steps"]):
        step_class, key = _step_class(entry, where, index)
        settings = {**(entry.get("config") or {}), **overrides.get(key, {})}
        unused.discard(key)
        step = _build(step_class, settings, where, key)
        if entry.get("state_file"):
            if directory is None:
                raise PipelineFileError(
                    f"{where}: step {index} ({key}) names {entry['state_file']}, with no directory"
                )
            step.load_state_dict(_read_state(directory, entry["state_file"], where))
        steps.append(step)
    if unused:
        names = [entry.get("registry_name") or entry["class"].rsplit(".", 1)[-1] for entry in config["steps"]]
        raise KeyError(f"{where}: overrides for {sorted(unused)} match no step (steps: {', '.join(names)})")
    return steps


def _step_class(entry: Mapping[str, Any], where: str, index: int) -> tuple[type, str]:
    if "registry_name" in entry:
        name = entry["registry_name"]
        try:
            return ProcessorStepRegistry.get(name), name
        except StepNotRegisteredError as exc:
            raise StepNotRegisteredError(f"{where}: step {index}: {exc}") from None
    path = entry["class"]
    module, _, class_name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), class_name), class_name
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f"{where}: step {index} names class {path}, which does not import ({exc})"
        ) from None


def _build(step_class: type, settings: dict[str, Any], where: str, key: str) -> ProcessorStep:
    try:
        step = step_class(**settings)
    except Exception as exc:  # a user's step may raise anything on bad settings
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PipelineFileError(f"{where}: step {key} refuses its settings {settings}: {reason}") from None
    if not isinstance(step, ProcessorStep):
        raise PipelineFileError(f"{where}: {key} is a {type(step).__name__}, not a ProcessorStep")
    return step


def _read_state(directory: Path, state_file: str, where: str) -> dict[str, Any]:
    """A step's tensors; only a file inside the pipeline's directory is read."""
    named = f"{state_file} (named in {where})"
    # Normalised, not resolved: a hub snapshot's files are symlinks into the cache's blobs.
    state_path = Path(os.path.normpath(directory / state_file))
    if not state_path.is_relative_to(Path(os.path.normpath(directory))):
        raise PipelineFileError(f"{named} lies outside the pipeline's directory; refusing to read it")
    if not state_path.is_file():
        raise PipelineFileError(f"{named} is missing")
    try:
        return load_file(state_path)
    except (SafetensorError, OSError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PipelineFileError(f"{named} is not a readable safetensors file ({first_line})") from None


def _hub_file(repo_id: str, config_filename: str, revision: str | None, hub: HubOptions) -> Path:
    from lerobot.configs.hub import REPO_ID, snapshot

    if not REPO_ID.match(repo_id):
        raise FileNotFoundError(f"{repo_id}: no such directory or file, and not a hub repo id")
    directory = snapshot(
        repo_id,
        flag="from_pretrained",
        what="processor pipeline",
        local_hint="pass a local directory",
        revision=revision,
        patterns=[config_filename, "*.safetensors"],
        hub=hub,
    )
    return directory / config_filename


def _is_pipeline_config(config: Any) -> bool:
    steps = config.get("steps") if isinstance(config, dict) else None
    return isinstance(steps, list) and all(
        isinstance(s, dict) and ("registry_name" in s or "class" in s) for s in steps
    )
