"""Measured batch sizes, remembered per workload on this machine."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest

from lerobot.evaluation.run.batching.remembered import (
    BatchRate,
    RememberedBatchSize,
    batch_sizes_file,
    machine_description,
    remember_batch_size,
    remembered_batch_size,
)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LEROBOT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def workload(task="push-v3", device="cpu"):
    return {
        "env": {"type": "metaworld", "task": task, "obs_type": "state"},
        "policy": {"type": "random", "device": device, "use_amp": False},
        "machine": machine_description(device),
    }


def measured(batch_size, rates=None, row_groups=1):
    rates = tuple(BatchRate(b, r) for b, r in (rates or {batch_size: 1000.0}).items())
    return RememberedBatchSize(batch_size, row_groups, "2026-12-06T13:00:00+00:00", rates)


def test_a_measurement_is_found_again_for_its_workload_only(cache_dir):
    assert remembered_batch_size(workload()) is None
    remembered = measured(4, {2: 1500.0, 4: 2000.0, 8: 1990.0}, row_groups=2)
    path = remember_batch_size(workload(), remembered)
    assert path == cache_dir / "eval_batch_sizes.json" == batch_sizes_file()
    assert remembered_batch_size(workload()) == remembered
    assert remembered_batch_size(workload(task="reach-v3")) is None


def test_independent_rows_are_remembered_and_an_older_file_without_them_reads_as_lockstep(cache_dir):
    rates = (BatchRate(4, 900.0), BatchRate(4, 1000.0, independent_rows=True))
    remembered = RememberedBatchSize(4, 1, "2026-12-06T13:00:00+00:00", rates, independent_rows=True)
    remember_batch_size(workload(), remembered)
    assert remembered_batch_size(workload()) == remembered
    entries = json.loads(batch_sizes_file().read_text())
    for entry in entries:  # as the first version of the file wrote them
        del entry["independent_rows"]
        for rate in entry["measured"]:
            del rate["independent_rows"]
    batch_sizes_file().write_text(json.dumps(entries))
    assert remembered_batch_size(workload()) == dataclasses.replace(
        remembered, independent_rows=False, rates=(BatchRate(4, 900.0), BatchRate(4, 1000.0))
    )


def test_measuring_again_replaces_the_workload_s_entry_and_keeps_the_others(cache_dir):
    remember_batch_size(workload(), measured(4))
    remember_batch_size(workload(task="reach-v3"), measured(8))
    remember_batch_size(workload(), measured(2))
    entries = json.loads(batch_sizes_file().read_text())
    assert sorted(entry["batch_size"] for entry in entries) == [2, 8]
    assert remembered_batch_size(workload()).batch_size == 2


def test_the_machine_is_its_cores_and_cpu_model(cache_dir):
    described = machine_description("cpu")
    assert described["cores"] >= 1 and described["cpu"] and "gpu" not in described


@pytest.mark.parametrize("content", ["{not json", '{"a": 1}', "[1, 2]"])
def test_a_damaged_file_is_ignored_with_a_warning_and_replaced(cache_dir, caplog, content):
    cache_dir.mkdir(parents=True)
    batch_sizes_file().write_text(content)
    with caplog.at_level(logging.WARNING):
        assert remembered_batch_size(workload()) is None
    remember_batch_size(workload(), measured(4))
    assert remembered_batch_size(workload()).batch_size == 4


def test_an_entry_missing_its_fields_is_no_measurement(cache_dir):
    cache_dir.mkdir(parents=True)
    batch_sizes_file().write_text(json.dumps([{"workload": workload(), "batch_size": "many"}]))
    assert remembered_batch_size(workload()) is None
