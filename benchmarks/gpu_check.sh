#!/usr/bin/env bash
# The GPU check, one command: EGL rendering on the GPU (Meta-World's 480x480 render alone, ACT
# on CUDA under bf16 autocast in lerobot-eval against the raw loop, the harness against the raw
# loop with the random policy) and batched VLA inference (SmolVLA and π0.5 at full size, random
# weights: float32, bf16 autocast, LeRobot's bfloat16 layout, torch.compile). Steps run in
# order of importance, each under its own time limit, so that a slow or failing one leaves
# the others' numbers; the log goes to $OUT (or /tmp/gpu_check).
#
# A GPU machine has torch but not the simulators: GPU_CHECK_DIR (default .gpu) brings
#   wheels/  Python 3.12 wheels of what it lacks (mujoco, gymnasium, draccus, PyOpenGL, and
#            transformers/tokenizers at the releases LeRobot 0.6.1 pins),
#   site/    Meta-World 3.0.0, installed, without the textures push-v3 does not load (the
#            whole package is over the device's transfer limit; its renders are identical),
#   gl/      the glvnd loader packages (libegl1, libopengl0, ...) for the NVIDIA driver's EGL.
# benchmarks/gpu_check_prepare.sh builds it here; the device call carries it (carry: .gpu).
#
# ManiSkill's step (`maniskill`: the batched scene against ManiSkill's own batched loop on
# physx_cuda, benchmarks/maniskill_batched.py) needs .gpu-maniskill instead (SAPIEN, a trimmed
# ManiSkill and the Vulkan loader; gpu_maniskill_prepare.sh builds it, 42 MB), which does not
# fit one call beside .gpu: it is a call of its own, carrying .gpu-maniskill. Where
# .gpu-maniskill is absent, or lacks SAPIEN's PhysX GPU library (physx_cuda's, downloaded by
# SAPIEN on first use, which the machine cannot), the step says so in one line and is skipped.
#
#   bash benchmarks/gpu_check.sh
#   GPU_CHECK_STEPS=maniskill bash benchmarks/gpu_check.sh     # carry: .gpu-maniskill
set -uo pipefail
dir="${GPU_CHECK_DIR:-.gpu}"
python="${PYTHON:-python3}"
out="${OUT:-/tmp/gpu_check}"
mkdir -p "$out"
exec > >(tee -a "$out/gpu_check.log") 2>&1

