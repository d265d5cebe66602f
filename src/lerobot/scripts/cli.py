"""The start every config-driven entry point shares: logging, plugins, parsing, `--help`.

Nothing here imports torch, gymnasium or a simulator, so a bad flag or `--help` is answered in
a fraction of a second; the entry points import the heavy parts only after the config parsed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TypeVar

from lerobot.configs.parser import USAGE_EXIT_CODE, CliError, HelpRequested, parse_config
from lerobot.utils.gl import default_mujoco_gl
from lerobot.utils.import_order import import_before_torch
from lerobot.utils.import_utils import register_third_party_plugins
from lerobot.utils.logging_utils import init_logging
from lerobot.utils.threads import prefer_passive_omp_waits

T = TypeVar("T")


def start_cli(config_class: type[T], argv: Sequence[str] | None, prog: str, description: str = "") -> T | int:
    """Set up logging, headless rendering and idle CPU threads that sleep (before torch loads:
    `lerobot.utils.threads`), load plugins, then parse `argv` into `config_class`.

    Returns the config, or the exit code to end with at once: 0 after printing `--help`, 2
    (USAGE_EXIT_CODE) after printing the one-line error of bad input. Logging then follows
    the config's `log_level`.
    """
    init_logging()
    default_mujoco_gl()
    prefer_passive_omp_waits()
    register_third_party_plugins()
    try:
        cfg = parse_config(config_class, argv, prog=prog, description=description)
    except HelpRequested as help_text:
        sys.stdout.write(str(help_text))
        return 0
    except CliError as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    init_logging(cfg.log_level)
    return cfg


def prepare_simulators(cfg: object) -> None:
    """Get `cfg.env`'s simulators going before the work loads torch and the policy.

    The simulator bindings are imported first: this process may step envs beside the policy,
    and they run slower in the other order (`lerobot.utils.import_order`). When the envs will
    run in worker processes, the fork server they come from starts now, so its import of the
    simulator package (about a second for Meta-World) overlaps with loading torch and the
    policy instead of holding up the first task.

    Called once every check of the command line has passed: bad input is still answered
    before any simulator loads.
    """
    env_cfg = getattr(cfg, "env", None)
    if env_cfg is None:
        return
    import_before_torch(env_cfg.native_bindings)
    eval_cfg = getattr(cfg, "eval", None)
    if eval_cfg is None or eval_cfg.backend != "local":
        return
    from lerobot.evaluation.run.batching.layout import BatchLayout  # imports gymnasium

    if BatchLayout.of(eval_cfg).use_async:
        from lerobot.envs.vector import start_fork_server

        start_fork_server(env_cfg.fork_server_preload)
