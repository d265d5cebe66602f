"""`--env.type=robomimic`: bad input, the task table against robosuite, step-by-step fidelity with
robosuite's own loop, and seeding through lerobot-eval.

The suite's robosuite is 1.4.0 (LIBERO pins it), which has Lift, PickPlaceCan and
NutAssemblySquare; TwoArmTransport and ToolHang came with 1.4.1, which README's test command
puts in `.venv/robosuite-1.4.1` (`--target`): their tests run there, in a child interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from lerobot.envs.robomimic import RobomimicEnvConfig
from lerobot.envs.robomimic import tasks as robomimic_tasks
from lerobot.envs.robomimic.tasks import TASKS
from lerobot.utils.errors import ConfigError
from tests.envs import eval_runs
from tests.envs.eval_runs import outcomes

REPO = Path(__file__).resolve().parents[2]
ROBOSUITE_141 = Path(sys.prefix) / "robosuite-1.4.1"
"""robosuite 1.4.1, installed beside the suite's 1.4.0 by README's test command."""
INSTALL_141 = "uv pip install -p .venv/bin/python --no-deps --target .venv/robosuite-1.4.1 -r requirements/robomimic.txt"
ONE_ARM = ["lift", "can", "square"]
TWO_RELEASE = ["transport", "tool_hang"]
"""The tasks that need robosuite 1.4.1."""


def robosuite_141_env() -> dict[str, str]:
    """The environment of a child interpreter that imports robosuite 1.4.1 instead of 1.4.0."""
    if not (ROBOSUITE_141 / "robosuite").is_dir():
        pytest.skip(
            f"no robosuite 1.4.1 beside the suite's 1.4.0 (TwoArmTransport, ToolHang): run `{INSTALL_141}`"
        )
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROBOSUITE_141), str(REPO / "src"), str(REPO)])
    return env


def run_under_141(code: str, timeout: int = 600) -> object:
    """Run `code` (which prints one JSON line last) under robosuite 1.4.1; its JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=robosuite_141_env(),
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- bad input, before anything loads ----------------------------------------------------------
def one_line_error(**kwargs) -> str:
    with pytest.raises(ConfigError) as error:
        RobomimicEnvConfig(**kwargs)
    message = str(error.value)
    assert "\n" not in message, message
    return message


def test_an_unknown_task_suggests_one_and_lists_the_five():
    assert one_line_error(task="lfit") == (
        "--env.task='lfit': unknown robomimic task; did you mean 'lift'? "
        "choose from lift, can, square, transport, tool_hang (or all)"
    )


def test_a_camera_the_task_lacks_lists_its_cameras():
    assert one_line_error(task="lift", camera_names="agentview,shouldercamera0") == (
        "--env.camera_names=agentview,shouldercamera0: lift has no camera 'shouldercamera0'; its cameras: "
        "frontview, birdview, agentview, sideview, robot0_robotview, robot0_eye_in_hand"
    )


def test_a_camera_no_task_has_lists_every_camera():
    message = one_line_error(task="lift", camera_names="topview")
    assert message.startswith("--env.camera_names='topview': give distinct names among agentview, birdview")


def test_transport_on_robosuite_140_names_the_release_that_has_it(monkeypatch):
    monkeypatch.setattr(robomimic_tasks, "installed_robosuite", lambda: "1.4.0")
    message = one_line_error(task="lift,transport")
    assert message.startswith(
        "--env.task=transport: robosuite 1.4.0 has no TwoArmTransport (added in robosuite 1.4.1)"
    )
    assert "'robosuite==1.4.1'" in message
    assert RobomimicEnvConfig(task="lift,can,square").task_names == ONE_ARM


def test_a_shaped_reward_where_robosuite_has_none_is_refused(monkeypatch):
    monkeypatch.setattr(robomimic_tasks, "installed_robosuite", lambda: "1.4.1")
    assert one_line_error(task="tool_hang", reward_shaping=True) == (
        "--env.reward_shaping=true: robosuite has no shaped reward for tool_hang (only the sparse success "
        "reward); tasks with one: lift, can, square"
    )


def test_all_is_the_five_tasks_in_robomimics_order(monkeypatch):
    monkeypatch.setattr(robomimic_tasks, "installed_robosuite", lambda: "1.4.1")
    cfg = RobomimicEnvConfig(task="all")
    assert cfg.task_names == ["lift", "can", "square", "transport", "tool_hang"]
    assert list(cfg.task_groups()) == cfg.task_names  # each evaluated under its own name
    assert RobomimicEnvConfig(task="PickPlaceCan, lift,can").task_names == ["can", "lift"]


