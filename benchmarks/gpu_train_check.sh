#!/usr/bin/env bash
# Issue 35's number on a GPU machine, one command: samples/s of our lerobot-train against
# LeRobot 0.6.1's (ACT and Diffusion, the same dataset, batch and data-loader workers, on CUDA),
# with .gpu-train/ carried along (benchmarks/gpu_train_check_prepare.sh builds it here). Both
# `lerobot` packages run from the machine's one python3: ours from src/, LeRobot's from its
# unpacked folder, each with the common one (PyAV, draccus, gymnasium); then the data loading
# alone (train_loader.py). The log goes to $OUT (or /tmp/gpu_train_check). About 4 minutes.
#
#   bash benchmarks/gpu_train_check.sh
#   TRAIN_CHECK_WORKERS="0 4" TRAIN_CHECK_LONG=210 bash benchmarks/gpu_train_check.sh
set -uo pipefail
dir="${GPU_TRAIN_DIR:-.gpu-train}"
python="${PYTHON:-python3}"
out="${OUT:-/tmp/gpu_train_check}"
site="${TRAIN_CHECK_SITE:-/tmp/gpu_train_site}"
mkdir -p "$out"
exec > >(tee -a "$out/gpu_train_check.log") 2>&1

"$python" - "$dir" "$site" <<'PY' || exit 1
import sys, tarfile
from pathlib import Path

source, site = Path(sys.argv[1]), Path(sys.argv[2])
for name in ("common", "lerobot"):
    with tarfile.open(source / f"{name}.tar.xz") as archive:
        archive.extractall(site / name, filter="data")
PY
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 WANDB_MODE=disabled
nvidia-smi -L 2>/dev/null
nproc
device="${TRAIN_CHECK_DEVICE:-cuda}"
for side in "$PWD/src:$site/common" "$site/lerobot:$site/common"; do # which lerobot each side runs
    PYTHONPATH="$side" "$python" -c "import lerobot, av; print('lerobot from', lerobot.__file__, '| PyAV', av.__version__)"
done
# LeRobot 0.6.1 reads videos with torchcodec where it loads, else PyAV: the machine has no
# FFmpeg libraries for torchcodec, so it is PyAV on both sides, said explicitly (ours decodes
# once into its frame cache whatever the flag says).
PYTHONPATH="$PWD/src:$site/common" timeout "${TRAIN_CHECK_LIMIT_S:-300}" "$python" benchmarks/train_throughput.py \
    --ours "$python -m lerobot.scripts.lerobot_train" \
    --lerobot-python "$python" --lerobot-pythonpath "$site/lerobot:$site/common" \
    --dataset "$dir/reach256" --device "$device" --policies ${TRAIN_CHECK_POLICIES:-act diffusion} \
    --workers ${TRAIN_CHECK_WORKERS:-4} --batch-size "${TRAIN_CHECK_BATCH:-8}" \
    --short "${TRAIN_CHECK_SHORT:-10}" --long "${TRAIN_CHECK_LONG:-110}" --flag=--dataset.video_backend=pyav
echo "=== train check: exit $?"
# The data loading alone, the same dataset and workers (about a minute).
PYTHONPATH="$PWD/src:$site/common" timeout "${TRAIN_LOADER_LIMIT_S:-90}" "$python" benchmarks/train_loader.py \
    --lerobot-python "$python" --lerobot-pythonpath "$site/lerobot:$site/common" --dataset "$dir/reach256" \
    --workers ${TRAIN_CHECK_WORKERS:-4} --batch-size "${TRAIN_CHECK_BATCH:-8}"
echo "=== loader check: exit $?"
