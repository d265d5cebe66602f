"""`pytest -n 2 --dist loadgroup` (README's test command) keeps each `xdist_group` on one worker.

Tests that must not run beside each other rely on it: the Ray tests (one Ray instance per
machine) and LIBERO-PRO's scenes (built once per worker). A pytest release that stops honouring
pytest-xdist's group suffix spreads a group over both workers without a word, so this runs a
small grouped suite the way README runs ours.
"""

import subprocess
import sys


def test_a_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.xdist_group('one')\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_member(i):\n"
        "    with open(os.path.join(os.environ['GROUP_OUT'], f'worker_{i}'), 'w') as out:\n"
        "        out.write(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        env={"GROUP_OUT": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    workers = {path.read_text() for path in tmp_path.glob("worker_*")}
    assert len(list(tmp_path.glob("worker_*"))) == 6
    assert len(workers) == 1, workers
