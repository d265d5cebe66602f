"""The `lerobot-serve-policy` configuration: which policy to serve, where, and how to batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from lerobot.configs.env import EnvConfig
from lerobot.configs.fields import facts
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.utils.errors import ConfigError, require_extra

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
REMOTE_MODULES = ("websockets", "msgpack")
"""What the `remote` extra installs: the server speaks openpi's msgpack frames over WebSocket."""


@dataclass
class ServeConfig:
    policy: PreTrainedConfig | None = None
    """The policy: a LeRobot checkpoint with `--policy.path=<dir or hub repo id>`, or a
    built-in `--policy.type=metaworld_expert|random`."""
    env: EnvConfig | None = None
    """Only for policies that need the env's action space (`--policy.type=random`)."""
    host: str = "127.0.0.1"
    """Address to listen on; anything but localhost needs --api_key."""
    port: int = 8000
    """Port to listen on (0: any free port, logged at startup)."""
    api_key: str | None = field(default=None, metadata=facts(secret=True))
    """Clients must send `Authorization: Api-Key <key>`; required beyond localhost."""
    allowed_origins: list[str] = field(default_factory=list)
    """Web page origins (`https://host:port`) allowed to connect. Browsers send an Origin with
    every WebSocket; evaluators send none. Any connection with an origin not listed is refused,
    so a web page the user opens cannot drive the policy."""
    max_frame_mb: float | None = None
    """Largest request frame accepted, in MiB; a larger one closes its connection (code 1009).
    Unset: twice `--max_batch` rows of the policy's declared inputs as float32, at least 16."""
    max_batch: int = 32
    """Most rows in one policy call, across all clients (a larger request runs alone)."""
    batch_timeout_ms: float = 5.0
    """How long the first request of a batch waits for other clients' requests to join it; a
    batch goes at once when every connected client has a request waiting."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Console logging detail; DEBUG adds a line per request batch."""

    def __post_init__(self) -> None:
        require_extra("lerobot-serve-policy", "remote", REMOTE_MODULES)
        if self.policy is None:
            choices = ", ".join(servable_policy_types())
            raise ConfigError(f"--policy.path or --policy.type: required; types: {choices}")
        if self.policy.connects_to_server:
            raise ConfigError(
                f"--policy.type={self.policy.type}: a server serves a policy it loads itself, not another server"
            )
        if isinstance(self.policy, CheckpointPolicyConfig) and self.policy.pretrained_path is None:
            raise ConfigError(
                f"--policy.type={self.policy.type}: needs trained weights; pass --policy.path=<checkpoint dir or repo id>"
            )
        if not 0 <= self.port < 65536:
            raise ConfigError(f"--port={self.port}: must be a port number in 0..65535 (0: any free port)")
        if self.max_frame_mb is not None and self.max_frame_mb <= 0:
            raise ConfigError(f"--max_frame_mb={self.max_frame_mb}: must be a positive number of MiB")
        if self.max_batch < 1:
            raise ConfigError(f"--max_batch={self.max_batch}: must be a positive integer")
        if self.batch_timeout_ms < 0:
            raise ConfigError(f"--batch_timeout_ms={self.batch_timeout_ms}: must be 0 or more")
        if self.host not in LOOPBACK_HOSTS and not self.api_key:
            raise ConfigError(
                f"--host={self.host}: serving beyond this machine needs --api_key=<secret> (clients pass "
                "--policy.api_key); or keep --host=127.0.0.1"
            )


def servable_policy_types() -> list[str]:
    """The `--policy.type` values a server can serve: all but clients of another server."""
    known = PreTrainedConfig.get_known_choices()
    return [name for name, config_class in known.items() if not config_class.connects_to_server]
