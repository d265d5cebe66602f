"""Worker processes and the user's main script: a script that builds envs at its top level
(no `if __name__ == "__main__":` guard, as scripts written for LeRobot's forking envs often
are) must not build them again in every worker, and envs made by a factory the script defines
must still reach their workers."""

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from lerobot.envs.workers import refers_to_main

REPO = Path(__file__).resolve().parents[2]


def run_script(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_unguarded_script_makes_lerobots_async_envs_once(tmp_path):
    done = run_script(
        tmp_path,
        """
        from lerobot.envs.factory import make_env, make_env_config

        print("script body ran")
        cfg = make_env_config("metaworld", task="push-v3", obs_type="state")
        suites = make_env(cfg, n_envs=2, use_async_envs=True)  # {suite: {task id: vector env}}
        (vec,) = [env for tasks in suites.values() for env in tasks.values()]
        observation, _ = vec.reset(seed=[0, 1])
        print("state", observation["agent_pos"].shape)
        vec.close()
        """,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["script body ran", "state (2, 39)"]  # once, not per worker


def test_envs_from_a_factory_the_script_defines_still_start(tmp_path):
    done = run_script(
        tmp_path,
        """
        from lerobot.envs.vector import LazyVectorEnv
        from tests.fakes import FakeEnv, fake_spaces


        def make_fake():  # pickled by reference to this script: its workers import it
            return FakeEnv(task="from-the-script")


        if __name__ == "__main__":
            vec = LazyVectorEnv([make_fake] * 2, *fake_spaces(), use_async=True)
            vec.reset(seed=[0, 1])
            print(vec.call("task"))
            vec.close()
        """,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "('from-the-script', 'from-the-script')"


def test_what_refers_to_the_main_script(monkeypatch):
    assert refers_to_main([threading.Lock()]) is True  # not picklable: counted as needing it
    assert refers_to_main([Path, {"task": "push-v3"}]) is False
    defined_in_main = type("Local", (), {"__module__": "__main__", "__qualname__": "Local"})
    monkeypatch.setattr(sys.modules["__main__"], "Local", defined_in_main, raising=False)
    assert refers_to_main([defined_in_main]) is True
