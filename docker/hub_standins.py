"""An offline Hugging Face hub cache standing in for the SmolVLA checkpoints CI downloads.

.github/workflows/benchmark_tests.yml evaluates `pepijn223/smolvla_<benchmark>` and fine-tunes
`lerobot/smolvla_base`, whose VLM is `HuggingFaceTB/SmolVLM2-500M-Video-Instruct`: several GB
from the hub, which docker/build_local.sh cannot reach. It runs the same commands against this
cache instead (HF_HOME, HF_HUB_OFFLINE=1), in which each repo id holds a tiny model of the same
kind:

- the VLM: tests/fixtures/policies/smolvla_vlm, a SmolVLM2 with a few hundred KB of weights;
- `lerobot/smolvla_base`: tests/fixtures/policies/smolvla, a tiny SmolVLA checkpoint that
  LeRobot 0.6.1 itself saved, naming the VLM by its hub id as the real one does;
- each `--checkpoint REPO_ID=DIR`: a checkpoint directory made here (build_local.sh trains a
  tiny SmolVLA for one step on the recorded dataset, with the benchmark's cameras).

The layout is huggingface_hub's (blobs named by content hash, a snapshot of relative symlinks,
refs/main), so `--policy.path=<repo id>` and `from_pretrained(<repo id>)` find the files
offline exactly where a download would have put them. Standard library only: it runs on the
machine that builds the images, like scripts/ci/parse_eval_metrics.py.

    python3 docker/hub_standins.py --hf-home DIR [--checkpoint REPO_ID=DIR ...]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "policies"
VLM_REPO_ID = "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"
BASE_REPO_ID = "lerobot/smolvla_base"
# How the fixtures name the VLM (a path relative to the repository), and what stands for it here.
VLM_FIXTURE_NAME = "tests/fixtures/policies/smolvla_vlm"
# LeRobot's recording of the fixture's outputs, for the tests; no part of a checkpoint.
NOT_IN_CHECKPOINT = {"expected.safetensors"}
# Any fixed 40-hex-digit revision: only refs/main has to name it.
REVISION = "0" * 40


def add_repo(hub_cache: Path, repo_id: str, files: dict[str, bytes]) -> Path:
    """Writes `files` (relative path -> content) as revision REVISION of model repo `repo_id`;
    returns its snapshot directory. A repo already there is replaced."""
    repo = hub_cache / f"models--{repo_id.replace('/', '--')}"
    shutil.rmtree(repo, ignore_errors=True)
    snapshot = repo / "snapshots" / REVISION
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    for relative, content in sorted(files.items()):
        blob = repo / "blobs" / hashlib.sha256(content).hexdigest()
        blob.write_bytes(content)
        link = snapshot / relative
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot


def read_tree(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` (relative path -> content), caches and test records left out."""
    files = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if path.is_file() and ".cache" not in relative.parts and path.name not in NOT_IN_CHECKPOINT:
            files[str(relative)] = path.read_bytes()
    return files


def naming_vlm_by_repo_id(files: dict[str, bytes]) -> dict[str, bytes]:
    """The fixture's JSON files (config.json, the tokenizer step) with the VLM's hub id in
    place of its path in this repository."""
    old, new = VLM_FIXTURE_NAME.encode(), VLM_REPO_ID.encode()
    return {
        name: content.replace(old, new) if name.endswith(".json") else content
        for name, content in files.items()
    }


def parse_checkpoint(value: str) -> tuple[str, Path]:
    repo_id, sep, directory = value.partition("=")
    if not sep or repo_id.count("/") != 1 or not Path(directory, "config.json").is_file():
        raise argparse.ArgumentTypeError(
            f"{value!r}: expected REPO_ID=DIR, DIR holding a checkpoint's config.json"
        )
    return repo_id, Path(directory)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hf-home", type=Path, required=True, help="HF_HOME of the runs; the cache is its hub/"
    )
    parser.add_argument(
        "--checkpoint",
        type=parse_checkpoint,
        action="append",
        default=[],
        metavar="REPO_ID=DIR",
        help="a checkpoint directory to serve as model repo REPO_ID (repeatable)",
    )
    args = parser.parse_args(argv)
    hub_cache = args.hf_home / "hub"
    add_repo(hub_cache, VLM_REPO_ID, read_tree(FIXTURES / "smolvla_vlm"))
    add_repo(hub_cache, BASE_REPO_ID, naming_vlm_by_repo_id(read_tree(FIXTURES / "smolvla")))
    for repo_id, directory in args.checkpoint:
        add_repo(hub_cache, repo_id, read_tree(directory))
    for repo in sorted(hub_cache.glob("models--*")):
        sys.stdout.write(
            f"{repo.name.removeprefix('models--').replace('--', '/')}: {repo / 'snapshots' / REVISION}\n"
        )


if __name__ == "__main__":
    main()
