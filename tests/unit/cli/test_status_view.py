"""`provision status` at 80 columns: nothing a user needs is cut (addresses, Slurm states, reasons with who and
when, failed checks), large clusters fold into hostlists, and a controller that does not answer is said."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from provision.cli import status_view
from provision.node.health import NodeHealth
from provision.node.software import NodeSoftware
from provision.records import ClusterInfo, NodeInfo
from provision.status import slurm
from provision.status.records import CertifyVerdict, ClusterStatus, NodeStatus, SlurmView

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm" / "status"


def _recorded(name: str) -> SlurmView:
    doc = json.loads((FIXTURES / f"{name}.json").read_text())
    return slurm.parse(doc["stdout"], doc["stderr"], asked="ctl01")


def _status(view: SlurmView, names=("compute01", "compute02", "compute03"), subnet="10.87.0", **overrides) -> \
        ClusterStatus:
    """ctl01 and the compute nodes, every source filled in, as gather makes them."""
    nodes = [NodeInfo(name="ctl01", group="ctl", roles=("controller",), address=f"{subnet}.10", state="running")]
    nodes += [NodeInfo(name=n, group="compute", roles=("compute",), address=f"{subnet}.{11 + i}", state="running")
              for i, n in enumerate(names)]
    statuses = []
    for node in nodes:
        software = NodeSoftware(node.name, "Debian 12", "22.05.8")
        health = NodeHealth(node.name, True, started="2026-11-27T16:05:49+0000", action="none", trigger="service") \
            if node.has_role("compute") else None
        verdict = CertifyVerdict("pass", "quick", "2026-11-27T15:08:49.651+00:00", "20261127T150849Z-quick")
        fields = dict(node=node, slurm=view.nodes.get(node.name), health=health, certify=verdict, software=software)
        fields.update(overrides.get(node.name, {}))
        statuses.append(NodeStatus(**fields))
    cluster = ClusterInfo(name="st22", provider="sandbox", nodes=tuple(nodes))
    return ClusterStatus(cluster=cluster, nodes=tuple(statuses), slurm=view)


def _screen(status: ClusterStatus, width: int = 80) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    console.print(status_view.render(status))
    return console.export_text()


def _rows(screen: str) -> list[dict[str, str]]:
    """The node table read back column by column: each row's cells, their folded lines joined (a new row starts
    where the provider column has a value: it never folds)."""
    lines = screen.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("node "))
    headers = lines[top].split()
    starts = [lines[top].index(h) for h in headers] + [None]
    rows: list[dict[str, str]] = []
    for line in lines[top + 1:]:
        if re.match(r"\d+ nodes[,;] ", line):
            break
        cells = {h: line[starts[i]:starts[i + 1]].strip() for i, h in enumerate(headers)}
        if cells["provider"]:
            rows.append(cells)
        else:
            for header, text in cells.items():
                rows[-1][header] += text
    return rows


def _flat(text: str) -> str:
    """The screen as one line: what wraps onto the next line reads on."""
    return re.sub(r"\s+", " ", text)


HEALTH_FAILED = NodeHealth("compute03", False, failed=("health.munge",), action="drained",
                           reason="hc:munge: munge: Error (gpu-provision-health)",
                           started="2026-11-27T16:06:31+0000", trigger="service")


@pytest.mark.parametrize("fixture", [f"{version}-{case}" for version in ("22.05", "24.11")
                                     for case in ("drain-held-health", "drained-not-responding", "alloc-held-down")])
def test_at_80_columns_nothing_is_cut(fixture):
    view = _recorded(fixture)
    status = _status(view, compute03={"health": HEALTH_FAILED})
    screen = _screen(status)
    lines = screen.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in screen
    for node in status.cluster.nodes:
        assert any(node.address in line and node.name in line for line in lines), node.address  # whole, in its row
    flat = _flat(screen)
    for name, found in view.nodes.items():
        if found.reason:
            assert found.reason in flat, (name, found.reason)  # the whole reason
            assert f"by {found.reason_user} at {found.reason_time.replace('T', ' ')}" in flat  # who and when
    assert "health failed health.munge" in flat and "held in gpu_provision_certify" in flat
    counts = status.counts()
    assert f"4 nodes, 3 in Slurm: {counts['idle']} idle, {counts['alloc']} alloc, {counts['drain']} drain, " \
           f"{counts['down']} down" in screen


def test_each_node_row_carries_its_slurm_state():
    screen = _screen(_status(_recorded("22.05-alloc-held-down")))
    slurm_of = {row["node"]: row["slurm"] for row in _rows(screen)}
    assert slurm_of == {"ctl01": "slurmctld", "compute01": "allocated", "compute02": "idle, maint, reserved,held",
                        "compute03": "down, drain, notresponding"}  # (folded lines joined without their space)
    assert "1 held, 1 not responding" in screen


def test_a_long_address_and_long_node_names_fold_but_stay_whole():
    names = ("gpu-h100-sxm5-node-0001", "gpu-h100-sxm5-node-0002")
    status = _status(_recorded("22.05-drain-held-health"), names=names, subnet="fd00:1234:5678:9abc::ffff:10")
    screen = _screen(status)
    assert max(len(line) for line in screen.splitlines()) <= 80
    assert [(row["node"], row["address"]) for row in _rows(screen)] == [(n.name, n.address)
                                                                        for n in status.cluster.nodes]


def test_a_controller_that_does_not_answer_is_said_and_provider_states_stay():
    view = SlurmView(error="cannot reach the controller ctl01: ctl01 (10.87.0.10:22): connection refused",
                     asked="ctl01")
    screen = _screen(_status(view))
    flat = _flat(screen)
    assert "Slurm: cannot reach the controller ctl01: ctl01 (10.87.0.10:22): connection refused; provider states " \
           "are shown" in flat
    assert [(row["provider"], row["slurm"]) for row in _rows(screen)] == [("running", "no answer")] + \
        [("running", "?")] * 3
    assert "4 nodes; their Slurm states are unknown" in screen


def test_many_nodes_alike_fold_into_hostlist_rows_and_details_into_hostlists():
    names = tuple(f"compute{i:04d}" for i in range(1, 201))
    view = SlurmView(nodes={n: slurm.parse_line(f"{n}|idle|Unknown|Unknown|none") for n in names[:-2]} | {
        n: slurm.parse_line(f"{n}|idle+drain|root|2026-11-27T15:56:18|admin: bad fan") for n in names[-2:]})
    screen = _screen(_status(view, names=names, subnet="10.1.0"))
    assert len(screen.splitlines()) < 30
    assert "compute[0001-0198]" in screen and "10.1.0.[11-208]" in screen
    assert "compute[0199-0200]" in screen and "drained by root at 2026-11-27 15:56:18: admin: bad fan" in screen


def test_text_from_slurm_is_printed_as_it_is():
    reason = "[bold]admin[/bold] :thumbs_up: C:\\dir\\"
    view = SlurmView(nodes={"compute01": slurm.parse_line(f"compute01|idle+drain|root|2026-11-27T15:56:18|{reason}")})
    assert reason in _flat(_screen(_status(view, names=("compute01",))))


def test_the_json_record_has_every_node_and_field():
    status = _status(_recorded("22.05-drain-held-health"), compute03={"health": HEALTH_FAILED})
    document = json.loads(json.dumps(status.to_dict()))
    assert [n["name"] for n in document["nodes"]] == ["ctl01", "compute01", "compute02", "compute03"]
    third = document["nodes"][3]
    assert third["address"] == "10.87.0.13" and third["state"] == "running" and third["group"] == "compute"
    assert third["slurm"]["reason"].startswith("hc:munge: ") and third["slurm"]["reason_user"] == "root"
    assert third["slurm"]["flags"] == ["drain"] and third["slurm"]["category"] == "drain"
    assert third["health"]["failed"] == ["health.munge"] and third["certify"]["verdict"] == "pass"
    assert document["nodes"][2]["slurm"]["held"] is True
    assert document["software"]["ctl01"] == {"node": "ctl01", "os": "Debian 12", "slurm": "22.05.8", "error": None}
    assert document["counts"]["drain"] == 2 and document["slurm"]["answered"] is True
