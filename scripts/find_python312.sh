#!/usr/bin/env bash
# Prints the path of a Python 3.12 interpreter, or exits 1: the first candidate that runs and
# is 3.12 of $PYTHON312, pyenv's newest 3.12 and python3.12 on PATH (a pyenv shim of a version
# that is not active does not run). LeRobot 0.6.1 and the GPU machine's python3 are 3.12, and uv
# cannot download one here.
set -uo pipefail
candidates=("${PYTHON312:-}")
if command -v pyenv >/dev/null 2>&1; then
    candidates+=("$(ls -d "$(pyenv root)"/versions/3.12*/bin/python3.12 2>/dev/null | tail -n 1)")
fi
candidates+=("$(command -v python3.12)")
for candidate in "${candidates[@]}"; do
    if [ -n "$candidate" ] && "$candidate" -c "import sys; assert sys.version_info[:2] == (3, 12)" 2>/dev/null; then
        echo "$candidate"
        exit 0
    fi
done
exit 1
