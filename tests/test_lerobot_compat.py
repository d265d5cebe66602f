"""A script written as a LeRobot 0.6.1 user writes one runs here unchanged.

`run_lerobot_user_script` is such a script, in LeRobot's module paths, function names, argument
names and order (read from LeRobot 0.6.1's source): it loads a checkpoint LeRobot saved, builds
envs and processors with the factories, steps the env by hand, evaluates with `eval_policy_all`,
with `eval_policy` on a plain gymnasium SyncVectorEnv and with `rollout`, and ends with
`eval_main`. The only concessions to a test's budget are small sizes (96x96 images without shadows, 4-step
episodes), which are our extra `--env.*` settings. Real Meta-World, real ACT weights.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from pathlib import Path

import pytest

from tests.policies.checkpoints import materialize

# What LeRobot 0.6.1's own source declares (scripts/make_lerobot_signatures.py).
SIGNATURES = json.loads((Path(__file__).parent / "fixtures" / "lerobot_0_6_1_signatures.json").read_text())

SMALL = {"observation_height": 96, "observation_width": 96, "episode_length": 4, "fast_render": True}


def run_lerobot_user_script(checkpoint: Path, output_dir: Path) -> dict:
    import gymnasium as gym

    from lerobot.configs.default import EvalConfig
    from lerobot.configs.eval import EvalPipelineConfig
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.factory import make_env, make_env_config, make_env_pre_post_processors
    from lerobot.envs.metaworld import MetaworldEnv
    from lerobot.envs.utils import add_envs_task, close_envs, preprocess_observation
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import (
        get_policy_class,
        make_policy,
        make_policy_config,
        make_pre_post_processors,
    )
    from lerobot.scripts.lerobot_eval import eval_main, eval_policy, eval_policy_all, rollout
    from lerobot.utils.random_utils import set_seed
    from lerobot.utils.utils import init_logging

    init_logging()
    set_seed(1000)
    found: dict = {}

    env_cfg = make_env_config("metaworld", task="metaworld-push-v3", **SMALL)
    policy_cfg = PreTrainedConfig.from_pretrained(str(checkpoint))
    policy_cfg.pretrained_path = checkpoint
    policy_cfg.device = "cpu"
    policy = make_policy(cfg=policy_cfg, env_cfg=env_cfg, rename_map={})
    found["policy_class"] = get_policy_class("act") is type(policy)
    found["fresh_config"] = type(make_policy_config("act", chunk_size=10, n_action_steps=5)).__name__
    preprocessor, postprocessor = make_pre_post_processors(
        policy_cfg=policy_cfg,
        pretrained_path=policy_cfg.pretrained_path,
        preprocessor_overrides={
            "device_processor": {"device": "cpu"},
            "rename_observations_processor": {"rename_map": {}},
        },
    )
    env_preprocessor, env_postprocessor = make_env_pre_post_processors(env_cfg=env_cfg, policy_cfg=policy_cfg)

    # One step by hand, the way LeRobot's rollout() does it.
    envs = make_env(env_cfg, n_envs=2, use_async_envs=False)
    env = envs["metaworld-push-v3"][0]
    observation, _ = env.reset(seed=[0, 1])
    observation = preprocess_observation(observation)
    observation = add_envs_task(env, observation)
    observation = env_preprocessor(observation)
    observation = preprocessor(observation)
    action = postprocessor(policy.select_action(observation))
    action = env_postprocessor({"action": action})["action"]
    found["manual_step"] = env.step(action.to("cpu").numpy())[1].shape
    found["task"] = observation["task"]

    found["all"] = eval_policy_all(
        envs=envs,
        policy=policy,
        env_preprocessor=env_preprocessor,
        env_postprocessor=env_postprocessor,
        preprocessor=preprocessor,
        postprocessor=postprocessor,
        n_episodes=2,
        max_episodes_rendered=0,
        videos_dir=None,
        return_episode_data=False,
        start_seed=1000,
        max_parallel_tasks=1,
    )
    close_envs(envs)

    # The first line of LeRobot's README for loading a policy.
    readme_policy = ACTPolicy.from_pretrained(checkpoint)
    found["readme_policy"] = (type(readme_policy).__name__, readme_policy.training)
    sync = gym.vector.SyncVectorEnv(
        [
            lambda: MetaworldEnv(task="metaworld-push-v3", obs_type="pixels_agent_pos", **SMALL)
            for _ in range(2)
        ]
    )
    found["single"] = eval_policy(
        sync,
        readme_policy,
        env_preprocessor,
        env_postprocessor,
        preprocessor,
        postprocessor,
        n_episodes=2,
        max_episodes_rendered=1,
        videos_dir=output_dir / "videos",
        start_seed=1000,
    )
    data = rollout(
        env=sync,
        policy=policy,
        env_preprocessor=env_preprocessor,
        env_postprocessor=env_postprocessor,
        preprocessor=preprocessor,
        postprocessor=postprocessor,
        seeds=[1000, 1001],
        return_observations=True,
    )
    found["rollout"] = {key: tuple(value.shape) for key, value in data.items() if key != "observation"}
    found["rollout_observation"] = sorted(data["observation"])
    sync.close()

    eval_main(
        EvalPipelineConfig(
            env=env_cfg,
            eval=EvalConfig(n_episodes=1, batch_size=1, max_episodes_rendered=0),
            policy=policy_cfg,
            output_dir=output_dir / "eval_main",
        )
    )
    found["eval_main"] = json.loads((output_dir / "eval_main" / "eval_info.json").read_text())
    return found


def same_leading_parameters(ours: list[inspect.Parameter], theirs: list[dict]) -> list[inspect.Parameter]:
    """Assert that ours begin with LeRobot's named parameters: same names, order and kinds (ours
    may also take by keyword or position what LeRobot takes one way), same defaults where
    LeRobot's is a literal (ours may give one where LeRobot requires the argument), and **kwargs
    where LeRobot has them. Returns our named parameters after LeRobot's."""
    named = [p for p in ours if p.kind is not p.VAR_KEYWORD]
    expected_named = [p for p in theirs if p["kind"] != "VAR_KEYWORD"]
    assert len(named) >= len(expected_named), f"{[p.name for p in named]}: LeRobot has {expected_named}"
    for position, (actual, expected) in enumerate(zip(named, expected_named, strict=False)):
        assert actual.name == expected["name"], f"parameter {position}: {actual.name} != {expected['name']}"
        allowed = {expected["kind"], "POSITIONAL_OR_KEYWORD"}
        assert actual.kind.name in allowed, f"{actual.name}: {actual.kind.name}, LeRobot {expected['kind']}"
        if is_literal(expected["default"]):
            assert repr(actual.default) == expected["default"], f"{actual.name}: default {actual.default!r}"
    if any(p["kind"] == "VAR_KEYWORD" for p in theirs):
        assert any(p.kind is p.VAR_KEYWORD for p in ours), "LeRobot takes **kwargs here"
    return named[len(expected_named) :]


