#!/usr/bin/env bash
# Build the benchmark images on this machine and run in each the smoke steps that
# .github/workflows/benchmark_tests.yml runs on GitHub; for machines without an image registry.
#
#   docker/build_local.sh                   # every benchmark of the workflow's matrix
#   docker/build_local.sh metaworld         # only these
#
# 1. Docker: installs docker.io with apt when no `dockerd` is installed and starts the daemon in
#    the background when none answers (log in $DOCKERD_LOG; it keeps running afterwards). When
#    the default daemon does not come up, it retries with --iptables=false, then also with
#    --bridge=none, in which case builds and containers use the host's network.
# 2. Base image: a Debian bookworm root file system made with debootstrap and imported as
#    $BASE_IMAGE, once (delete that image to rebuild it). The mirror is $DEBIAN_MIRROR, or the
#    first Debian archive in this machine's apt sources.
# 3. Each benchmark: `docker build` of docker/Dockerfile.benchmark.<name> on that base, then the
#    workflow's steps: the image's default command (1-episode eval into /artifacts), the task
#    descriptions, metrics.json from eval_info.json, `--help` of the entry's help_commands (the
#    benchmark's own commands, such as robomimic's converter), `lerobot-record-sim` of 2 episodes
#    and a 1-step `lerobot-train` with its in-loop eval; for entries with a SmolVLA checkpoint, its
#    1-episode eval and a 1-step fine-tuning of lerobot/smolvla_base with an in-loop eval. The
#    matrix (task, policy, flags) is read from the workflow itself, so the two cannot drift
#    apart. Outputs land where the workflow uploads them from: $ARTIFACTS_ROOT/<benchmark>/
#    (bind-mounted at /artifacts).
#    The SmolVLA steps run the workflow's commands, but the hub repos they name are tiny local
#    stand-ins (docker/hub_standins.py): an offline hub cache in $ARTIFACTS_ROOT/<benchmark>/
#    huggingface holding the test fixtures' SmolVLA and VLM and a SmolVLA trained for one step
#    on the recorded episodes, mounted as HF_HOME with HF_HUB_OFFLINE=1. With
#    SMOLVLA_STANDINS=0 they download the real checkpoints instead (needs the hub, several GB).
# 4. Removes build cache layers that no image uses any more (old dependency layers, GBs each),
#    keeping uv's download cache; prints each step's time and result, build times and image
#    sizes; exits non-zero when a build or a step failed. Later steps still run after a failure,
#    as in the workflow.
#
# Needs root (or sudo) for apt, debootstrap and dockerd, and a Docker client that builds with
# BuildKit (the buildx plugin, or a client older than 23 with DOCKER_BUILDKIT=1, such as the
# docker.io package's /usr/bin/docker). Environment variables, all optional:
#   BASE_IMAGE=lerobot-local-base:bookworm   ARTIFACTS_ROOT=<repo>/ci-artifacts
#   IMAGE_PREFIX=lerobot-benchmark-          IMAGE_TAG=local
#   DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR    DOCKER=<docker client>   DOCKERD_LOG=/tmp/dockerd.log
#   DOCKER_RUN_ARGS (extra `docker run` options, e.g. "--gpus all")
#   PRUNE_BUILD_CACHE=1 (0: keep build cache layers that no image uses any more)
#   SMOLVLA_STANDINS=1 (0: the SmolVLA steps use the hub's checkpoints, as on GitHub)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORKFLOW="$REPO/.github/workflows/benchmark_tests.yml"
BASE_IMAGE="${BASE_IMAGE:-lerobot-local-base:bookworm}"
ARTIFACTS_ROOT="${ARTIFACTS_ROOT:-$REPO/ci-artifacts}"
IMAGE_PREFIX="${IMAGE_PREFIX:-lerobot-benchmark-}"
IMAGE_TAG="${IMAGE_TAG:-local}"
DOCKERD_LOG="${DOCKERD_LOG:-/tmp/dockerd.log}"
SUITE=bookworm
# The image's own user (Dockerfile default) when this script runs as root: UID 0 cannot be
# given to a second user, so the artifact folders are handed to this UID instead.
IMAGE_DEFAULT_UID=10001

