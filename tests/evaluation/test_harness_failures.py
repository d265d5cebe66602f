"""Our failures are not the policy's: episodes the harness failed are left out of the rates,
the run says it is incomplete and exits 3, and a resume re-runs exactly those episodes."""

import functools
import json
import os
from dataclasses import dataclass, fields

import gymnasium as gym

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.envs.metaworld import MetaworldEnvConfig
from lerobot.evaluation.evaluate import evaluate
from lerobot.evaluation.results import RunResult
from lerobot.scripts import lerobot_eval
from lerobot.utils.errors import EXIT_INCOMPLETE

N_EPISODES = 4
FLAGS = [
    "--policy.type=metaworld_expert",
    "--env.type=metaworld",
    "--env.task=reach-v3",
    "--env.obs_type=state",
    "--env.episode_length=150",
    f"--eval.n_episodes={N_EPISODES}",
    "--eval.batch_size=1",
    "--eval.max_episodes_rendered=0",
    "--eval.max_episode_retries=1",
    "--seed=100",
]


class CrashWhileMarked(gym.Wrapper):
    """Meta-World whose reset for one seed raises while a marker file exists (a broken simulator)."""

    def __init__(self, make_env, seed: int, marker: str):
        super().__init__(make_env())
        self.crash_seed, self.marker = seed, marker

    def reset(self, *, seed=None, options=None):
        if seed == self.crash_seed and os.path.exists(self.marker):
            raise RuntimeError("simulator failed to load its scene")
        return self.env.reset(seed=seed, options=options)


@dataclass
class CrashingMetaworld(MetaworldEnvConfig):
    crash_seed: int = -1
    marker: str = ""

    def env_factory(self, task_name: str):
        return functools.partial(
            CrashWhileMarked, super().env_factory(task_name), self.crash_seed, self.marker
        )


def config(out, marker, *flags: str) -> EvalPipelineConfig:
    cfg = parse_config(EvalPipelineConfig, [*FLAGS, f"--output_dir={out}", *flags])
    settings = {f.name: getattr(cfg.env, f.name) for f in fields(MetaworldEnvConfig)}
    cfg.env = CrashingMetaworld(**settings, crash_seed=102, marker=str(marker))
    return cfg


def test_a_harness_failure_is_not_scored_and_a_resume_reruns_it(tmp_path, register_env_type, caplog):
    register_env_type("metaworld_crashing", CrashingMetaworld)
    out, marker = tmp_path / "run", tmp_path / "broken"
    marker.touch()
    caplog.set_level("INFO", logger="lerobot")
    run = evaluate(config(out, marker))

    info = json.loads((out / "eval_info.json").read_text())
    [failed] = [e for e in info["per_episode"] if e["failure_reason"]]
    assert failed["episode_index"] == 2 and "simulator failed to load its scene" in failed["failure_reason"]
    assert info["complete"] is False and info["n_episodes_failed"] == 1
    for block in (info["overall"], info["per_task"][0]["metrics"], info["per_group"]["reach-v3"]):
        assert block["n_episodes"] == N_EPISODES - 1 and block["n_episodes_failed"] == 1
        assert block["pc_success"] == 100.0  # the expert's three real episodes, not 75%
    assert len(info["per_task"][0]["metrics"]["successes"]) == N_EPISODES - 1
    assert "failed because of the evaluation harness" in (out / "report.html").read_text()
    assert run.n_episodes_failed == 1 and not run.complete

    logged = [r.getMessage() for r in caplog.records if "success (95% CI" in r.getMessage()]
    assert logged and "over 3 episodes (4 run now, 1 failed for the harness and left out)" in logged[-1]

    marker.unlink()  # the simulator is fixed
    resumed = evaluate(config(out, marker, "--eval.resume=true"))
    assert resumed.complete and resumed.n_episodes_failed == 0
    assert resumed.overall.n_episodes == N_EPISODES and resumed.overall.pc_success == 100.0
    lines = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [line["episode_index"] for line in lines] == [0, 1, 2, 3, 2]  # only episode 2 ran again


def test_lerobot_eval_exits_3_when_episodes_failed_for_good(monkeypatch, tmp_path, capsys):
    """The exit code itself (the failing run is the test above)."""
    from lerobot.evaluation.results import EpisodeResult, TaskResult

    episodes = (
        EpisodeResult(0, 0, True, True, 1.0, 1.0, 5, 0.1),
        EpisodeResult.failed(1, 1, "env 0 failed during reset (died)", retries=2),
    )
    run = RunResult.of([TaskResult("g", 0, "t", "", episodes, 1.0)], 1.0)
    from lerobot.evaluation import evaluate as evaluate_module

    monkeypatch.setattr(evaluate_module, "evaluate", lambda cfg: run)
    code = lerobot_eval.main([*FLAGS, f"--output_dir={tmp_path}"])
    assert code == EXIT_INCOMPLETE == 3
    assert "1 episodes failed for good because of the harness" in capsys.readouterr().err


def test_when_every_episode_failed_the_log_says_so_not_to_check_the_shard(monkeypatch, tmp_path, capsys):
    from lerobot.evaluation.results import EpisodeResult, TaskResult

    episodes = (EpisodeResult.failed(0, 0, "env 0 failed during reset (died)", retries=2),)
    run = RunResult.of([TaskResult("g", 0, "t", "", episodes, 1.0)], 1.0)
    from lerobot.evaluation import evaluate as evaluate_module

    monkeypatch.setattr(evaluate_module, "evaluate", lambda cfg: run)
    assert lerobot_eval.main([*FLAGS, f"--output_dir={tmp_path}"]) == EXIT_INCOMPLETE
    messages = capsys.readouterr().err
    assert "all 1 failed for the harness" in messages and "--eval.shard" not in messages


def test_an_outage_that_stops_the_run_exits_3_not_2(monkeypatch, tmp_path, capsys):
    """A policy server lost mid-run is the harness's failure, not bad input (exit 2)."""
    from lerobot.evaluation import evaluate as evaluate_module
    from lerobot.utils.errors import PolicyServerLostError

    def lost(cfg):
        raise PolicyServerLostError("--policy.host=ws://127.0.0.1:1: the policy server did not come back")

    monkeypatch.setattr(evaluate_module, "evaluate", lost)
    assert lerobot_eval.main([*FLAGS, f"--output_dir={tmp_path}"]) == EXIT_INCOMPLETE
    assert capsys.readouterr().err.strip().endswith("the policy server did not come back")
