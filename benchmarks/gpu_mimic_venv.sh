#!/usr/bin/env bash
# A Python 3.12 venv that stands in for the GPU machine's python3 (default /tmp/gpu-mimic): the
# packages /work/.library/device/KINDS.md lists for it, at the versions it gives, and none of
# those it lacks (no simulator, no LeRobot, no imageio-ffmpeg, no PyAV). The GPU checks are
# tried in it on the CPU before device time is spent on them:
#
#   bash benchmarks/gpu_mimic_venv.sh
#   PYTHON=/tmp/gpu-mimic/bin/python GPU_CHECK_SMOKE=1 GPU_CHECK_STEPS="ceiling vla" bash benchmarks/gpu_check.sh
#   PYTHON=/tmp/gpu-mimic/bin/python TRAIN_CHECK_DEVICE=cpu TRAIN_CHECK_SHORT=1 TRAIN_CHECK_LONG=2 \
#       bash benchmarks/gpu_train_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-/tmp/gpu-mimic}"
python312=$(scripts/find_python312.sh) || { echo "gpu_mimic_venv.sh: no Python 3.12 found; set PYTHON312" >&2; exit 1; }
uv venv -q -p "$python312" --allow-existing "$dest"
uv pip install -q -p "$dest/bin/python" pip torch==2.11.0 torchvision==0.26.0 numpy==2.5.2 \
    accelerate==1.15.0 huggingface_hub==1.33.0 safetensors==0.8.0 transformers==5.17.0 tokenizers==0.23.2 \
    pyarrow pandas einops imageio pillow opencv-python-headless pyyaml packaging tqdm requests "fsspec[http]" \
    aiohttp xxhash filelock typing-inspect mypy-extensions jinja2 httpx regex scipy sentencepiece protobuf \
    matplotlib psutil
echo "$dest/bin/python"
