#!/usr/bin/env bash
# Builds .gpu-maniskill/ for the `maniskill` step of benchmarks/gpu_check.sh, here, before a GPU
# machine is asked for. That machine has Python 3.12 and torch but no simulator, cannot
# download, and takes at most 64 MiB of files per call with the repository (18 MB): SAPIEN's
# wheel alone is 51 MB and ManiSkill's 100 MB (mostly robots and scenes PickCube-v1 never
# loads), so what it lacks travels as one xz tarball of an installed folder:
#   site.tar.xz  SAPIEN 3.0.3 and ManiSkill 3.0.1, trimmed to what PickCube-v1 builds and
#                renders (below), the packages `import mani_skill.envs` needs beyond that
#                machine's (found by trying, in gpu_mimic_venv.sh's stand-in for it), and
#                gymnasium, draccus and mergedeep for LeRobot's own imports
#   physx/       SAPIEN's PhysX GPU library (libPhysXGpu_64.so.xz), which physx_cuda loads and
#                SAPIEN downloads from GitHub on first use: that machine cannot, nor can this one,
#                so it is carried only where a copy is here (PHYSX_GPU_LIB, or where SAPIEN keeps
#                it after a download: ~/.sapien/physx/VERSION/); without it the step stops there
#   libs/        Debian packages of the Vulkan loader (libvulkan1), of libX11, which SAPIEN's
#                renderer links against, and of what the NVIDIA driver's Vulkan library may link
#                against (libGLdispatch, libXext): the step uses each only where the machine lacks it
# Needs pip, apt-get and a network to the package index; the trim was checked by running
# `maniskill_batched.py --smoke` on the unpacked tarball (README.md, "GPU check").
# .gpu-maniskill/ is in .gitignore: it travels only where a call carries it.
#
#   bash benchmarks/gpu_maniskill_prepare.sh && du -sh .gpu-maniskill    # 2.5 minutes on 2 cores; 42 MB
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.gpu-maniskill
rm -rf "$dest"
mkdir -p "$dest/libs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Versions as requirements/lock.txt resolved them for the maniskill extra. Not carried, though
# mani-skill requires them: what PickCube-v1 never imports (mplib, toppra, tyro, GitPython,
# imageio-ffmpeg) and what the GPU machine has (h5py, tabulate, scipy, opencv, huggingface_hub).
source benchmarks/gpu_wheels.sh
download_gpu_wheels "$work/wheels" sapien==3.0.3 mani-skill==3.0.1 transforms3d==0.4.2 lxml==6.1.3 \
    trimesh==5.2.0 pytorch-kinematics==0.7.6 arm-pytorch-utilities==0.5.0 pytorch-seed==0.2.0 \
    ipython==9.19.1 traitlets==5.16.1 defusedxml==0.7.1 dacite==1.9.2 \
    gymnasium==1.4.0 farama-notifications==0.0.6 draccus==0.11.6 mergedeep==1.3.4
site="$work/site"
python3 -m pip install -q --no-deps --no-index --no-compile --ignore-requires-python --only-binary=:all: \
    "${gpu_platforms[@]}" --target "$site" "$work/wheels"/*.whl
rm -rf "$site/bin"

# SAPIEN: C++ headers, the macOS Vulkan loader, the depth sensor's projector patterns and the
# CUDA denoiser are for what ManiSkill's rasterized cameras never do. The denoiser's core stays:
# the renderer links against it.
rm -rf "$site/sapien/include" "$site/sapien/sensor/assets/patterns" \
    "$site/sapien/vulkan_library/"*.dylib "$site/sapien/oidn_library/"*device_cuda*
# ManiSkill: of its robots only the Panda's own meshes (franka_description), none of the scene
# environment maps, and no file over 300 kB that PickCube-v1 does not load (its table scene's
# table.glb is the one it does). Found by tracing the files the smoke run opens (strace).
ms="$site/mani_skill"
find "$ms/assets/robots" -mindepth 1 -maxdepth 1 ! -name panda -exec rm -rf {} +
rm -rf "$ms/assets/robots/panda/realsense2_description" "$ms/assets/robots/panda/sciurus17_description" \
    "$ms/assets/environment_maps"
find "$ms" -type f -size +300k ! -path "*/franka_description/*" \
    ! -path "*/scene_builder/table/assets/table.glb" -delete
tar -C "$site" -cf - . | xz -9 -T0 >"$dest/site.tar.xz"

# SAPIEN 3.0.3's sapien.physx.version(): its GPU library must be this build.
physx_version=105.1-physx-5.3.1.patch0
physx_gpu="${PHYSX_GPU_LIB:-$HOME/.sapien/physx/$physx_version/libPhysXGpu_64.so}"
if [ -f "$physx_gpu" ]; then
    mkdir -p "$dest/physx"
    xz -9 -T0 -c "$physx_gpu" >"$dest/physx/libPhysXGpu_64.so.xz"
else
    echo "no PhysX GPU library at $physx_gpu: the maniskill step will stop before physx_cuda (set PHYSX_GPU_LIB)" >&2
fi

apt_options=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
mkdir -p /tmp/amd64/partial
apt-get "${apt_options[@]}" update >/dev/null
(cd "$dest/libs" && apt-get "${apt_options[@]}" download libvulkan1 libglvnd0 libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0)
for f in "$dest"/libs/*.deb; do # libx11-6_2%3a1.8.4-2_amd64.deb as libx11-6.deb: plain names travel
    mv "$f" "${f%%_*}.deb"
done
du -sh "$dest"/*
# What one call carries: this folder and the repository (tracked files, untracked ones git does
# not ignore), within the device's 64 MiB.
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- | tail -n 1 | cut -f1)
size=$(du -sb "$dest" | cut -f1)
echo "$dest: $((size / 1000000)) MB + repository $((tree / 1000000)) MB = $(((size + tree) / 1000000)) MB (limit 67 MB)"
[ $((size + tree)) -lt $((64 * 1024 * 1024)) ] || { echo "$dest does not fit one call" >&2; exit 1; }
