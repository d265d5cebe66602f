"""Which lerobot a machine runs: its version and a digest of its code.

A Ray driver and its workers must run the same code: a node with an older install computes
other results (or fails in ways that look like the policy's), and nothing in Ray checks it. The
driver asks every node before any episode runs (`ray_backend.check_nodes_run_this_code`).

`describe_this_machine` uses the standard library only, and Ray ships this module by value: it
runs on a node even where lerobot is missing or broken, and says so instead of failing to unpickle.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import socket
import sys
from pathlib import Path
from typing import Any

PACKAGE = "lerobot"
DIGEST_LENGTH = 12


def describe_this_machine() -> dict[str, Any]:
    """{hostname, python, version, code, package_dir} of the lerobot this interpreter imports;
    version and code are None where it has none. A dict: it crosses process boundaries."""
    package_dir = _package_dir()
    return {
        "hostname": socket.gethostname(),
        "python": sys.executable,
        "version": _version(),
        "code": code_digest(package_dir) if package_dir is not None else None,
        "package_dir": str(package_dir) if package_dir is not None else None,
    }


def code_digest(package_dir: Path) -> str:
    """sha256 over the package's .py files (relative path and content, in path order): equal
    for an editable checkout and a wheel of the same commit, different after any edit."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        digest.update(path.relative_to(package_dir).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:DIGEST_LENGTH]


def _package_dir() -> Path | None:
    """Where `import lerobot` would load from, found without importing it."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(os.fspath(next(iter(spec.submodule_search_locations))))


def _version() -> str | None:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
