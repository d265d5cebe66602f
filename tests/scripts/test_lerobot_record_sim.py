"""`lerobot-record-sim` stopped part-way keeps every finished episode, and `--resume=true`
completes the recording into the dataset an uninterrupted run records.

The real command runs Meta-World's reach-v3 with its scripted expert, through a policy plugin
that stops at a given step of a given episode and waits there (saying so on stderr) until it is
signalled: the signal then lands mid-episode whatever the machine's load, with no sleep.
"""

import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from lerobot.configs.policies import PreTrainedConfig
from lerobot.datasets.reader import load_episodes
from lerobot.datasets.recording_log import RecordingLog
from lerobot.scripts import lerobot_record_sim
from tests.datasets.conftest import CAMERA, dataset_files
from tests.datasets.test_writer import lerobot_loads
from tests.plugin_packages import write_package

SRC = Path(__file__).resolve().parents[2] / "src"
SEED = 1000
FLAGS = (
    "--env.type=metaworld",
    "--env.task=reach-v3",
    "--env.episode_length=8",
    "--env.observation_height=64",
    "--env.observation_width=64",
    "--policy.type=paused_metaworld_expert",
    "--n_episodes=4",
    f"--seed={SEED}",
)
PAUSED_AT = (SEED + 2, 3)
"""Episode 2 (seed + 2) stops before its step 3: two episodes are kept by then."""
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)

# Real simulator runs; the stopped recordings are made once, so their tests share a worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("record_sim_stops")]

PAUSED_EXPERT_CONFIG = """
from dataclasses import dataclass

from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.metaworld_expert.configuration_metaworld_expert import MetaworldExpertConfig


@PreTrainedConfig.register_subclass("paused_metaworld_expert")
@dataclass
class PausedExpertConfig(MetaworldExpertConfig):
    \"\"\"Meta-World's expert, stopping where $PAUSE_AT (`<seed>:<step>`) says until a signal.\"\"\"
"""

PAUSED_EXPERT_MODEL = """
import os
import signal
import sys

from lerobot.policies.metaworld_expert.modeling_metaworld_expert import MetaworldExpertPolicy
from lerobot_policy_paused_expert.configuration_paused_expert import PausedExpertConfig


class PausedExpertPolicy(MetaworldExpertPolicy):
    config_class = PausedExpertConfig
    name = "paused_metaworld_expert"

    def __init__(self, config):
        super().__init__(config)
        pause = os.environ.get("PAUSE_AT")
        self.pause_at = tuple(map(int, pause.split(":"))) if pause else None
        self.seed, self.step = None, 0

    def reset(self, env_ids=None, seeds=None):
        self.seed, self.step = (seeds[0] if seeds else None), 0

    def select_action(self, batch):
        if (self.seed, self.step) == self.pause_at:
            print(f"paused at seed {self.seed} step {self.step}", file=sys.stderr, flush=True)
            while True:
                signal.pause()
        self.step += 1
        return super().select_action(batch)
"""


def write_paused_expert(site: Path) -> Path:
    write_package(site, "lerobot_policy_paused_expert", "from . import configuration_paused_expert  # noqa\n")
    package = site / "lerobot_policy_paused_expert"
    (package / "configuration_paused_expert.py").write_text(PAUSED_EXPERT_CONFIG)
    (package / "modeling_paused_expert.py").write_text(PAUSED_EXPERT_MODEL)
    return site


@pytest.fixture(scope="module")
def paused_expert(tmp_path_factory):
    """The plugin's folder, importable in this process (for the in-process runs) and registered
    as `--policy.type=paused_metaworld_expert` for this module's tests only."""
    site = write_paused_expert(tmp_path_factory.mktemp("site"))
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))
        importlib.import_module("lerobot_policy_paused_expert")
        yield site
    PreTrainedConfig._choice_registry.pop("paused_metaworld_expert", None)
    for module in [m for m in sys.modules if m.startswith("lerobot_policy_paused_expert")]:
        sys.modules.pop(module)


@pytest.fixture(scope="module")
def uninterrupted(paused_expert, tmp_path_factory):
    """The 4-episode recording nothing stops: what every stopped-and-resumed one must equal."""
    root = tmp_path_factory.mktemp("uninterrupted") / "ds"
    assert lerobot_record_sim.main([*FLAGS, f"--root={root}"]) == 0
    return root


