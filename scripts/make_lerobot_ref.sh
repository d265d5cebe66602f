#!/usr/bin/env bash
# LeRobot 0.6.1 itself, in a Python 3.12 venv of its own (default .venv-lerobot-ref): the
# interpreter of the LeRobot bridge tests and of the fidelity tests and fixture scripts. It is
# never a dependency of this project. LeRobot 0.6.1 needs Python 3.12: set PYTHON312, or have
# python3.12 on PATH or in pyenv. Exits 1, saying so, when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-.venv-lerobot-ref}"
# The first candidate that runs and is 3.12: $PYTHON312, pyenv's newest 3.12, python3.12 on PATH
# (a pyenv shim of a version that is not active does not run).
candidates=("${PYTHON312:-}")
if command -v pyenv >/dev/null 2>&1; then
    candidates+=("$(ls -d "$(pyenv root)"/versions/3.12*/bin/python3.12 2>/dev/null | tail -n 1 || true)")
fi
candidates+=("$(command -v python3.12 || true)")
python312=""
for candidate in "${candidates[@]}"; do
    if [ -n "$candidate" ] && "$candidate" -c "import sys; assert sys.version_info[:2] == (3, 12)" 2>/dev/null; then
        python312="$candidate"
        break
    fi
done
if [ -z "$python312" ]; then
    echo "make_lerobot_ref.sh: no Python 3.12 found (LeRobot 0.6.1 needs it); set PYTHON312" >&2
    exit 1
fi
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv venv -q -p "$python312" --allow-existing "$dest"
# mujoco 3.3.0, as Meta-World needs, is in the constraints.
uv pip install -q -p "$dest/bin/python" -c requirements/lerobot-ref.txt "lerobot[diffusion]==0.6.1"
echo "$dest/bin/python"