def is_literal(source: str | None) -> bool:
    """Whether a recorded default is a literal (None, a number, a string...), not an expression."""
    if source is None:
        return False
    try:
        ast.literal_eval(source)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("qualified_name", sorted(SIGNATURES["signatures"]))
def test_public_functions_accept_every_call_lerobots_accept(qualified_name):
    """Same module path, parameter names, order, kinds and defaults; ours may add keyword-only
    parameters after LeRobot's, and may give a default where LeRobot requires the argument."""
    module, _, name = qualified_name.rpartition(".")
    ours = list(
        inspect.signature(inspect.unwrap(getattr(importlib.import_module(module), name))).parameters.values()
    )
    extra = same_leading_parameters(ours, SIGNATURES["signatures"][qualified_name])
    assert all(p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in extra), extra


POLICY_METHODS = [
    (policy_type, method)
    for policy_type, recorded in SIGNATURES["policy_methods"].items()
    for method in recorded["methods"]
]


@pytest.mark.parametrize(("policy_type", "method"), POLICY_METHODS)
def test_policy_methods_accept_every_call_lerobots_accept(policy_type, method):
    """Each public method of LeRobot's policy classes (inherited ones included), on our class of
    the same module path and name: a classmethod where LeRobot's is one, and LeRobot's
    parameters as in the function test. Ours may add parameters after LeRobot's when they have
    defaults (row resets' `env_ids` and `seeds`, π's `noise` in select_action): where LeRobot's
    method takes no *args, every call it accepts binds to the same parameters here."""
    recorded = SIGNATURES["policy_methods"][policy_type]
    module, _, class_name = recorded["class"].rpartition(".")
    policy_class = getattr(importlib.import_module(module), class_name)
    theirs = recorded["methods"][method]
    attribute = getattr(policy_class, method)
    assert not getattr(attribute, "__isabstractmethod__", False), f"{class_name}.{method} is abstract"
    is_classmethod = inspect.ismethod(attribute)  # bound to the class
    assert is_classmethod == (theirs["binding"] == "classmethod"), f"LeRobot's is a {theirs['binding']}"
    ours = list(inspect.signature(inspect.unwrap(attribute)).parameters.values())
    if not is_classmethod:
        ours = ours[1:]  # self
    extra = same_leading_parameters(ours, theirs["parameters"])
    takes_args = any(p["kind"] == "VAR_POSITIONAL" for p in theirs["parameters"])
    assert all(p.default is not p.empty and (p.kind is p.KEYWORD_ONLY or not takes_args) for p in extra), (
        extra
    )


