"""`lerobot-serve-policy`: serve a policy to evaluators over openpi's WebSocket protocol.

    lerobot-serve-policy --policy.path=<checkpoint> --port=8000
    lerobot-eval --policy.type=websocket --policy.port=8000 --env.type=libero ...

openpi's own client (`openpi_client.WebsocketClientPolicy`) works against it too. Requests
from many evaluators (shards, Ray actors, several runs) that arrive within --batch_timeout_ms
go through the policy as one batch; each client's episodes keep their own policy state.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.parser import USAGE_EXIT_CODE
from lerobot.configs.serve import ServeConfig
from lerobot.scripts.cli import start_cli
from lerobot.utils.errors import ConfigError

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    cfg = start_cli(ServeConfig, argv, prog="lerobot-serve-policy", description=__doc__)
    if isinstance(cfg, int):
        return cfg
    try:
        server = build_server(cfg)
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    try:
        server.serve_forever()
    except OSError as exc:  # the port is taken, or the address is not this machine's
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        sys.stderr.write(f"--host={cfg.host} --port={cfg.port}: cannot listen there ({reason})\n")
        return USAGE_EXIT_CODE
    return 0


def build_server(cfg: ServeConfig):
    """The policy (with its processors) behind a server, not yet listening."""
    from lerobot.policies.factory import make_policy, make_pre_post_processors
    from lerobot.serving.server import PolicyServer

    policy = make_policy(cfg.policy, env_cfg=cfg.env)
    preprocessor, postprocessor = make_pre_post_processors(cfg.policy)
    action_dim = cfg.env.action_space().shape[0] if cfg.env is not None else None
    try:
        return PolicyServer(
            policy,
            host=cfg.host,
            port=cfg.port,
            api_key=cfg.api_key,
            allowed_origins=cfg.allowed_origins,
            max_frame_mb=cfg.max_frame_mb,
            max_batch=cfg.max_batch,
            batch_timeout_ms=cfg.batch_timeout_ms,
            preprocessor=preprocessor,
            postprocessor=postprocessor,
            use_amp=cfg.policy.use_amp,
            action_dim=action_dim,
        )
    except NotImplementedError as exc:
        raise ConfigError(f"--policy.type={cfg.policy.type}: cannot be served ({exc})") from None


if __name__ == "__main__":
    sys.exit(main())
