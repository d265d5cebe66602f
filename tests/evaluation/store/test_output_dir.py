"""The output directory: never written over silently, one run at a time, clear one-line errors."""

import json
import re
import subprocess
import sys
import textwrap

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.evaluation.store.output_dir import RunOutput, claimed_output_dir
from lerobot.utils.errors import ConfigError

FLAGS = ["--policy.type=random", "--env.type=metaworld", "--env.obs_type=state"]


def claim(out, *flags: str) -> None:
    cfg = parse_config(EvalPipelineConfig, [*FLAGS, f"--output_dir={out}", *flags])
    with claimed_output_dir(RunOutput.of(cfg)):
        pass


def test_a_directory_with_only_an_eval_info_is_not_written_over(tmp_path):
    (tmp_path / "eval_info.json").write_text(json.dumps({"aggregated": {"pc_success": 80.0}}))
    with pytest.raises(
        ConfigError, match=r"holds results of an earlier run; pass --eval.resume=true .*--overwrite=true"
    ):
        claim(tmp_path)
    with pytest.raises(ConfigError, match="has no run_config.json, so it was not written by lerobot-eval"):
        claim(tmp_path, "--eval.resume=true")
    assert json.loads((tmp_path / "eval_info.json").read_text()) == {"aggregated": {"pc_success": 80.0}}


def test_overwrite_replaces_an_earlier_run(tmp_path):
    claim(tmp_path)
    (tmp_path / "episodes.jsonl").write_text("{}\n")
    (tmp_path / "videos" / "push-v3_0").mkdir(parents=True)
    (tmp_path / "notes.txt").write_text("mine")
    claim(tmp_path, "--overwrite=true")
    assert not (tmp_path / "episodes.jsonl").exists() and not (tmp_path / "videos").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"  # only our files go
    assert (tmp_path / "run_config.json").exists()
    with pytest.raises(ConfigError, match="--eval.resume=true and --overwrite=true: choose one"):
        claim(tmp_path, "--overwrite=true", "--eval.resume=true")


def test_a_corrupt_run_config_stops_a_resume_in_one_line(tmp_path):
    claim(tmp_path)
    (tmp_path / "run_config.json").write_text('{"env": ')
    with pytest.raises(ConfigError, match=r"^--eval.resume=true: .*run_config.json is not valid JSON") as err:
        claim(tmp_path, "--eval.resume=true")
    assert "\n" not in str(err.value)


def test_one_run_per_output_directory(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from lerobot.utils.dir_lock import locked_dir
                with locked_dir({str(tmp_path)!r}, "--output_dir"):
                    print("locked", flush=True)
                    time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=rf"in use by another run \(pid {holder.pid}\)"):
            claim(tmp_path, "--eval.resume=true")
    finally:
        holder.kill()
        holder.wait()
    claim(tmp_path, "--eval.resume=true")  # the holder died: its lock went with it


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("a_file", "is a file; give a directory"),
        ("/proc/lerobot-test/run", "cannot create it"),
    ],
)
def test_unusable_output_directories_fail_in_one_line(tmp_path, where, message):
    out = tmp_path / where if not where.startswith("/") else where
    if where == "a_file":
        out.write_text("")
    with pytest.raises(ConfigError, match=f"^--output_dir={out}: {message}"):
        claim(out)


def test_a_resume_may_change_what_cannot_change_results_and_nothing_else(tmp_path):
    claim(tmp_path)
    claim(tmp_path, "--eval.resume=true", "--env.max_parallel_tasks=2", "--eval.batch_size=3")
    with pytest.raises(ConfigError, match=r"--env.task: was 'push-v3', now 'reach-v3'"):
        claim(tmp_path, "--eval.resume=true", "--env.task=reach-v3")


@pytest.mark.parametrize("name", [".lerobot.lock", "videos", "eval_info.json", "report.html"])
def test_links_in_the_output_directory_are_refused_never_followed(tmp_path, name):
    """A link planted where a run writes would send the lock's pid, videos or results
    outside the directory; --overwrite=true would keep the link."""
    target = tmp_path / "elsewhere"
    target.mkdir() if name == "videos" else target.write_text("precious")
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(target)
    for flags in ([], ["--overwrite=true"]):
        with pytest.raises(
            ConfigError, match=rf"^--output_dir={out}: {re.escape(name)} there is a symbolic link"
        ):
            claim(out, *flags)
    assert target.is_dir() if name == "videos" else target.read_text() == "precious"
    assert (out / name).is_symlink()
