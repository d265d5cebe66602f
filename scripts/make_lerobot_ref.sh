#!/usr/bin/env bash
# LeRobot 0.6.1 itself, in a Python 3.12 venv of its own (default .venv-lerobot-ref): the
# interpreter of the LeRobot bridge tests and of the fidelity tests and fixture scripts, with
# its `dataset` extra for the tests that load our datasets with LeRobotDataset. It is
# never a dependency of this project. LeRobot 0.6.1 needs Python 3.12: set PYTHON312, or have
# python3.12 on PATH or in pyenv. Exits 1, saying so, when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-.venv-lerobot-ref}"
python312=$(scripts/find_python312.sh) || {
    echo "make_lerobot_ref.sh: no Python 3.12 found (LeRobot 0.6.1 needs it); set PYTHON312" >&2
    exit 1
}
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv venv -q -p "$python312" --allow-existing "$dest"
# mujoco 3.3.0, as Meta-World needs, is in the constraints.
# The dataset extra (datasets, PyAV, torchcodec) and accelerate, which lerobot-train requires:
# the tests that LeRobot reads and trains on what lerobot-record-sim writes
# (tests/datasets/test_lerobot_reads_ours.py). Not the training extra: its wandb is not needed
# (--wandb.enable=false) and is one more download for a cache that builds this offline.
uv pip install -q -p "$dest/bin/python" -c requirements/lerobot-ref.txt "lerobot[diffusion,dataset]==0.6.1" accelerate
echo "$dest/bin/python"
