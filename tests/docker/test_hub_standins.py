"""docker/hub_standins.py: the offline hub cache that stands in for the SmolVLA checkpoints of
the CI workflow when docker/build_local.sh runs without the hub. Checked here with
huggingface_hub's own offline lookup and our VLM resolution, as the commands in the images use
them (the images' runs themselves are in test_images.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from lerobot.configs.vlm_files import resolve_vlm_dir

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "policies"


def load_script():
    spec = importlib.util.spec_from_file_location("hub_standins", REPO / "docker" / "hub_standins.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hub_standins = load_script()


@pytest.fixture
def offline_hf_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hf"


def offline_snapshot(hf_home: Path, repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id, cache_dir=hf_home / "hub", local_files_only=True))


def test_smolvla_base_and_its_vlm_resolve_offline(offline_hf_home):
    hub_standins.main(["--hf-home", str(offline_hf_home)])

    base = offline_snapshot(offline_hf_home, "lerobot/smolvla_base")
    config = json.loads((base / "config.json").read_text())
    assert config["type"] == "smolvla"
    assert config["vlm_model_name"] == "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"  # as in the real one
    preprocessor = (base / "policy_preprocessor.json").read_text()
    assert (
        "tests/fixtures" not in preprocessor and "HuggingFaceTB/SmolVLM2-500M-Video-Instruct" in preprocessor
    )
    assert not (base / "expected.safetensors").exists()
    assert (base / "model.safetensors").read_bytes() == (
        FIXTURES / "smolvla" / "model.safetensors"
    ).read_bytes()

    vlm = resolve_vlm_dir("HuggingFaceTB/SmolVLM2-500M-Video-Instruct", with_weights=True)
    assert vlm.is_relative_to(offline_hf_home / "hub")
    assert (vlm / "model.safetensors").read_bytes() == (
        FIXTURES / "smolvla_vlm" / "model.safetensors"
    ).read_bytes()


def test_a_checkpoint_directory_is_served_under_its_repo_id_and_replaced_on_rerun(offline_hf_home, tmp_path):
    checkpoint = tmp_path / "trained"
    (checkpoint / ".cache").mkdir(parents=True)
    (checkpoint / "config.json").write_text('{"type": "smolvla"}')
    (checkpoint / ".cache" / "scratch").write_text("not part of the checkpoint")
    hub_standins.main(["--hf-home", str(offline_hf_home), "--checkpoint", f"user/vla={checkpoint}"])
    (checkpoint / "config.json").write_text('{"type": "smolvla", "chunk_size": 10}')
    hub_standins.main(["--hf-home", str(offline_hf_home), "--checkpoint", f"user/vla={checkpoint}"])

    snapshot = offline_snapshot(offline_hf_home, "user/vla")
    assert sorted(p.name for p in snapshot.iterdir()) == ["config.json"]
    assert json.loads((snapshot / "config.json").read_text())["chunk_size"] == 10
    assert len(list((offline_hf_home / "hub" / "models--user--vla" / "blobs").iterdir())) == 1


def test_a_bad_checkpoint_argument_names_the_expected_form(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        hub_standins.main(["--hf-home", str(tmp_path), "--checkpoint", f"user/vla={tmp_path / 'missing'}"])
    assert exit_info.value.code == 2
    assert "expected REPO_ID=DIR" in capsys.readouterr().err
