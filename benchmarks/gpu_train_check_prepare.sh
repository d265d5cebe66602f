#!/usr/bin/env bash
# Builds .gpu-train/ for benchmarks/gpu_train_check.sh (issue 35's number on a GPU machine), here,
# before a GPU machine is asked for. That machine has torch, pyarrow, pandas, imageio and
# huggingface_hub but neither simulator nor LeRobot, cannot download, and takes at most 64 MiB
# of files per call with the repository (15 MB): PyAV's wheel alone is 40 MB, so each side's
# packages travel as one xz tarball of an installed folder (PyAV's 114 MB unpack to 28 MB):
#   common.tar.xz   what both programs import beyond that machine's packages (PyAV: LeRobot's
#                   video decoder, and ours where imageio-ffmpeg is missing; draccus, gymnasium)
#   lerobot.tar.xz  LeRobot 0.6.1 and what its training imports besides (datasets, diffusers)
#   reach256/       the dataset both train on, recorded here with lerobot-record-sim
# Versions are those of requirements/lerobot-ref.txt (a working LeRobot 0.6.1 install).
# Needs the project's .venv (metaworld extra), pip and a network to the package index.
# .gpu-train/ is in .gitignore: it travels only where a call carries it.
#
#   bash benchmarks/gpu_train_check_prepare.sh     # 2 minutes here; about 31 MB
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.gpu-train
rm -rf "$dest"
mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pinned() { # the name==version lines of requirements/lerobot-ref.txt for these names
    for name in "$@"; do
        grep -i -m1 "^$name==" requirements/lerobot-ref.txt || { echo "no pin for $name" >&2; exit 1; }
    done
}
source benchmarks/gpu_wheels.sh
pack() { # pack NAME REQUIREMENT...: Python 3.12 wheels installed into a folder, as NAME.tar.xz
    local name="$1"
    shift
    download_gpu_wheels "$work/$name-wheels" "$@"
    python3 -m pip install -q --no-deps --no-index --no-compile --ignore-requires-python --only-binary=:all: \
        "${gpu_platforms[@]}" --target "$work/$name" "$work/$name-wheels"/*.whl
    tar -C "$work/$name" -cf - . | xz -9 -T0 >"$dest/$name.tar.xz"
}
# (assigned first: a name without a pin then stops the script, which an argument list would not)
common=$(pinned av draccus mergedeep toml gymnasium farama-notifications typing-inspect mypy-extensions)
lerobot=$(pinned lerobot diffusers datasets dill multiprocess jsonlines termcolor importlib-metadata lazy-importer)
pack common $common
pack lerobot $lerobot

# 12 reach-v3 expert episodes of 100 steps at most, one 256x256 camera: the dataset of the CPU
# table in benchmarks/README.md ("Training throughput").
MUJOCO_GL="${MUJOCO_GL:-egl}" .venv/bin/lerobot-record-sim --env.type=metaworld --env.task=reach-v3 \
    --policy.type=metaworld_expert --n_episodes=12 --env.observation_height=256 \
    --env.observation_width=256 --env.episode_length=100 --root="$dest/reach256" --log_level=WARNING
rm -rf "$dest/reach256/.cache"
du -sh "$dest"/*
