from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from lerobot.configs.env import EnvConfig
from lerobot.configs.fields import facts
from lerobot.configs.policies import PreTrainedConfig
from lerobot.configs.serve import REMOTE_MODULES
from lerobot.utils.errors import ConfigError

ObsFormat = Literal["lerobot", "openpi_libero", "openpi_aloha"]
# The env each openpi layout is made for; "lerobot" sends the batch as the env gives it.
FORMAT_ENV_TYPES = {"openpi_libero": "libero", "openpi_aloha": "aloha"}


@PreTrainedConfig.register_subclass("websocket")
@dataclass
class WebsocketConfig(PreTrainedConfig):
    """A policy served by another process over openpi's WebSocket protocol: an unmodified
    openpi `serve_policy.py` (pi0, pi0.5, pi0-FAST), `lerobot-serve-policy`, or anything
    speaking the same msgpack frames. This process only sends observations and executes the
    returned action chunks; the model, its venv and its GPU live with the server.
    """

    connects_to_server: ClassVar[bool] = True
    extra: ClassVar[str] = "remote"
    extra_modules: ClassVar[tuple[str, ...]] = REMOTE_MODULES

    device: str | None = "cpu"
    """Where the (tiny) batch handling runs; the model runs wherever the server put it."""
    host: str = "127.0.0.1"
    """The policy server's host name or address (or a full ws:// or wss:// URI)."""
    port: int | None = 8000
    """The policy server's port (None when --policy.host is a URI that names one)."""
    api_key: str | None = field(default=None, metadata=facts(secret=True, result_neutral=True))
    """Sent as `Authorization: Api-Key <key>`; required by servers bound beyond localhost."""
    obs_format: ObsFormat = "lerobot"
    """`lerobot`: the policy batch (our keys, uint8 images), one request per step for all env
    slots, as lerobot-serve-policy reads it. `openpi_libero`: openpi's LIBERO example layout,
    one request per env slot (`observation/image`, `observation/wrist_image` resized with
    padding to --policy.resize_size, `observation/state` 8-d, `prompt`). `openpi_aloha`:
    openpi's ALOHA sim example layout, one request per env slot (`images.cam_high`, the top
    camera resized with padding, channels first; `state` 14-d; no prompt)."""
    replan_steps: int | None = None
    """Actions executed from each returned chunk before asking again; unset, the layout's
    client's own: 5 (openpi's LIBERO client), 10 (openpi's ALOHA sim client). A
    lerobot-serve-policy keeps chunking itself and hands each row its action and the rest of
    its queued chunk (at most this many actions when set), counted as taken."""
    resize_size: int = 224
    """Image side the openpi layouts resize (with padding) to; openpi's models read 224."""
    connect_timeout_s: float = 10.0
    """How long one connection attempt may take."""
    request_timeout_s: float = 600.0
    """A server silent this long on a request is taken as lost (its first call may compile)."""
    reconnect_timeout_s: float = 300.0
    """How long a lost server may stay away: its episodes re-run from their seeds once it is
    back; after this long the run stops (finished episodes stay for --eval.resume)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.port is not None and not 0 < self.port < 65536:
            raise ConfigError(f"--policy.port={self.port}: must be a port number in 1..65535")
        if self.replan_steps is not None and self.replan_steps < 1:
            raise ConfigError(f"--policy.replan_steps={self.replan_steps}: must be a positive integer")
        if self.resize_size < 1:
            raise ConfigError(f"--policy.resize_size={self.resize_size}: must be a positive integer")
        for name in ("connect_timeout_s", "request_timeout_s", "reconnect_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(
                    f"--policy.{name}={getattr(self, name)}: must be a positive number of seconds"
                )

    def check_env(self, env: EnvConfig) -> None:
        needed = FORMAT_ENV_TYPES.get(self.obs_format)
        if needed is not None and env.format_type != needed:
            raise ConfigError(
                f"--policy.obs_format={self.obs_format}: made for --env.type={needed}, not {env.type}; "
                "use --policy.obs_format=lerobot"
            )

    @property
    def uri(self) -> str:
        """ws://host:port, as openpi's client builds it."""
        uri = self.host if self.host.startswith(("ws://", "wss://")) else f"ws://{self.host}"
        return f"{uri}:{self.port}" if self.port is not None else uri
