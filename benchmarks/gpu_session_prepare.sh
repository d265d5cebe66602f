#!/usr/bin/env bash
# Everything a session with a GPU machine does here before asking for it, in one command (about
# 5 minutes on 2 cores): builds .gpu/ and .gpu-train/, runs both GPU checks at toy sizes on the
# CPU in a stand-in for the machine's python3 (gpu_mimic_venv.sh), then checks that each call's
# carry, as the smoke runs left it, fits the 64 MiB limit beside the repository. Exits non-zero,
# saying what failed, when anything would fail on device time. Then run what
# benchmarks/README.md's "The next GPU machine" says, in its order.
#
#   bash benchmarks/gpu_session_prepare.sh
set -uo pipefail
cd "$(dirname "$0")/.."
limit=$((64 * 1024 * 1024))
failed=()
bash benchmarks/gpu_check_prepare.sh >/tmp/gpu_check_prepare.log 2>&1 || failed+=("gpu_check_prepare.sh (/tmp/gpu_check_prepare.log)")
bash benchmarks/gpu_train_check_prepare.sh >/tmp/gpu_train_check_prepare.log 2>&1 ||
    failed+=("gpu_train_check_prepare.sh (/tmp/gpu_train_check_prepare.log)")
python=$(bash benchmarks/gpu_mimic_venv.sh | tail -n 1) || failed+=("gpu_mimic_venv.sh")
# What the checks install and log there, as on a fresh machine.
rm -rf /tmp/site /tmp/gpu_train_site /tmp/gpu_check_smoke /tmp/gpu_train_check_smoke
PYTHON="$python" GPU_CHECK_SMOKE=1 GPU_CHECK_STEPS="ceiling vla sweep measure" OUT=/tmp/gpu_check_smoke \
    bash benchmarks/gpu_check.sh >/dev/null 2>&1
grep "^=== .*exit" /tmp/gpu_check_smoke/gpu_check.log
grep -q "^=== .*exit [1-9]" /tmp/gpu_check_smoke/gpu_check.log && failed+=("gpu_check.sh smoke (/tmp/gpu_check_smoke)")
PYTHON="$python" TRAIN_CHECK_DEVICE=cpu TRAIN_CHECK_POLICIES=act TRAIN_CHECK_SHORT=1 TRAIN_CHECK_LONG=2 \
    OUT=/tmp/gpu_train_check_smoke bash benchmarks/gpu_train_check.sh >/dev/null 2>&1
grep "^=== .*exit" /tmp/gpu_train_check_smoke/gpu_train_check.log
grep -q "^=== .*exit [1-9]" /tmp/gpu_train_check_smoke/gpu_train_check.log &&
    failed+=("gpu_train_check.sh smoke (/tmp/gpu_train_check_smoke)")
rm -rf .gpu-train/reach256/.cache # our frame cache, decoded by the smoke run: the device decodes its own
# What travels besides the carried folder: tracked files and untracked ones git does not ignore.
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- | tail -n 1 | cut -f1)
for carried in .gpu .gpu-train; do
    size=$(du -sb "$carried" 2>/dev/null | cut -f1)
    total=$((tree + ${size:-0}))
    echo "$carried: $((${size:-0} / 1000000)) MB + repository $((tree / 1000000)) MB = $((total / 1000000)) MB (limit 67 MB)"
    [ "$total" -lt "$limit" ] || failed+=("$carried does not fit one call")
done
if [ "${#failed[@]}" -gt 0 ]; then
    printf 'not ready: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "ready: carry .gpu-train for gpu_train_check.sh, then .gpu for gpu_check.sh"