@pytest.mark.slow
def test_a_lerobot_user_script_runs_unchanged(tmp_path, one_torch_thread):
    checkpoint = materialize("act", tmp_path / "act")

    found = run_lerobot_user_script(checkpoint, tmp_path / "out")

    assert found["policy_class"] and found["fresh_config"] == "ACTConfig"
    assert found["readme_policy"] == ("ACTPolicy", False)  # loaded, in eval mode
    assert found["manual_step"] == (2,)
    assert found["task"] == ["Push the puck to a goal"] * 2
    # eval_policy_all: LeRobot's per_task / per_group / overall, under the task as written.
    all_tasks = found["all"]
    [task] = all_tasks["per_task"]
    assert (task["task_group"], task["task_id"]) == ("metaworld-push-v3", 0)
    assert set(task["metrics"]) >= {"sum_rewards", "max_rewards", "successes"}
    assert list(all_tasks["per_group"]) == ["metaworld-push-v3"]
    assert {"avg_sum_reward", "avg_max_reward", "pc_success", "n_episodes", "eval_s", "eval_ep_s"} <= set(
        all_tasks["overall"]
    )
    # eval_policy on a plain SyncVectorEnv: LeRobot's keys, and each episode on its own seed,
    # so the same episodes as through make_env.
    single = found["single"]
    assert [e["seed"] for e in single["per_episode"]] == [1000, 1001]
    assert all(
        {"episode_ix", "sum_reward", "max_reward", "success", "seed"} <= set(e) for e in single["per_episode"]
    )
    assert {"avg_sum_reward", "avg_max_reward", "pc_success", "eval_s", "eval_ep_s"} <= set(
        single["aggregated"]
    )
    # ...with the policy ACTPolicy.from_pretrained loaded: the same episodes as make_policy's.
    assert [e["sum_reward"] for e in single["per_episode"]] == task["metrics"]["sum_rewards"]
    assert len(single["video_paths"]) == 1 and Path(single["video_paths"][0]).stat().st_size > 0
    # rollout: LeRobot's (batch, steps, ...) tensors; observations have one step more.
    steps = found["rollout"]["done"][1]
    assert found["rollout"] == {
        "action": (2, steps, 4),
        "reward": (2, steps),
        "success": (2, steps),
        "done": (2, steps),
    }
    assert steps == SMALL["episode_length"]
    assert found["rollout_observation"] == [
        "observation.environment_state",
        "observation.image",
        "observation.state",
    ]
    assert found["eval_main"]["overall"]["n_episodes"] == 1
