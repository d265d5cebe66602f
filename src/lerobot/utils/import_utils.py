"""Third-party plugins: packages that add env or policy types, found by their names.

LeRobot's convention (its `register_third_party_plugins`): an installed distribution whose name
starts with `lerobot_env_`, `lerobot_policy_`, `lerobot_robot_`, `lerobot_camera_` or
`lerobot_teleoperator_` is imported at start-up, and registers its config classes on import
(`@EnvConfig.register_subclass("name")`). A plugin that fails to import is named in one warning
line and skipped: a broken package must not stop runs that do not use it.

Installed distributions are found by their `*.dist-info` / `*.egg-info` folders on `sys.path`
(what `importlib.metadata` reads too, but a listing of folder names takes under a millisecond
where reading every distribution's metadata takes a few hundred).
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
import sys

logger = logging.getLogger(__name__)

PLUGIN_PREFIXES = (
    "lerobot_env_",
    "lerobot_policy_",
    "lerobot_robot_",
    "lerobot_camera_",
    "lerobot_teleoperator_",
)


METADATA_SUFFIXES = (".dist-info", ".egg-info")


def plugin_module_names() -> list[str]:
    """Import names of the installed plugin distributions, sorted (`lerobot-env-x` -> `lerobot_env_x`)."""
    names = set()
    for entry in sys.path:
        try:
            folders = os.listdir(entry or ".")
        except OSError:  # a zip file, or a path that does not exist
            continue
        for folder in folders:
            if folder.endswith(METADATA_SUFFIXES):
                # <name>-<version>.dist-info; the name part never holds a dash once normalised
                module = re.sub(r"[-.]+", "_", folder.rsplit(".", 1)[0].split("-")[0]).lower()
                if module.startswith(PLUGIN_PREFIXES):
                    names.add(module)
    return sorted(names)


@functools.cache
def register_third_party_plugins() -> tuple[str, ...]:
    """Import every installed plugin once; returns those that imported."""
    imported = []
    for module in plugin_module_names():
        try:
            importlib.import_module(module)
        except Exception as exc:  # any failure of third-party code: warn in one line, carry on
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            logger.warning(
                "plugin %s failed to import and is skipped (%s%s)",
                module,
                type(exc).__name__,
                f": {reason}" if reason else "",
            )
            continue
        imported.append(module)
        logger.debug("imported plugin %s", module)
    return tuple(imported)