def test_the_defaults_are_robomimics_image_setting(monkeypatch):
    monkeypatch.setattr(robomimic_tasks, "installed_robosuite", lambda: "1.4.1")
    cfg = RobomimicEnvConfig(task="all")
    assert {name: cfg.max_episode_steps(name) for name in cfg.task_names} == {
        "lift": 400,
        "can": 400,
        "square": 400,
        "transport": 700,
        "tool_hang": 700,
    }
    assert cfg.cameras_of("lift") == {"agentview": (84, 84), "robot0_eye_in_hand": (84, 84)}
    assert cfg.cameras_of("tool_hang") == {"sideview": (240, 240), "robot0_eye_in_hand": (240, 240)}
    assert list(cfg.cameras_of("transport")) == [
        "shouldercamera0",
        "shouldercamera1",
        "robot0_eye_in_hand",
        "robot1_eye_in_hand",
    ]
    assert cfg.terminate_on_success is True and cfg.reward_shaping is False and cfg.fps == 20
    features = cfg.task_policy_features("transport")
    assert features["action"].shape == (14,) and features["observation.state"].shape == (18,)
    assert features["observation.environment_state"].shape == (41,)
    assert features["observation.images.shouldercamera0"].shape == (3, 84, 84)
    assert RobomimicEnvConfig(task="lift", obs_type="state").cameras_of("lift") == {}


CLI_CASES = {
    "unknown task": (["--env.task=lfit"], "--env.task='lfit': unknown robomimic task"),
    "camera": (["--env.camera_names=shouldercamera1"], "lift has no camera 'shouldercamera1'"),
    "obs type": (["--env.obs_type=rgb"], "--env.obs_type"),
    "shaping": (["--env.task=tool_hang", "--env.reward_shaping=true"], "no shaped reward for tool_hang"),
}
HEAVY = ("torch", "numpy", "gymnasium", "robosuite", "mujoco")


def test_bad_input_exits_2_in_one_line_before_torch_or_the_simulator_loads(tmp_path):
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from lerobot.scripts.lerobot_eval import main
        cases = json.loads({json.dumps(json.dumps({k: v[0] for k, v in CLI_CASES.items()}))})
        results = {{}}
        for name, argv in cases.items():
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["--policy.type=random", "--env.type=robomimic", *argv,
                             "--output_dir={tmp_path}/never"])
            results[name] = [code, err.getvalue()]
        results["_loaded"] = [m for m in {HEAVY!r} if m in sys.modules]
        print(json.dumps(results))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True, env=env
    )
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results.pop("_loaded") == []
    for name, (_, expected) in CLI_CASES.items():
        code, stderr = results[name]
        lines = stderr.strip().splitlines()
        assert code == 2, (name, stderr)
        assert len(lines) == 1 and expected in lines[0], (name, stderr)
    assert not (tmp_path / "never").exists()


def test_a_single_arm_action_on_transport_names_the_size_it_takes():
    from lerobot.envs.robomimic.env import RobomimicEnv

    env = RobomimicEnv(task="transport", cameras={})  # no simulator: the size is checked first
    with pytest.raises(ValueError, match=r"transport expects one action of shape \(14,\) \(2 arms x 7\)"):
        env.step(np.zeros(7))


# --- the table and the env against robosuite ----------------------------------------------------
def table_entry(task: str) -> dict:
    spec = TASKS[task]
    return {"state_size": spec.state, "object_size": spec.object_state, "cameras": list(spec.model_cameras)}


def model_facts(task: str) -> dict:
    """What robosuite's own env of `task` says: observation sizes and its model's cameras."""
    from lerobot.envs.robomimic.env import RobomimicEnv
    from lerobot.envs.robosuite_support import import_robosuite

    env = RobomimicEnv(task=task, cameras={})
    kwargs = {**env.make_kwargs(), "has_offscreen_renderer": False}
    sim = import_robosuite().make(TASKS[task].env_name, **kwargs)
    try:
        raw = sim.reset()
        return {
            "state_size": int(sum(np.asarray(raw[key]).size for key in TASKS[task].proprio_keys)),
            "object_size": int(raw["object-state"].size),
            "cameras": list(sim.sim.model.camera_names),
            "action": int(sim.action_spec[0].shape[0]),
        }
    finally:
        sim.close()