if [ -d "$dir/gl" ] && [ -z "${GPU_CHECK_SMOKE:-}" ]; then # unpacked into /: the GPU machine only
    for f in "$dir"/gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if [ -d "$dir/wheels" ]; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site "$dir"/wheels/*.whl || exit 1
fi
nvidia_egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$nvidia_egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES="$nvidia_egl"
export PYTHONPATH="$PWD/$dir/site:/tmp/site:$PWD/src:$PWD/benchmarks" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export MUJOCO_GL=egl
nvidia-smi -L
nproc
"$python" -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name())"

# GPU_CHECK_SMOKE=1 runs issue 29's steps at toy sizes on the CPU, without the GL packages: the
# script tried here, on a Python 3.12 of the GPU machine's packages (PYTHON=...), before device
# time is spent on it.
smoke=()
smoke_measure=()
[ -n "${GPU_CHECK_SMOKE:-}" ] && smoke=(--device cpu --episodes 2 --episode-length 20 --image-size 64 --batches 2 --tiny-vla)
[ -n "${GPU_CHECK_SMOKE:-}" ] && smoke_measure=(--device cpu --episodes 4 --episode-length 20 --image-size 64)
# GPU_CHECK_STEPS="render smolvla" runs only those steps (a rerun); default: all of them.
only="${GPU_CHECK_STEPS:-render ceiling vla sweep measure before groups layout act smolvla pi random compile maniskill}"
selected() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }
step() { # step ID NAME SECONDS COMMAND...
    local id="$1" name="$2" limit="$3"
    shift 3
    selected "$id" || return 0
    echo "=== $name ($(date -u +%T))"
    local started=$SECONDS
    timeout "$limit" "$@"
    echo "=== $name: exit $? in $((SECONDS - started)) s"
}

step render "EGL renderer and Meta-World's render alone" 60 "$python" - <<'PY'
import time

from lerobot.envs.metaworld.env import MetaworldEnv

env = MetaworldEnv("push-v3", obs_type="pixels_agent_pos")
env.reset(seed=0)  # renders: MuJoCo's EGL context is current from here
from OpenGL import GL

print("GL_VENDOR", GL.glGetString(GL.GL_VENDOR), "GL_RENDERER", GL.glGetString(GL.GL_RENDERER))
for label, step in (("step + 480x480 render", env.step), ("step alone", env.step_without_images)):
    env.reset(seed=1)  # 20 + 300 steps fit in one 500-step episode
    for _ in range(20):
        step(env.action_space.sample())
    started = time.perf_counter()
    for _ in range(300):
        step(env.action_space.sample())
    print(f"{label}: {300 / (time.perf_counter() - started):.1f} steps/s in one process")
env.close()
PY
# harness_ceiling.py --no-warm-up: device time is scarce; the first timed run of each step then
# also writes its imports' bytecode (seconds against runs of a minute).
# The goals' rows first (batch 32), each step's rows printed as they come: a step cut by its
# limit keeps what it printed.
step ceiling "issue 29's goals: ACT (chunks in workers) and random-state at batch 32 against the machine's ceiling, in lockstep and with rows advancing independently" 180 \
    "$python" benchmarks/harness_ceiling.py --no-warm-up --device cuda --image-size 480 --episodes 64 \
    --episode-length 200 --batches 32 --cases act-pixels,random-state --row-groups 1,ready \
    --json "$out/ceiling.json" "${smoke[@]}"
step vla "issue 29: full-size SmolVLA (random weights, bf16 autocast) at batch 32 on Meta-World against min(policy bound, ceiling)" 300 \
    "$python" benchmarks/harness_ceiling.py --no-warm-up --device cuda --image-size 480 --episodes 32 \
    --episode-length 100 --n-action-steps 10 --batches 32 --cases smolvla-pixels --row-groups 1,ready \
    --json "$out/vla.json" "${smoke[@]}"
step sweep "issue 29's table: the same at batch 8, 64 and 1" 180 \
    "$python" benchmarks/harness_ceiling.py --no-warm-up --device cuda --image-size 480 --episodes 32 \
    --episode-length 200 --batches 8,64,1 --cases act-pixels,random-state \
    --json "$out/ceiling_sweep.json" "${smoke[@]}"
step measure "issue 29: --eval.measure_batch_size against the core-count rule, ACT on 480x480" 150 \
    "$python" benchmarks/measure_batch.py --device cuda --image-size 480 --episodes 64 \
    --episode-length 200 --cases act-pixels --json "$out/measure_batch.json" "${smoke_measure[@]}"
step before "issue 29: ACT at batch 32 with one step per round (--eval.chunks_in_workers=false)" 90 \
    "$python" benchmarks/harness_ceiling.py --no-warm-up --device cuda --image-size 480 --episodes 64 \
    --episode-length 200 --batches 32 --cases act-pixels-per-step \
    --json "$out/ceiling_per_step.json" "${smoke[@]}"
step groups "issue 29: ACT on CUDA with the batch in 1, 2 and 4 groups taking turns (--eval.row_groups), and rows advancing independently" 240 \
    "$python" benchmarks/harness_ceiling.py --no-warm-up --device cuda --image-size 480 --episodes 64 \
    --episode-length 200 --batches 32,64 --cases act-pixels --row-groups 1,2,4,ready \
    --json "$out/row_groups.json" "${smoke[@]}"
step layout "issue 29: the same random-state runs with one process per env (before envs_per_worker)" 120 \
    "$python" benchmarks/harness_ceiling.py --no-warm-up --device cuda --episodes 64 --episode-length 200 \
    --batches 32,64 --cases random-state --eval-flag=--eval.envs_per_worker=1 \
    --eval-flag=--eval.envs_in_main_process=0 --json "$out/layout_one_per_process.json" "${smoke[@]}"
step act "ACT on CUDA + bf16 autocast in lerobot-eval" 150 "$python" benchmarks/throughput.py --act \
    --device cuda --use-amp --episodes 8 --episode-length 200 --act-cases raw,raw-blind,ours-b1,ours-b8 \
    --json "$out/act_cuda.json"
step smolvla "SmolVLA full size" 120 "$python" benchmarks/smolvla_gpu.py
step pi "pi0.5 full size" 120 "$python" benchmarks/pi_gpu.py --libero-episodes 0 --modes float32 bf16 amp
step random "harness vs raw loop, random policy, batch 8" 60 "$python" benchmarks/throughput.py \
    --task push-v3 --episodes 16 --episode-length 100 --batch-size 8 --json "$out/random_b8.json"
step compile "pi0.5 full size, torch.compile" "${COMPILE_LIMIT_S:-120}" "$python" benchmarks/pi_gpu.py --libero-episodes 0 --modes compile --batch-sizes 1 8

# ManiSkill: its packages unpacked into /tmp/maniskill_site, and of the carried system libraries
# only those the machine lacks, linked into /tmp/maniskill_libs (not unpacked into /).
maniskill_dir="${GPU_CHECK_MANISKILL_DIR:-.gpu-maniskill}"
unpack_maniskill() {
    "$python" - "$maniskill_dir/site.tar.xz" /tmp/maniskill_site <<'PY' || return 1
import sys
import tarfile

with tarfile.open(sys.argv[1]) as archive:
    archive.extractall(sys.argv[2], filter="data")
PY
    mkdir -p /tmp/maniskill_debs /tmp/maniskill_libs
    for f in "$maniskill_dir"/libs/*.deb; do dpkg -x "$f" /tmp/maniskill_debs; done
    for lib in libvulkan.so.1 libGLdispatch.so.0 libX11.so.6 libXext.so.6 libxcb.so.1 libXau.so.6 \
        libXdmcp.so.6 libbsd.so.0 libmd.so.0; do
        ldconfig -p | grep -q "[[:space:]]$lib " && continue
        echo "the machine lacks $lib: the carried one is used"
        ln -sf "$(find /tmp/maniskill_debs -name "$lib" | head -n 1)" /tmp/maniskill_libs/
    done
    export PYTHONPATH="/tmp/maniskill_site:$PYTHONPATH" LD_LIBRARY_PATH="/tmp/maniskill_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # The driver's Vulkan ICD where the image keeps it; without one SAPIEN falls back to its own copy.
    local nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    [ -f "$nvidia_icd" ] && [ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json ] && export VK_ICD_FILENAMES="$nvidia_icd"
    timeout 60 "$python" -c "import sapien, mani_skill; print('ManiSkill from', mani_skill.__file__); print(sapien.render.get_device_summary())" ||
        echo "SAPIEN's device query failed (above)"
}
physx_gpu_ready() { # SAPIEN's PhysX GPU library where its enable_gpu() looks, from .gpu-maniskill/physx
    "$python" - "$maniskill_dir/physx/libPhysXGpu_64.so.xz" <<'PY'
import lzma
import shutil
import sys
from pathlib import Path

import sapien

carried = Path(sys.argv[1])
dest = Path.home() / ".sapien" / "physx" / sapien.physx.version() / "libPhysXGpu_64.so"
if not dest.exists() and carried.exists():
    dest.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(carried) as source, open(dest, "wb") as out:
        shutil.copyfileobj(source, out)
sys.exit(0 if dest.exists() else 1)
PY
}
maniskill_args=(--batches 32 128 512 --obs state camera)
[ -n "${GPU_CHECK_SMOKE:-}" ] && maniskill_args=(--smoke)
if ! selected maniskill; then
    :
elif [ ! -f "$maniskill_dir/site.tar.xz" ]; then
    echo "=== ManiSkill skipped: no $maniskill_dir/site.tar.xz (gpu_maniskill_prepare.sh builds it; a call of its own carries it)"
elif ! unpack_maniskill; then
    echo "=== ManiSkill skipped: unpacking $maniskill_dir failed (above)"
elif [ -z "${GPU_CHECK_SMOKE:-}" ] && ! physx_gpu_ready; then
    echo "=== ManiSkill skipped: physx_cuda needs SAPIEN's PhysX GPU library, which it downloads on first use and this machine cannot; gpu_maniskill_prepare.sh carries a copy it finds (PHYSX_GPU_LIB)"
else
    step maniskill "ManiSkill PickCube-v1: the batched scene against ManiSkill's own batched loop, batch 32/128/512, state and a 128x128 camera" \
        "${MANISKILL_LIMIT_S:-240}" "$python" benchmarks/maniskill_batched.py "${maniskill_args[@]}"
fi