def start_recording(root: Path, site: Path) -> subprocess.Popen:
    """A real lerobot-record-sim process, which pauses mid-episode 2 (PAUSED_AT)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(SRC)]),
        "PAUSE_AT": ":".join(map(str, PAUSED_AT)),
    }
    command = [sys.executable, "-m", "lerobot.scripts.lerobot_record_sim", *FLAGS, f"--root={root}"]
    return subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)


def kept_until_paused(process: subprocess.Popen) -> list[int]:
    """The episodes the process logged as kept before it paused (it logs after each commit)."""
    kept = []
    for line in process.stderr:
        if found := re.search(r"episode (\d+): \w+ after \d+ steps \(kept\)", line):
            kept.append(int(found[1]))
        if "paused at" in line:
            return kept
    raise AssertionError(f"lerobot-record-sim ended (exit {process.wait()}) before it paused")


@dataclass(frozen=True)
class Stopped:
    root: Path
    exit_code: int
    stderr_tail: str


@pytest.fixture(scope="module")
def stopped(paused_expert, tmp_path_factory) -> dict[signal.Signals, Stopped]:
    """Three real recordings of 4 episodes, each paused mid-episode 2 once episodes 0 and 1 were
    logged as kept, then sent SIGINT, SIGTERM or SIGKILL (run side by side)."""
    base = tmp_path_factory.mktemp("stopped")
    processes = {signum: start_recording(base / signum.name, paused_expert) for signum in STOPS}
    results = {}
    for signum, process in processes.items():
        assert kept_until_paused(process) == [0, 1]
        process.send_signal(signum)
        _, rest = process.communicate(timeout=300)
        results[signum] = Stopped(base / signum.name, process.returncode, rest)
    return results


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_stop_signal_ends_the_recording_with_one_line_and_128_plus_its_number(stopped, signum):
    run = stopped[signum]
    assert run.exit_code == 128 + signum
    assert "Traceback" not in run.stderr_tail
    assert run.stderr_tail.strip().splitlines()[-1] == (
        f"lerobot-record-sim: stopped by {signum.name}; kept 2 episodes in {run.root}; "
        "the same command with --resume=true continues it"
    )


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_a_stopped_recording_holds_exactly_its_finished_episodes(stopped, uninterrupted, tmp_path, signum):
    frames = load_episodes(stopped[signum].root, cache_dir=tmp_path / "cache")

    reference = load_episodes(uninterrupted, episodes=[0, 1], cache_dir=tmp_path / "reference_cache")
    assert frames.episode_lengths.tolist() == reference.episode_lengths.tolist() == [8, 8]
    for key, values in reference.vectors.items():
        assert frames.vectors[key].tolist() == values.tolist(), key
    rows = np.arange(frames.n_frames)
    assert frames.camera_frames(CAMERA, rows).tolist() == reference.camera_frames(CAMERA, rows).tolist()
    assert RecordingLog.read(stopped[signum].root, 2).seeds() == [SEED, SEED + 1]


def test_lerobot_loads_every_stopped_recording(stopped):
    roots = [run.root for run in stopped.values()]

    loaded = lerobot_loads(roots)

    for root in roots:
        assert loaded[str(root)]["episodes"] == 2, root.name
        assert loaded[str(root)]["episode_index"] == [0] * 8 + [1] * 8


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_resume_completes_a_stopped_recording_into_the_uninterrupted_dataset(
    stopped, uninterrupted, tmp_path, signum
):
    root = tmp_path / "ds"
    shutil.copytree(stopped[signum].root, root)

    assert lerobot_record_sim.main([*FLAGS, f"--root={root}", "--resume=true"]) == 0

    # Parquet tables, JSON and decoded video frames, file by file; the log's settings differ
    # (--resume), its rollouts and seeds do not.
    assert dataset_files(root) | {"meta/recording.json": None} == (
        dataset_files(uninterrupted) | {"meta/recording.json": None}
    )
    assert RecordingLog.read(root, 4).rollouts == RecordingLog.read(uninterrupted, 4).rollouts
    assert RecordingLog.read(root, 4).seeds() == [SEED + e for e in range(4)]
    assert not (root / ".recording").exists()


def test_resuming_a_finished_recording_rolls_nothing_out(uninterrupted, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(uninterrupted, root)
    before = dataset_files(root)

    assert lerobot_record_sim.main([*FLAGS, f"--root={root}", "--resume=true"]) == 0

    assert dataset_files(root) | {"meta/recording.json": None} == before | {"meta/recording.json": None}
    assert RecordingLog.read(root, 4).rollouts == RecordingLog.read(uninterrupted, 4).rollouts
