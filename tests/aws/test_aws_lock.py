"""Two `provision up` of one cluster at the same moment against moto: one proceeds, the other exits 3 naming it.

Issue 21 saw two concurrent `up` both succeed and make 10 p5 instances, 2 VPCs, 2 security groups and 2 gateways
where the spec asked for 5 instances. Here both real CLI processes are released at the same instant.
"""
from __future__ import annotations

import copy

import pytest
import yaml
from aws_support import BASE, run_together

from provision.providers.aws.ledger import Ledger
from provision.state import ClusterState

pytestmark = pytest.mark.aws


def _tagged_instances(raw) -> list[dict]:
    tag = [{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}]
    return [i for r in raw.ec2.describe_instances(Filters=tag)["Reservations"] for i in r["Instances"]
            if i["State"]["Name"] != "terminated"]


def test_two_concurrent_up_make_the_cluster_once(tmp_path, raw):
    spec = tmp_path / "cluster.yaml"
    data = copy.deepcopy(BASE)
    data["state_dir"] = str(tmp_path / "state")
    spec.write_text(yaml.safe_dump(data))
    # preflight, deploy and certify need real nodes: mark them done so `up` is the nodes and the inventory
    ClusterState(tmp_path / "state", "moto").write("stages", {"done": ["certify", "deploy", "preflight"]})
    outcomes = run_together(tmp_path / "go", [["up", str(spec), "--quiet"]] * 2)

    codes = sorted(code for *_, code in outcomes)
    assert codes == [0, 3], outcomes
    winner = next(pid for pid, _, _, code in outcomes if code == 0)
    _, _, refused, _ = next(o for o in outcomes if o[3] == 3)
    assert f"error: cluster 'moto' is busy: `provision up` (PID {winner} on " in refused and "Traceback" not in refused

    wanted = sum(g["count"] for g in BASE["node_groups"])
    assert len(_tagged_instances(raw)) == wanted == 5  # exactly what the spec asks for
    assert len(raw.ec2.describe_vpcs(Filters=[{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}])["Vpcs"]) == 1
    assert len(Ledger(ClusterState(tmp_path / "state", "moto")).instances) == wanted
