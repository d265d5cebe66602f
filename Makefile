# Developer shortcuts. Everything runs from the project's virtual environment in .venv.

PYTHON ?= python3
VENV := .venv

.PHONY: install test test-fast test-docker docker-local lint format lock eval-demo lerobot-ref

# uv comes from pip when it is not on PATH yet; an existing .venv is kept and updated (uv
# refuses to create one over it). The lock is used as constraints.
install:
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m pip install uv
	@test -x $(VENV)/bin/python || uv venv $(VENV)
	uv pip install -p $(VENV)/bin/python -c requirements/lock.txt -e ".[metaworld,libero,pusht,aloha,maniskill,robomimic,ray,remote,test,dev,smolvla,pi]"
	uv pip install -p $(VENV)/bin/python --no-deps -r requirements/openpi-client.txt
	uv pip install -p $(VENV)/bin/python --no-deps --target $(VENV)/robosuite-1.4.1 -r requirements/robomimic.txt

# LeRobot 0.6.1 itself in .venv-lerobot-ref (Python 3.12): the tests of the LeRobot bridge and
# of fidelity with LeRobot find it there and are skipped, saying so, without it.
lerobot-ref:
	scripts/make_lerobot_ref.sh .venv-lerobot-ref

# All tests, the slow simulator ones included (as CI runs them).
test:
	$(VENV)/bin/pytest -q -n 2 --dist loadgroup

test-fast:
	$(VENV)/bin/pytest -q -m "not slow"

# Builds the Meta-World image and runs its CI smoke steps (minutes; needs a Docker daemon,
# skipped without one). Not part of `test`. See docs/source/docker.mdx.
test-docker:
	$(VENV)/bin/pytest -m docker -s

# Every benchmark image on a local Debian base, with the CI workflow's smoke steps in each
# (installs and starts Docker when missing; needs root or sudo).
docker-local:
	docker/build_local.sh

lint:
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

format:
	$(VENV)/bin/ruff check --fix . && $(VENV)/bin/ruff format .

# Re-resolve requirements/lock.txt after changing dependencies in pyproject.toml.
lock:
	uv pip compile --universal --all-extras pyproject.toml -o requirements/lock.txt --no-header --no-annotate

# Ten episodes of the scripted expert on push-v3; results and videos in outputs/eval/demo.
eval-demo:
	$(VENV)/bin/lerobot-eval --policy.type=metaworld_expert --env.type=metaworld --env.task=push-v3 \
		--eval.n_episodes=10 --output_dir=outputs/eval/demo
