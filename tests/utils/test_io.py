import json
import math

from lerobot.utils.io import to_strict_json, write_json_atomic


def test_strict_json_replaces_non_finite_numbers():
    cleaned = to_strict_json({"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": -math.inf}})
    assert cleaned == {"a": None, "b": [None, 1.5], "c": {"d": None}}


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    path = write_json_atomic({"x": float("nan")}, tmp_path / "out" / "eval_info.json")
    assert json.loads(path.read_text()) == {"x": None}
    assert [p.name for p in path.parent.iterdir()] == ["eval_info.json"]
