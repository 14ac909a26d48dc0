"""`provision plan` for aws: resources and an hourly estimate from the dated table, without any API call."""
from __future__ import annotations

from provision.adaptors.aws import Aws
from provision.providers.aws import prices
from provision.providers.aws.provider import AwsProvider
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

SPEC = {
    "name": "demo",
    "provider": {"type": "aws", "region": "us-east-1", "availability_zone": "us-east-1a",
                 "ssh_ingress_cidr": "203.0.113.7/32", "ami": {"id": "ami-0123456789abcdef0"},
                 "fsx_lustre": {"storage_capacity_gib": 2400}},
    "filesystem": {"type": "lustre"},
    "node_groups": [
        {"name": "head", "roles": ["controller"], "count": 1, "instance_type": "m7i.2xlarge"},
        {"name": "gpu", "roles": ["compute"], "count": 4, "instance_type": "p5.48xlarge",
         "gpu": {"model": "H100-SXM", "count": 8}, "interconnect": {"type": "efa", "nics": 32}},
        {"name": "cheap", "roles": ["compute"], "count": 2, "instance_type": "g6.xlarge", "capacity": "spot",
         "gpu": {"model": "L4", "count": 1}, "partition": "l4"},
    ],
}


def _plan(tmp_path, data=SPEC):
    aws = Aws("us-east-1", endpoint_url="http://127.0.0.1:9")
    provider = AwsProvider(ClusterSpec.model_validate(data), ClusterState(tmp_path, "demo"), aws=aws)
    return provider.plan(), aws


def test_plan_lists_every_resource_in_creation_order_without_calling_aws(tmp_path):
    plan, aws = _plan(tmp_path)
    assert [i.kind for i in plan.items] == [
        "claim", "vpc", "internet-gateway", "subnet", "route-table", "security-group", "key-pair", "placement-group",
        "placement-group", "fsx-lustre", "instances", "instances", "instances", "volumes"]
    assert plan.items[0].name == "/gpu-provision/clusters/demo"
    assert [i.name for i in plan.items if i.kind == "placement-group"] == [
        "gpu-provision-demo-<cluster id>-gpu", "gpu-provision-demo-<cluster id>-cheap"]
    gpu = next(i for i in plan.items if i.name == "gpu[01-04]")
    assert gpu.detail == "4 x p5.48xlarge (8x H100-SXM, 32 EFA), on-demand, us-east-1a"
    assert aws.calls == {} and aws._clients == {}
    assert not (tmp_path / "clusters").exists()


def test_plan_prices_come_from_the_dated_table(tmp_path):
    plan, _ = _plan(tmp_path)
    table = prices.table()
    by_name = {i.name: i.hourly_cost_usd for i in plan.items}
    assert by_name["gpu[01-04]"] == round(4 * table.instance("p5.48xlarge"), 4)
    assert by_name["cheap[01-02]"] == round(2 * table.instance("g6.xlarge"), 4)
    assert by_name["7 root volumes"] == round(7 * 200 * 0.08 / 730, 4)
    assert by_name["demo-fsx"] == round(2400 * 0.14 / 730, 4)
    assert plan.hourly_cost_usd == round(sum(v for v in by_name.values() if v is not None), 4)
    assert table.date in plan.notes[0] and "us-east-1" in plan.notes[0]
    assert "group cheap is spot, priced here at on-demand (an upper bound)" in plan.notes


def test_unknown_prices_and_reservations_are_noted_not_guessed(tmp_path):
    data = {**SPEC, "node_groups": [
        {"name": "head", "roles": ["controller"], "count": 1, "instance_type": "r7i.large"},
        {"name": "gpu", "roles": ["compute"], "count": 2, "instance_type": "p5.48xlarge", "capacity": "reservation",
         "capacity_reservation_id": "cr-0123456789abcdef0", "gpu": {"model": "H100-SXM", "count": 8}}]}
    plan, _ = _plan(tmp_path, data)
    instances = [i for i in plan.items if i.kind == "instances"]
    assert [i.hourly_cost_usd for i in instances] == [None, None]
    assert not any(i.kind == "placement-group" for i in plan.items)
    assert any(n.startswith("no price for r7i.large in the table") for n in plan.notes)
    assert any("billed by the reservation" in n for n in plan.notes)
