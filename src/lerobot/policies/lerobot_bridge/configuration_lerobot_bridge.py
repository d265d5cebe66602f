from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from lerobot.configs.env import EnvConfig
from lerobot.configs.fields import facts
from lerobot.configs.policies import PreTrainedConfig
from lerobot.utils.errors import ConfigError

PYTHON_ENV_VAR = "LEROBOT_BRIDGE_PYTHON"
PROBE_TIMEOUT_S = 60.0
# Run by --policy.python before anything starts: where `lerobot` is, and its version, without
# importing it (importing LeRobot takes seconds; this takes milliseconds).
PROBE = """
import importlib.metadata, importlib.util, json, sys
spec = importlib.util.find_spec("lerobot")
roots = list(spec.submodule_search_locations or []) if spec else []
try:
    version = importlib.metadata.version("lerobot")
except importlib.metadata.PackageNotFoundError:
    version = None
sys.stdout.write(json.dumps({"roots": roots, "version": version, "python": sys.version.split()[0]}))
"""
MIN_LEROBOT = (0, 5)


@PreTrainedConfig.register_subclass("lerobot_bridge")
@dataclass
class LeRobotBridgeConfig(PreTrainedConfig):
    """A checkpoint of any LeRobot policy type, run by LeRobot itself in a child process.

    `--policy.type=lerobot_bridge --policy.path=<dir or hub id> --policy.python=<python>`:
    the child (lerobot/policies/lerobot_bridge/child.py) runs under the Python of an
    environment where LeRobot (0.5 or later) is installed, loads the checkpoint with LeRobot's
    own code and processors, and answers batched requests over its stdin and stdout. This
    process keeps the harness: the envs, batching, retries, resume and reports.
    """

    python: str | None = None
    """The Python of an environment with LeRobot installed (default: $LEROBOT_BRIDGE_PYTHON)."""
    pretrained_path: str | None = None
    """The checkpoint directory (`--policy.path`, a hub id resolved to its local snapshot)."""
    pretrained_revision: str | None = field(default=None, metadata=facts(result_neutral=True))
    """The hub revision of `--policy.path` (`--policy.revision`)."""
    checkpoint_type: str | None = None
    """The checkpoint's LeRobot policy type, read from its config.json (recorded, not a setting)."""
    lerobot_version: str | None = None
    """The LeRobot version --policy.python has, found before the run (recorded, not a setting)."""
    startup_timeout_s: float = field(default=900.0, metadata=facts(result_neutral=True))
    """How long the child may take to import LeRobot and load the checkpoint."""
    request_timeout_s: float = field(default=600.0, metadata=facts(result_neutral=True))
    """A child silent this long on one request is taken as hung: it is restarted and the
    interrupted episodes re-run."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.python is None:
            self.python = os.environ.get(PYTHON_ENV_VAR) or None
        for name in ("startup_timeout_s", "request_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(
                    f"--policy.{name}={getattr(self, name)}: must be a positive number of seconds"
                )

    def check_env(self, env: EnvConfig) -> None:
        """Everything that can fail before a simulator or the child starts, in one line each."""
        if self.pretrained_path is None:
            raise ConfigError(
                "--policy.type=lerobot_bridge: needs --policy.path=<checkpoint dir or hub repo id>"
            )
        self.lerobot_version = probe_lerobot(self.python)
        self._check_inputs(env)

    def _check_inputs(self, env: EnvConfig) -> None:
        """The checkpoint's inputs against what the env provides, by key."""
        saved = json.loads((Path(self.pretrained_path) / "config.json").read_text())
        wanted = set((saved.get("input_features") or {}).keys())
        provided = {key for key, ft in env.policy_features().items() if key != "action"}
        missing = sorted(wanted - provided)
        if missing:
            raise ConfigError(
                f"--policy.path={self.pretrained_path}: the checkpoint reads {', '.join(missing)}, which "
                f"--env.type={env.type} does not provide (it gives {', '.join(sorted(provided))}); "
                "choose the env's --env.obs_type or cameras accordingly"
            )


def python_flag(python: str | None) -> str:
    return f"--policy.python={python}" if python else "--policy.python"


def probe_lerobot(python: str | None) -> str:
    """The LeRobot version `python` imports; a one-line ConfigError when it cannot be used."""
    if not python:
        raise ConfigError(
            f"--policy.type=lerobot_bridge: needs {python_flag(None)}=<the Python of an environment where "
            f"LeRobot is installed> (or ${PYTHON_ENV_VAR})"
        )
    if not (Path(python).is_file() and os.access(python, os.X_OK)):
        raise ConfigError(f"{python_flag(python)}: no such executable")
    try:
        done = subprocess.run(
            [python, "-c", PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=child_env()
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"{python_flag(python)}: cannot run it ({exc})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"{python_flag(python)}: is not a working Python ({last})")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if not found["roots"]:
        raise ConfigError(
            f"{python_flag(python)}: cannot import lerobot; install LeRobot (0.5 or later) there"
        )
    if any(Path(root, "evaluation", "run").is_dir() for root in found["roots"]):
        raise ConfigError(
            f"{python_flag(python)}: imports this harness as lerobot ({found['roots'][0]}), not LeRobot; "
            "pass the Python of an environment where LeRobot is installed"
        )
    version = found["version"] or "unknown"
    numbers = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    if len(numbers) < 2 or numbers < MIN_LEROBOT:
        raise ConfigError(
            f"{python_flag(python)}: has LeRobot {version}; the bridge needs LeRobot 0.5 or later"
        )
    return version


def child_env() -> dict[str, str]:
    """This process's environment, less what would make the child import this harness."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
