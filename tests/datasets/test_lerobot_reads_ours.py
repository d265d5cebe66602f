"""LeRobot 0.6.1 reads what `lerobot-record-sim` writes: every frame of a small dataset of each
benchmark, at LeRobotDataset's default tolerance, with each of its decoders that loads; and its
`lerobot-train` trains on one.

Needs LeRobot 0.6.1's scratch environment with its dataset extra and accelerate (`make
lerobot-ref`, found by tests/lerobot_ref.py); without it, or without a benchmark's simulator,
the tests are skipped, saying so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from lerobot.scripts import lerobot_record_sim
from tests.lerobot_ref import NO_LEROBOT_REASON, lerobot_ref_python

LEROBOT_PYTHON = lerobot_ref_python() or ""
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not LEROBOT_PYTHON, reason=NO_LEROBOT_REASON),
    # One worker records the datasets once for all of this module's tests.
    pytest.mark.xdist_group("lerobot_reads_ours"),
]

SMALL = ("--n_episodes=2", "--env.observation_height=64", "--env.observation_width=64")
# benchmark: (its simulator's module, the flags of a small recording). Meta-World's expert ends
# its episodes at success, after 47 and 53 steps at seed 1000: an odd number of frames at 80 fps
# is the length a millisecond timescale cannot hold. The others' frame rates divide a second
# into whole milliseconds; a random policy fills 9 steps.
BENCHMARKS = {
    "metaworld": (
        "metaworld",
        (
            "--env.type=metaworld",
            "--env.task=reach-v3",
            "--policy.type=metaworld_expert",
            "--env.episode_length=60",
        ),
    ),
    "libero": (
        "libero",
        (
            "--env.type=libero",
            "--env.task=libero_spatial",
            "--env.task_ids=[0]",
            "--policy.type=random",
            "--env.episode_length=9",
        ),
    ),
    "pusht": ("gym_pusht", ("--env.type=pusht", "--policy.type=random", "--env.episode_length=9")),
    "aloha": (
        "gym_aloha",
        (
            "--env.type=aloha",
            "--env.task=AlohaInsertion-v0",
            "--policy.type=random",
            "--env.episode_length=9",
        ),
    ),
}
LEROBOT_DECODERS = ("pyav", "torchcodec")

LEROBOT_READS = textwrap.dedent(
    """
    import json, sys

    def first_line(exc):
        return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"

    def read_every_frame(root, backend):
        if backend == "torchcodec":
            try:
                from torchcodec.decoders import VideoDecoder  # noqa: F401
            except Exception as exc:  # installed without FFmpeg's shared libraries
                return {"unavailable": first_line(exc)}
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
        try:
            dataset = LeRobotDataset("local/recorded", root=root, video_backend=backend)
            for index in range(len(dataset)):
                dataset[index]
        except Exception as exc:
            return {"error": first_line(exc)}
        return {"frames": len(dataset)}

    roots, decoders, output = json.loads(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
    results = {name: {d: read_every_frame(root, d) for d in decoders} for name, root in roots.items()}
    with open(output, "w") as f:
        json.dump(results, f)
    """
)


def lerobot_lacks(*modules: str) -> str:
    """The modules LeRobot's environment lacks, comma-separated ('' when it has them all)."""
    probe = (
        "import importlib.util as u, sys; print(','.join(m for m in sys.argv[1:] if u.find_spec(m) is None))"
    )
    done = subprocess.run([LEROBOT_PYTHON, "-c", probe, *modules], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def offline_env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": ""}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """A two-episode dataset of each benchmark whose simulator is installed."""
    missing = lerobot_lacks("datasets", "av")
    if missing:
        pytest.skip(
            f"LeRobot 0.6.1's scratch environment lacks its dataset extra ({missing}): rebuild it with `make lerobot-ref`"
        )
    roots = {}
    for name, (simulator, flags) in BENCHMARKS.items():
        if importlib.util.find_spec(simulator) is None:
            continue
        root = tmp_path_factory.mktemp("datasets") / name
        assert lerobot_record_sim.main([*flags, *SMALL, f"--root={root}"]) == 0
        roots[name] = root
    return roots


@pytest.fixture(scope="module")
def lerobot_reads(recorded, tmp_path_factory) -> dict[str, dict[str, dict]]:
    """What LeRobot's LeRobotDataset made of every frame of each dataset, per decoder: one
    LeRobot process for all of them (importing it takes about 20 s here)."""
    out = tmp_path_factory.mktemp("lerobot_reads")
    roots = json.dumps({name: str(root) for name, root in recorded.items()})
    subprocess.run(
        [LEROBOT_PYTHON, "-c", LEROBOT_READS, roots, ",".join(LEROBOT_DECODERS), str(out / "reads.json")],
        check=True,
        capture_output=True,
        cwd=out,  # not this repository: LeRobot's own `lerobot` package must be the one imported
        env=offline_env(),
    )
    return json.loads((out / "reads.json").read_text())


@pytest.mark.parametrize("decoder", LEROBOT_DECODERS)
@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_lerobot_decodes_every_recorded_frame(lerobot_reads, recorded, benchmark, decoder):
    if benchmark not in recorded:
        pytest.skip(f"{benchmark}'s simulator ({BENCHMARKS[benchmark][0]}) is not installed")
    read = lerobot_reads[benchmark][decoder]
    if "unavailable" in read:
        pytest.skip(f"LeRobot's {decoder} decoder does not load there: {read['unavailable']}")
    info = json.loads((recorded[benchmark] / "meta/info.json").read_text())
    assert read == {"frames": info["total_frames"]}


def test_lerobot_train_runs_on_a_recorded_dataset(recorded, tmp_path):
    if "metaworld" not in recorded:
        pytest.skip("Meta-World's simulator (metaworld) is not installed")
    missing = lerobot_lacks("accelerate")
    if missing:
        pytest.skip(
            f"LeRobot 0.6.1's scratch environment lacks {missing}, which its lerobot-train requires: rebuild it with `make lerobot-ref`"
        )
    tiny_act = [
        "--policy.type=act", "--policy.device=cpu", "--policy.push_to_hub=false",
        "--policy.pretrained_backbone_weights=null",  # torchvision's ImageNet weights would be downloaded
        "--policy.dim_model=16", "--policy.n_heads=2", "--policy.dim_feedforward=32",
        "--policy.n_encoder_layers=1", "--policy.n_decoder_layers=1",
        "--policy.chunk_size=4", "--policy.n_action_steps=4",
    ]  # fmt: skip
    run = [
        "--dataset.repo_id=local/recorded", f"--dataset.root={recorded['metaworld']}",
        "--steps=3", "--batch_size=2", "--num_workers=0", "--save_freq=3", "--log_freq=1",
        "--wandb.enable=false", f"--output_dir={tmp_path / 'train'}",
    ]  # fmt: skip
    done = subprocess.run(
        [LEROBOT_PYTHON, "-m", "lerobot.scripts.lerobot_train", *tiny_act, *run],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=offline_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "train/checkpoints/000003/pretrained_model/model.safetensors").is_file()
