"""Command lines that crashed or were wrongly accepted (issue 31): each gives its exit code and one `error:` line
at once, with nothing written; and `plan` of a cluster at the documented limit (20,000 nodes) folds its table.

Before: a spec path or -o with a name over 255 bytes gave a traceback; `up --redo bogus` was accepted; an `up`
refused by the provider kept a spec copy that `provision list` showed; `plan` of 20,000 nodes drew 20,000 rows
(22 s here, 90 % of it the table).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_contract import cli, invoke, one_error_line

from provision.cluster import clusters, lifecycle
from provision.errors import SandboxError
from provision.state import ClusterState

STATIC = """\
name: demo
provider: {type: static}
node_groups:
  - {name: ctl, roles: [controller], hosts: ctl01, addresses: [192.0.2.1]}
  - {name: cn, roles: [compute], hosts: "cn[01-02]", addresses: "192.0.2.[2-3]"}
"""
LONG = "x" * 256


@pytest.fixture
def spec(tmp_path, monkeypatch) -> Path:
    """A valid static spec in tmp_path, the state under tmp_path/state."""
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "cluster.yaml"
    path.write_text(STATIC)
    return path


def _tree(top: Path) -> list[Path]:
    return sorted(top.rglob("*"))


LONG_PATHS = [
    ("validate", "{long}.yaml"), ("plan", "{long}.yaml"), ("status", "{long}.yaml"), ("up", "{long}.yaml"),
    ("down", "{long}.yaml"), ("inventory", "{long}.yaml", "-o", "{tmp}/inv"), ("inventory", "{spec}", "-o", "{long}"),
    ("init", "-o", "{tmp}/{long}"), ("schema", "-o", "{long}/schema.json"),
]


@pytest.mark.parametrize("argv", LONG_PATHS, ids=[" ".join(a) for a in LONG_PATHS])
def test_a_path_over_the_filesystem_limits_is_one_clean_error(tmp_path, spec, argv):
    before = _tree(tmp_path)
    words = [a.format(long=LONG, tmp=tmp_path, spec=spec) for a in argv]
    code, err = cli(*words, limit_s=2)
    assert code == 2
    one_error_line(err, "bytes ('xxxxxxx")
    assert "; a name has at most 255; choose a shorter path" in err
    assert _tree(tmp_path) == before


def test_a_whole_path_over_4095_bytes_is_one_clean_error(spec):
    code, err = cli("validate", "a/" * 2100, limit_s=2)
    assert code == 2
    one_error_line(err, "is 4199 bytes long; a path has at most 4095")  # the trailing / dropped


class RefusingProvider:
    """A provider whose environment check refuses, as the sandbox does without root or aws without credentials."""

    def __init__(self, spec, state: ClusterState) -> None:
        self.state = state

    def check_environment(self) -> None:
        raise SandboxError("this machine cannot run the provider (test)", hint="nothing to do")

    def create(self, progress):  # pragma: no cover - never reached: the check refuses first
        raise AssertionError("create after a refused environment check")


@pytest.fixture
def refusing(monkeypatch):
    monkeypatch.setattr(lifecycle, "get_provider", lambda s: RefusingProvider(s, ClusterState.for_spec(s)))


@pytest.mark.parametrize("redo", [["bogus"], ["deploy", "bogus"], ["Deploy"], ["٢"]])
def test_up_refuses_an_unknown_stage_to_redo_before_touching_anything(tmp_path, spec, refusing, redo):
    before = _tree(tmp_path)
    code, err = cli("up", str(spec), *[w for stage in redo for w in ("--redo", stage)], limit_s=2)
    assert code == 2, err
    one_error_line(err, "`up` has no such stage; name one of nodes, preflight, inventory, deploy, certify")
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("redo", [[], ["--redo", "deploy"]])
def test_a_refused_up_keeps_no_spec_copy_and_list_shows_nothing(tmp_path, spec, refusing, redo):
    code, err = cli("up", str(spec), *redo, limit_s=2)
    assert code == 3
    one_error_line(err, "this machine cannot run the provider (test)")
    assert clusters.known() == [] and not (tmp_path / "state" / "clusters").exists()
    code, out, _ = invoke("list", "--json")
    assert code == 0 and json.loads(out) == {"clusters": []}


def _big_spec(tmp_path: Path) -> Path:
    """20,000 static nodes, the most a cluster may have: 1 + 9,999 + 10,000."""
    path = tmp_path / "big.yaml"
    path.write_text("name: big\nprovider: {type: static}\nnode_groups:\n"
                    "  - {name: head, roles: [controller], hosts: head01, addresses: [10.0.0.10]}\n"
                    "  - {name: compute, roles: [compute], hosts: 'compute[00001-09999]',\n"
                    "     addresses: '10.1.[0-98].[1-100],10.2.0.[1-99]'}\n"
                    "  - {name: gpu, roles: [compute], hosts: 'gpu[00001-10000]', addresses: '10.3.[0-99].[1-100]'}\n")
    return path


def test_plan_of_20000_nodes_folds_its_table_and_json_lists_every_node(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    spec = _big_spec(tmp_path)
    code, table, _ = invoke("plan", str(spec), limit_s=10)
    assert code == 0
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert len(rows) == 201, table[:2000]  # head01, 100 runs of compute (one per /24), 100 of gpu
    assert "│ host │ compute[00001-00100] │ 10.1.0.[1-100]  │" in table
    assert "│ host │ compute[09901-09999] │ 10.2.0.[1-99]   │" in table
    code, out, _ = invoke("plan", str(spec), "--json", limit_s=10)
    body = json.loads(out)
    assert len(body["items"]) == 20_000 and len(body["change"]["nodes"]) == 20_000
    assert body["items"][-1] == {"kind": "host", "name": "gpu10000", "detail": "10.3.99.100", "hourly_cost_usd": None}
    assert not (tmp_path / "state").exists()
