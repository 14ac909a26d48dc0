"""The sandbox record round-trips through the private state file, and a bad file is a clear error."""
from __future__ import annotations

import json
import stat

import pytest

from provision.errors import StateError
from provision.providers.sandbox import record
from provision.providers.sandbox.record import NodeRecord, Proc, SandboxRecord
from provision.state import ClusterState


def sample() -> SandboxRecord:
    rec = SandboxRecord(cluster="c1", subnet="10.98.0.0/24", bridge="pv-c1-abcde", bridge_address="10.98.0.1",
                        mirror="http://m.example/debian", security_mirror=None, base="/cache/images/x",
                        proxy=Proc(100, 5000))
    rec.nodes["n1"] = NodeRecord(name="n1", address="10.98.0.10", netns="pv-c1.n1", veth="pvabcde123456",
                                 dir="/state/n1", host_key="ssh-ed25519 AAAA", init=Proc(201, 7000),
                                 launcher=Proc(200, 6999), namespaces={"pid": 4026532000})
    return rec


def test_round_trip_keeps_nested_processes(tmp_path):
    state = ClusterState(tmp_path, "c1")
    record.save(state, sample())
    loaded = record.load(state)
    assert loaded == sample()
    assert loaded.nodes["n1"].init == Proc(201, 7000)
    assert loaded.proxy_url == "http://10.98.0.1:3142"


def test_file_is_private(tmp_path):
    state = ClusterState(tmp_path, "c1")
    record.save(state, sample())
    mode = stat.S_IMODE((state.path / "sandbox.json").stat().st_mode)
    assert mode == 0o600


def test_missing_record_is_none_and_forget_removes_it(tmp_path):
    state = ClusterState(tmp_path, "c1")
    assert record.load(state) is None
    record.save(state, sample())
    record.forget(state)
    assert record.load(state) is None


def test_other_format_version_is_refused(tmp_path):
    state = ClusterState(tmp_path, "c1")
    state.write("sandbox", {**sample().as_dict(), "version": 99})
    with pytest.raises(StateError, match="format version 99"):
        record.load(state)


def test_malformed_record_names_the_file(tmp_path):
    state = ClusterState(tmp_path, "c1")
    data = sample().as_dict()
    data["nodes"]["n1"]["unexpected"] = 1
    state.write("sandbox", data)
    with pytest.raises(StateError, match="sandbox.json is malformed"):
        record.load(state)
    assert json.loads((state.path / "sandbox.json").read_text())["cluster"] == "c1"
