# Sourced by gpu_check_prepare.sh and gpu_train_check_prepare.sh: the GPU machine's Python (3.12,
# CPython, x86-64 manylinux) in one place, for pip to fetch and install wheels for it from here.
gpu_platforms=(--python-version 3.12 --implementation cp)
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 any; do
    gpu_platforms+=(--platform "$p")
done

download_gpu_wheels() { # download_gpu_wheels DIR REQUIREMENT...: the wheels alone, no dependencies
    local dir="$1"
    shift
    python3 -m pip download -q --no-deps --only-binary=:all: "${gpu_platforms[@]}" -d "$dir" "$@"
}