@pytest.mark.parametrize("task", ONE_ARM)
def test_the_task_table_is_what_robosuite_says(task):
    facts = model_facts(task)
    assert facts.pop("action") == TASKS[task].action
    assert facts == table_entry(task)


@pytest.mark.slow  # a child interpreter building two robosuite scenes
def test_the_task_table_is_what_robosuite_141_says_for_transport_and_tool_hang():
    facts = run_under_141(
        f"""
        import json
        from tests.envs.test_robomimic import model_facts
        print(json.dumps({{task: model_facts(task) for task in {TWO_RELEASE!r}}}))
        """
    )
    for task in TWO_RELEASE:
        assert facts[task].pop("action") == TASKS[task].action
        assert facts[task] == table_entry(task)


@pytest.mark.parametrize(
    "task", [pytest.param("lift"), pytest.param("can", marks=pytest.mark.slow), "square"]
)
def test_our_env_steps_exactly_as_robosuites_own_loop(task):
    from tests.envs.robomimic_fidelity import FIDELITY_STEPS, check_fidelity

    result = check_fidelity(task)
    assert result["steps"] == FIDELITY_STEPS
    assert all(std > 0 for std in result["image_std"].values())  # rendered scenes, not blank frames
    assert len(set(result["rewards"])) > 1  # the shaped reward moved: a real comparison


@pytest.mark.slow  # ~60 s: Transport renders four cameras, ToolHang two
def test_transport_and_tool_hang_step_exactly_as_robosuite_141s_own_loop():
    results = run_under_141(
        f"""
        import json
        from tests.envs.robomimic_fidelity import check_fidelity
        print(json.dumps([check_fidelity(task) for task in {TWO_RELEASE!r}]))
        """
    )
    assert [r["task"] for r in results] == TWO_RELEASE
    for result in results:
        assert result["robosuite"] == "1.4.1" and result["steps"] == 30
        assert len(result["image_std"]) == len(TASKS[result["task"]].cameras)
        assert all(std > 0 for std in result["image_std"].values())


# --- seeding through lerobot-eval ---------------------------------------------------------------
EVAL_FLAGS = [
    "--policy.type=random",
    "--env.type=robomimic",
    "--env.task=lift",
    "--env.obs_type=state",
    "--env.reward_shaping=true",  # four scenes, four sums of the shaped reward
    "--env.episode_length=6",
    "--eval.n_episodes=4",
    "--eval.max_episodes_rendered=0",
]


def run_eval(out: Path, *extra: str) -> dict:
    return eval_runs.run_eval([*EVAL_FLAGS, *extra], out, n_episodes=4)


@pytest.fixture(scope="module")
def batch_1_run(tmp_path_factory) -> dict:
    return run_eval(tmp_path_factory.mktemp("batch1"), "--eval.batch_size=1")


def test_batch_1_episodes_are_seeded_one_after_another(batch_1_run):
    results = outcomes(batch_1_run)
    assert [(e, seed, steps) for e, seed, _, _, steps in results] == [(e, 1000 + e, 6) for e in range(4)]
    assert len({reward for *_, reward, _ in results}) == 4  # four different scenes
    assert batch_1_run["complete"] is True


def test_batch_2_gives_the_episodes_of_batch_1(batch_1_run, tmp_path):
    assert outcomes(run_eval(tmp_path, "--eval.batch_size=2")) == outcomes(batch_1_run)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # one Ray instance per machine (tests/evaluation/run/test_ray_backend.py)
def test_the_ray_backend_gives_the_episodes_of_batch_1(batch_1_run, tmp_path):
    on_ray = run_eval(tmp_path, "--eval.backend=ray", "--eval.num_workers=1")
    assert outcomes(on_ray) == outcomes(batch_1_run) and on_ray["complete"] is True


def test_the_same_seed_twice_in_one_env_gives_the_same_episode():
    """Hard resets rebuild robosuite's scene; the seed alone decides it, not what ran before."""
    from lerobot.envs.robomimic.env import RobomimicEnv

    env = RobomimicEnv(task="can", cameras={})
    try:
        first, _ = env.reset(seed=3)
        env.step(np.full(7, 0.5))
        env.reset(seed=4)
        again, _ = env.reset(seed=3)
    finally:
        env.close()
    np.testing.assert_array_equal(first["environment_state"], again["environment_state"])
    np.testing.assert_array_equal(first["agent_pos"], again["agent_pos"])
