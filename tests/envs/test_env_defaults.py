"""Every default of LeRobot 0.6.1's env configs and EvalConfig, against ours.

tests/fixtures/lerobot_0_6_1_env_defaults.json is what LeRobot 0.6.1 itself builds for
`--env.type=<type>` alone (scripts/make_lerobot_env_defaults.py). A default that differs here
is listed below with its reason; any other difference, and any new LeRobot field, fails.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from lerobot.configs.default import EvalConfig
from lerobot.configs.types import FeatureType
from lerobot.envs.factory import make_env_config

FIXTURE = Path(__file__).parents[1] / "fixtures" / "lerobot_0_6_1_env_defaults.json"
RECORDED = json.loads(FIXTURE.read_text())

# LeRobot's table of the policy's inputs and outputs; here they come from the env's spaces.
# Compared below through `policy_features()` instead.
FEATURE_TABLES = ("features", "features_map")
DELIBERATE: dict[tuple[str, str], str] = {
    ("metaworld", "task"): (
        "LeRobot's default, metaworld-push-v2, names a Meta-World v2 task; this build runs v3 "
        "(push-v3), as LeRobot's own Meta-World env does for any task"
    ),
    ("metaworld", "episode_length"): (
        "LeRobot's env ignores the field and always runs Meta-World's 500 steps (max_path_length); "
        "here the default says so"
    ),
    ("pusht", "observation_height"): (
        "LeRobot never passes it to gym-pusht, which renders 96x96 observations; here the default "
        "is the size the env renders (LeRobot's 384 is its video size, visualization_*)"
    ),
    ("pusht", "observation_width"): "as observation_height",
    ("libero", "camera_name"): "the same cameras, as a list; LeRobot's comma form is accepted",
    ("libero", "camera_name_mapping"): (
        "LeRobot's None means its default mapping (agentview_image -> image, "
        "robot0_eye_in_hand_image -> image2), which is the default here"
    ),
    ("libero", "is_libero_plus"): "LIBERO-plus is not in this build",
    ("eval", "batch_size"): (
        "0 picks the batch size from the machine's cores and the episodes (LeRobot: 1); "
        "results do not depend on it"
    ),
}
PUSHT_FEATURES = "LeRobot's PushT features say 384x384 images; its env renders 96x96, as this build's"


def encode(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("env_type", sorted(RECORDED["env"]))
def test_env_defaults_are_lerobots_or_listed(env_type):
    ours = make_env_config(env_type)
    differences = []
    for name, theirs in RECORDED["env"][env_type].items():
        if (env_type, name) in DELIBERATE or name in FEATURE_TABLES:
            continue
        if not hasattr(ours, name):
            differences.append(f"{name}: missing here (LeRobot: {theirs!r})")
        elif encode(getattr(ours, name)) != theirs:
            differences.append(f"{name}: {getattr(ours, name)!r} here, {theirs!r} in LeRobot")
    assert not differences, f"--env.type={env_type}: " + "; ".join(differences)


@pytest.mark.parametrize("env_type", sorted(RECORDED["env"]))
def test_policy_inputs_are_those_of_lerobots_feature_table(env_type):
    """LeRobot's `features` mapped by `features_map`, images channel-first: our cameras and
    actions. (States differ by design: LIBERO's is already the 8-d vector LeRobot's processor
    step makes from its raw `robot_state`, and Meta-World and ALOHA also offer the
    `observation.environment_state` their datasets record.)"""
    recorded = RECORDED["env"][env_type]
    theirs = {}
    for key, feature in recorded["features"].items():
        policy_key = recorded["features_map"].get(key)
        if policy_key is None:
            continue
        if feature["type"] not in (FeatureType.VISUAL.value, FeatureType.ACTION.value):
            continue
        shape = feature["shape"]
        if feature["type"] == FeatureType.VISUAL.value:
            shape = [shape[2], shape[0], shape[1]]
        theirs[policy_key] = (feature["type"], shape)
    ours = {
        key: (ft.type.value, list(ft.shape))
        for key, ft in make_env_config(env_type).policy_features().items()
        if ft.type in (FeatureType.VISUAL, FeatureType.ACTION)
    }
    if env_type == "pusht":
        theirs["observation.image"] = (FeatureType.VISUAL.value, [3, 96, 96])  # PUSHT_FEATURES
    assert ours == theirs


def test_eval_defaults_are_lerobots_or_listed():
    ours = EvalConfig()
    for name, theirs in RECORDED["eval"].items():
        if ("eval", name) not in DELIBERATE:
            assert getattr(ours, name) == theirs, name
    assert {f.name for f in dataclasses.fields(EvalConfig)} >= set(RECORDED["eval"])


def test_every_listed_difference_is_still_a_difference():
    """A reason stays only while LeRobot's default and ours differ."""
    for (env_type, name), _reason in DELIBERATE.items():
        theirs = RECORDED["eval" if env_type == "eval" else "env"]
        theirs = theirs[name] if env_type == "eval" else theirs[env_type][name]
        ours = EvalConfig() if env_type == "eval" else make_env_config(env_type)
        assert encode(getattr(ours, name, None)) != theirs, (env_type, name)
