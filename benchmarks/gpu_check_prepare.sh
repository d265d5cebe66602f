#!/usr/bin/env bash
# Builds .gpu/ for benchmarks/gpu_check.sh, here, before a GPU machine is asked for: the
# Python 3.12 wheels that machine lacks, a Meta-World that fits its transfer limit, and the
# glvnd loader packages. Needs the project's .venv (with the metaworld extra), pip and apt-get.
# .gpu/ is in .gitignore: it travels only where a call carries it.
#
#   bash benchmarks/gpu_check_prepare.sh && du -sh .gpu    # about 35 MB
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu
mkdir -p .gpu/wheels .gpu/site .gpu/gl

source benchmarks/gpu_wheels.sh
download_gpu_wheels .gpu/wheels \
    mujoco==3.3.0 gymnasium==1.4.0 farama-notifications draccus==0.11.6 mergedeep==1.3.4 \
    pyyaml-include toml==0.10.2 pyopengl glfw etils transformers==5.5.4 tokenizers==0.22.2

# Meta-World 3.0.0 is 37 MB, mostly textures; push-v3 loads two of the large ones. The rest
# of its large textures stay behind (its push-v3 frames are byte-identical without them).
site=$(.venv/bin/python -c "import metaworld, pathlib; print(pathlib.Path(metaworld.__file__).parent)")
cp -r "$site" .gpu/site/metaworld
find .gpu/site/metaworld -name __pycache__ -prune -exec rm -rf {} +
find .gpu/site/metaworld/assets -name "*.png" -size +300k \
    ! -path "*/assets/textures/wood2.png" ! -path "*/assets/textures/floor2.png" -delete

apt_options=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
mkdir -p /tmp/amd64/partial
apt-get "${apt_options[@]}" update >/dev/null
(cd .gpu/gl && apt-get "${apt_options[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