export DOCKER_BUILDKIT=1
NETWORK_ARGS=()
read -r -a EXTRA_RUN_ARGS <<<"${DOCKER_RUN_ARGS:-}"
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    SUDO=(sudo)
fi

log() { printf '\n==> %s\n' "$*"; }
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

apt_install() {
    log "apt-get install $*"
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- Docker ------------------------------------------------------------------------------------

daemon_answers() { "${DOCKER:-docker}" info >/dev/null 2>&1; }

# A client that can build with BuildKit: one with the buildx plugin, else one older than 23
# (those build with BuildKit themselves when DOCKER_BUILDKIT=1; newer ones need buildx for it).
pick_client() {
    if [ -n "${DOCKER:-}" ]; then
        return
    fi
    local candidate major
    for candidate in docker /usr/bin/docker; do
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" buildx version >/dev/null 2>&1; then
            DOCKER="$candidate"
            return
        fi
        major="$("$candidate" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1 || true)"
        if [[ "$major" =~ ^[0-9]+$ ]] && [ "$major" -lt 23 ]; then
            DOCKER="$candidate"
            return
        fi
    done
    die "no Docker client here builds with BuildKit: install the buildx plugin, or set DOCKER to the docker.io package's /usr/bin/docker"
}

start_daemon() {
    if daemon_answers; then
        return
    fi
    if ! command -v dockerd >/dev/null 2>&1; then
        apt_install docker.io
    fi
    local flags pid waited
    # The daemon's documented fallbacks for kernels or sandboxes without iptables or bridges.
    for flags in "" "--iptables=false" "--iptables=false --bridge=none"; do
        log "starting dockerd ${flags:-(default options)}; log: $DOCKERD_LOG"
        # shellcheck disable=SC2086  # word splitting of the flag list is intended
        "${SUDO[@]}" dockerd $flags >>"$DOCKERD_LOG" 2>&1 &
        pid=$!
        for ((waited = 0; waited < 60; waited++)); do
            if daemon_answers; then
                if [[ "$flags" == *--bridge=none* ]]; then
                    NETWORK_ARGS=(--network=host)
                fi
                return
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 1
        done
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    tail -n 20 "$DOCKERD_LOG" >&2 || true
    die "dockerd did not come up with any of the documented options (see $DOCKERD_LOG)"
}

# --- Base image --------------------------------------------------------------------------------

# The first URI of this machine's apt sources whose path ends in /<archive> (debian or
# debian-security), in either format (one-line .list or deb822 .sources).
host_archive_uri() {
    local archive="$1"
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | grep -v '^[[:space:]]*#' \
        | grep -oE '[a-z+]+://[^[:space:]]+' \
        | grep -E "/${archive}/?\$" \
        | head -n 1 \
        || true
}

build_base() {
    if "$DOCKER" image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        log "base image $BASE_IMAGE exists (delete it to rebuild)"
        return
    fi
    command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
    local mirror security rootfs started
    # pip and uv bring their own CA lists; these variables point them at the system's instead.
    local ca_bundle=/etc/ssl/certs/ca-certificates.crt
    mirror="${DEBIAN_MIRROR:-$(host_archive_uri debian)}"
    security="${DEBIAN_SECURITY_MIRROR:-$(host_archive_uri debian-security)}"
    [ -n "$mirror" ] || die "no Debian archive in this machine's apt sources: set DEBIAN_MIRROR"
    log "building $BASE_IMAGE: debootstrap $SUITE from $mirror"
    started=$SECONDS
    rootfs="$(mktemp -d /tmp/lerobot-base.XXXXXX)"
    # shellcheck disable=SC2064  # expand now: the path is fixed
    trap "${SUDO[*]} rm -rf '$rootfs'" EXIT
    "${SUDO[@]}" debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$rootfs" "$mirror" >/dev/null
    # Certificate authorities this machine trusts beyond Debian's (a TLS-inspecting proxy's, for
    # one) are trusted in the base too, so downloads during builds work wherever they work here.
    local extra_cas=(/usr/local/share/ca-certificates/*.crt)
    if [ -e "${extra_cas[0]}" ]; then
        "${SUDO[@]}" cp "${extra_cas[@]}" "$rootfs/usr/local/share/ca-certificates/"
        "${SUDO[@]}" chroot "$rootfs" update-ca-certificates >/dev/null
    fi
    {
        echo "deb $mirror $SUITE main"
        echo "deb $mirror $SUITE-updates main"
        if [ -n "$security" ]; then
            echo "deb $security $SUITE-security main"
        fi
    } | "${SUDO[@]}" tee "$rootfs/etc/apt/sources.list" >/dev/null
    # An image starts with empty package lists, as the official ones do; no debootstrap cache.
    "${SUDO[@]}" rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
    "${SUDO[@]}" tar --numeric-owner -C "$rootfs" -c . \
        | "$DOCKER" import \
            --change 'CMD ["/bin/bash"]' \
            --change "ENV SSL_CERT_FILE=$ca_bundle PIP_CERT=$ca_bundle" \
            - "$BASE_IMAGE" >/dev/null
    "${SUDO[@]}" rm -rf "$rootfs"
    trap - EXIT
    BASE_BUILD_S=$((SECONDS - started))
}

# --- The workflow's matrix ---------------------------------------------------------------------

# Separators of matrix_lines: between fields, and between the words of a flag list. Neither is
# whitespace, so `read` keeps empty fields, and words may contain spaces (a --rename_map's JSON).
FIELD_SEP=$'\x1e'
WORD_SEP=$'\x1f'

# One line per matrix entry, fields separated by FIELD_SEP: benchmark, task, policy, the train
# smoke's env flags, the SmolVLA checkpoint ("" when the entry has none), the SmolVLA eval's and
# train smoke's flags, the commands whose --help must work ("" when none). Flag lists are split
# as the runner's bash splits them (quotes included) and their words joined by WORD_SEP.
matrix_lines() {
    python3 -c 'import yaml' 2>/dev/null || apt_install python3-yaml
    python3 - "$WORKFLOW" "$FIELD_SEP" "$WORD_SEP" <<'EOF'
import shlex
import sys

import yaml

path, field_sep, word_sep = sys.argv[1:]
with open(path, encoding="utf-8") as file:
    workflow = yaml.safe_load(file)
for entry in workflow["jobs"]["smoke"]["strategy"]["matrix"]["include"]:
    words = [str(entry[key]) for key in ("benchmark", "task", "policy")]
    words.append(str(entry.get("smolvla_checkpoint", "")))
    keys = ("smoke_env_flags", "smolvla_eval_flags", "smolvla_train_flags", "help_commands")
    flags = [entry.get(key, "") for key in keys]
    flags = [word_sep.join(shlex.split(str(value))) for value in flags]
    print(field_sep.join(words[:3] + flags[:1] + words[3:] + flags[1:]))
EOF
}

# --- One benchmark -----------------------------------------------------------------------------

SUMMARY=()
FAILED=0

# step <benchmark> <name> <command...>: runs it, times it, records the result; never exits.
# `set -e` does not apply inside a command run as a condition: the step functions below chain
# their commands with && so that a failure is their exit status.
step() {
    local benchmark="$1" name="$2" started status
    shift 2
    log "$benchmark: $name"
    started=$SECONDS
    if "$@"; then status=ok; else status="FAILED (exit $?)"; fi
    SUMMARY+=("$(printf '%-10s %-36s %5ss  %s' "$benchmark" "$name" "$((SECONDS - started))" "$status")")
    if [ "$status" != ok ]; then
        FAILED=1
        return 1
    fi
}

docker_build() {
    local benchmark="$1" image="$2" log_file="$3"
    local args=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
    # Debian bookworm predates the t64 rename of Ubuntu 24.04 (see the Dockerfile).
    args+=(--build-arg GLIB_PACKAGE=libglib2.0-0)
    if [ "$(id -u)" -ne 0 ]; then
        args+=(--build-arg "USER_UID=$(id -u)")
    fi
    local previous current
    previous="$("$DOCKER" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
    "$DOCKER" build --progress=plain "${args[@]}" "${NETWORK_ARGS[@]}" \
        -f "docker/Dockerfile.benchmark.$benchmark" -t "$image" . 2>&1 | tee "$log_file" \
        || return
    # The image this build replaced keeps its several GB under no name: remove it (only it).
    current="$("$DOCKER" image inspect --format '{{.Id}}' "$image")"
    if [ -n "$previous" ] && [ "$previous" != "$current" ] \
        && [ -z "$("$DOCKER" image inspect --format '{{join .RepoTags ""}}' "$previous" 2>/dev/null)" ]; then
        "$DOCKER" image rm "$previous" >/dev/null || true
    fi
}

# A folder the image's user can write into, as the runner's UID can on GitHub.
artifacts_folder() {
    mkdir -p "$1"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R "$IMAGE_DEFAULT_UID:$IMAGE_DEFAULT_UID" "$1"
    fi
}

run_image() {
    "$DOCKER" run --rm "${NETWORK_ARGS[@]}" "${EXTRA_RUN_ARGS[@]}" "$@"
}

smoke_eval() {
    artifacts_folder "$ARTIFACTS_DIR" \
        && run_image --volume "$ARTIFACTS_DIR:/artifacts" "$IMAGE"
}

task_descriptions() {
    run_image \
        --volume "$ARTIFACTS_DIR:/artifacts" \
        --volume "$REPO/scripts:/opt/lerobot/scripts:ro" \
        "$IMAGE" \
        python /opt/lerobot/scripts/ci/extract_task_descriptions.py \
        --env "$BENCHMARK" --task "$TASK" --output /artifacts/task_descriptions.json
}

# Each of the entry's help_commands, as the workflow runs them: `<command> --help` exits 0.
help_commands() {
    local command
    for command in "${HELP_COMMANDS[@]}"; do
        run_image "$IMAGE" "$command" --help || return
    done
}

metrics() {
    mkdir -p "$ARTIFACTS_DIR"
    python3 scripts/ci/parse_eval_metrics.py \
        --artifacts-dir "$ARTIFACTS_DIR" --env "$BENCHMARK" --task "$TASK" --policy "$POLICY" \
        && cat "$ARTIFACTS_DIR/metrics.json"
}

record() {
    artifacts_folder "$ARTIFACTS_DIR/train" || return
    run_image --volume "$ARTIFACTS_DIR/train:/artifacts" "$IMAGE" \
        lerobot-record-sim --env.type="$BENCHMARK" "${SMOKE_ENV_FLAGS[@]}" \
        --policy.type="$POLICY" --n_episodes=2 --root=/artifacts/dataset
}

train() {
    run_image --volume "$ARTIFACTS_DIR/train:/artifacts" "$IMAGE" \
        lerobot-train --policy.type=act --policy.device=cpu \
        --dataset.root=/artifacts/dataset \
        --env.type="$BENCHMARK" "${SMOKE_ENV_FLAGS[@]}" \
        --steps=1 --batch_size=2 --eval_freq=1 --save_freq=1 \
        --eval.n_episodes=1 --eval.batch_size=1 --output_dir=/artifacts/run \
        && test -f "$ARTIFACTS_DIR/train/run/checkpoints/last/pretrained_model/model.safetensors" \
        && python3 scripts/ci/parse_eval_metrics.py \
        --artifacts-dir "$ARTIFACTS_DIR/train/run/eval/step_1" \
        --env "$BENCHMARK" --task "$TASK" --policy act
}

# --- SmolVLA (matrix entries with a smolvla_checkpoint) -------------------------------------

# The hub cache both SmolVLA steps share, as in the workflow; offline with the stand-ins.
hf_run_args() {
    HF_ARGS=(--volume "$ARTIFACTS_DIR/huggingface:/hf" --env HF_HOME=/hf)
    if [ "${SMOLVLA_STANDINS:-1}" = 1 ]; then
        HF_ARGS+=(--env HF_HUB_OFFLINE=1)
    fi
}

# Local only (CI downloads the real ones): the hub repos of the SmolVLA steps as tiny stand-ins.
# lerobot/smolvla_base and its VLM come from the test fixtures; the evaluated checkpoint is a
# SmolVLA trained here for one step on the recorded episodes, with the entry's camera flags, so
# that it reads the cameras, state and action of this benchmark as the real one does. It keeps
# SmolVLA's default VLM, which the cache serves from the fixture too.
smolvla_standins() {
    local hf="$ARTIFACTS_DIR/huggingface"
    local trained="$ARTIFACTS_DIR/train/smolvla_standin/checkpoints/last/pretrained_model"
    python3 docker/hub_standins.py --hf-home "$hf" \
        && artifacts_folder "$hf" \
        && run_image --volume "$ARTIFACTS_DIR/train:/artifacts" "${HF_ARGS[@]}" "$IMAGE" \
            lerobot-train --policy.type=smolvla --policy.num_vlm_layers=2 \
            --policy.chunk_size=10 --policy.n_action_steps=5 \
            '--policy.resize_imgs_with_padding=[64,64]' --policy.tokenizer_max_length=16 \
            --policy.push_to_hub=false --policy.device=cpu --dataset.root=/artifacts/dataset \
            --env.type="$BENCHMARK" "${SMOKE_ENV_FLAGS[@]}" "${SMOLVLA_TRAIN_FLAGS[@]}" \
            --steps=1 --batch_size=1 --eval_freq=0 --save_freq=1 \
            --output_dir=/artifacts/smolvla_standin \
        && python3 docker/hub_standins.py --hf-home "$hf" --checkpoint "$SMOLVLA_CHECKPOINT=$trained" \
        && artifacts_folder "$hf"
}

smolvla_eval() {
    artifacts_folder "$ARTIFACTS_DIR/smolvla" \
        && artifacts_folder "$ARTIFACTS_DIR/huggingface" \
        && run_image --volume "$ARTIFACTS_DIR/smolvla:/artifacts" "${HF_ARGS[@]}" "$IMAGE" \
            lerobot-eval --policy.path="$SMOLVLA_CHECKPOINT" \
            --env.type="$BENCHMARK" "${SMOLVLA_EVAL_FLAGS[@]}" \
            --eval.batch_size=1 --eval.n_episodes=1 --eval.use_async_envs=false \
            --policy.device=cpu --output_dir=/artifacts/eval \
        && python3 scripts/ci/parse_eval_metrics.py \
            --artifacts-dir "$ARTIFACTS_DIR/smolvla/eval" \
            --env "$BENCHMARK" --task "$TASK" --policy "$SMOLVLA_CHECKPOINT"
}

smolvla_train() {
    artifacts_folder "$ARTIFACTS_DIR/huggingface" \
        && run_image --volume "$ARTIFACTS_DIR/train:/artifacts" "${HF_ARGS[@]}" "$IMAGE" \
            lerobot-train --policy.path=lerobot/smolvla_base --policy.load_vlm_weights=true \
            --policy.scheduler_decay_steps=25000 --policy.freeze_vision_encoder=false \
            --policy.train_expert_only=false --policy.push_to_hub=false --policy.device=cpu \
            --dataset.root=/artifacts/dataset --dataset.episodes=[0] \
            --dataset.use_imagenet_stats=false \
            --env.type="$BENCHMARK" "${SMOKE_ENV_FLAGS[@]}" "${SMOLVLA_TRAIN_FLAGS[@]}" \
            --steps=1 --batch_size=1 --eval_freq=1 --save_freq=1 \
            --eval.n_episodes=1 --eval.batch_size=1 --eval.use_async_envs=false \
            --output_dir=/artifacts/smolvla_run \
        && test -f "$ARTIFACTS_DIR/train/smolvla_run/checkpoints/last/pretrained_model/model.safetensors" \
        && python3 scripts/ci/parse_eval_metrics.py \
            --artifacts-dir "$ARTIFACTS_DIR/train/smolvla_run/eval/step_1" \
            --env "$BENCHMARK" --task "$TASK" --policy smolvla
}

# The SmolVLA steps, in the workflow's order; the stand-ins need the recorded episodes.
run_smolvla_steps() {
    local recorded="$1" ready=1
    hf_run_args
    if [ "${SMOLVLA_STANDINS:-1}" = 1 ]; then
        ready=0
        if [ "$recorded" -eq 1 ]; then
            step "$BENCHMARK" "SmolVLA stand-ins (local only)" smolvla_standins && ready=1
        fi
    fi
    [ "$ready" -eq 1 ] || return 0
    step "$BENCHMARK" "SmolVLA eval (1 episode)" smolvla_eval || true
    if [ "$recorded" -eq 1 ]; then
        step "$BENCHMARK" "SmolVLA train 1 step + in-loop eval" smolvla_train || true
    fi
}

# --- Running one benchmark ---------------------------------------------------------------------

# run_benchmark <matrix line>
run_benchmark() {
    local words help
    IFS="$FIELD_SEP" read -r BENCHMARK TASK POLICY words SMOLVLA_CHECKPOINT smolvla_eval smolvla_train help <<<"$1"
    IFS="$WORD_SEP" read -r -a SMOKE_ENV_FLAGS <<<"$words"
    IFS="$WORD_SEP" read -r -a SMOLVLA_EVAL_FLAGS <<<"$smolvla_eval"
    IFS="$WORD_SEP" read -r -a SMOLVLA_TRAIN_FLAGS <<<"$smolvla_train"
    IFS="$WORD_SEP" read -r -a HELP_COMMANDS <<<"$help"
    IMAGE="${IMAGE_PREFIX}${BENCHMARK}:${IMAGE_TAG}"
    ARTIFACTS_DIR="$ARTIFACTS_ROOT/$BENCHMARK"
    # A fresh folder per run: the eval, the recorder and the trainer refuse or resume old outputs.
    rm -rf "$ARTIFACTS_DIR"
    mkdir -p "$ARTIFACTS_ROOT"
    local built=0 recorded=0
    step "$BENCHMARK" "build $IMAGE" docker_build "$BENCHMARK" "$IMAGE" "$ARTIFACTS_ROOT/build-$BENCHMARK.log" \
        && built=1
    [ "$built" -eq 1 ] || return 0
    step "$BENCHMARK" "smoke eval (default CMD)" smoke_eval || true
    step "$BENCHMARK" "task descriptions" task_descriptions || true
    step "$BENCHMARK" "metrics.json" metrics || true
    if [ "${#HELP_COMMANDS[@]}" -gt 0 ]; then
        step "$BENCHMARK" "${HELP_COMMANDS[*]} --help" help_commands || true
    fi
    step "$BENCHMARK" "record 2 episodes" record && recorded=1
    if [ "$recorded" -eq 1 ]; then
        step "$BENCHMARK" "train 1 step + in-loop eval" train || true
    fi
    if [ -n "$SMOLVLA_CHECKPOINT" ]; then
        run_smolvla_steps "$recorded"
    fi
    IMAGES+=("$IMAGE")
}

# --- Main --------------------------------------------------------------------------------------

main() {
    cd "$REPO"
    start_daemon
    pick_client
    log "Docker client $DOCKER ($("$DOCKER" version --format '{{.Client.Version}}')), daemon $("$DOCKER" version --format '{{.Server.Version}}')"
    BASE_BUILD_S=""
    build_base

    local lines=() line wanted found
    mapfile -t lines < <(matrix_lines)
    [ "${#lines[@]}" -gt 0 ] || die "no matrix entries in $WORKFLOW"
    for wanted in "$@"; do
        found=0
        for line in "${lines[@]}"; do
            [ "${line%%"$FIELD_SEP"*}" = "$wanted" ] && found=1
        done
        [ "$found" -eq 1 ] || die "benchmark '$wanted' is not in the matrix of $WORKFLOW"
    done

    IMAGES=()
    for line in "${lines[@]}"; do
        if [ "$#" -gt 0 ] && [[ " $* " != *" ${line%%"$FIELD_SEP"*} "* ]]; then
            continue
        fi
        run_benchmark "$line"
    done

    # A rebuilt dependency layer leaves the old one (several GB) in BuildKit's cache, where no
    # image uses it. Drop such layers; uv's download cache (a cache mount) and the layers of
    # existing images stay, so the next build is as warm as this one.
    if [ "${PRUNE_BUILD_CACHE:-1}" = 1 ]; then
        log "removing build cache layers no image uses (PRUNE_BUILD_CACHE=0 keeps them)"
        "$DOCKER" builder prune -f --filter type=regular | tail -n 1
    fi

    log "summary"
    if [ -n "$BASE_BUILD_S" ]; then
        printf '%-10s %-36s %5ss  %s\n' base "debootstrap + import $BASE_IMAGE" "$BASE_BUILD_S" ok
    fi
    printf '%s\n' "${SUMMARY[@]}"
    echo
    "$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' "$BASE_IMAGE"
    local image
    for image in "${IMAGES[@]}"; do
        "$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' "$image"
    done
    echo "artifacts: $ARTIFACTS_ROOT"
    return "$FAILED"
}

main "$@"
