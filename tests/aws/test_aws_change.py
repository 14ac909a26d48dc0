"""Changing a running aws cluster against moto: grow a group, shrink it with `retire`, price the nodes."""
from __future__ import annotations

import pytest
from aws_support import SimulatedCrash, tagged

from provision.providers.aws import prices
from provision.providers.aws.ledger import Ledger
from provision.records import NodeInfo
from provision.spec.topology import planned_nodes

pytestmark = pytest.mark.aws

TAG = [{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}]


def _gpu_count(count: int):
    """A spec change: the gpu group has `count` nodes."""
    def change(data):
        data["node_groups"][1]["count"] = count
    return change


def _states(raw, ids: list[str]) -> dict[str, str]:
    """instance id -> state name, read with plain boto3."""
    found = raw.ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in found for i in r["Instances"]}


def _tagged_instances(raw) -> dict[str, str]:
    """Every instance carrying the cluster tag, terminated ones too: id -> state."""
    found = raw.ec2.describe_instances(Filters=TAG)["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in found for i in r["Instances"]}


def _foreign_instance(raw, provider) -> str:
    """An instance in the same account without the cluster's tags (someone else's), made with plain boto3."""
    image = Ledger(provider.state).facts["image"]["id"]
    return raw.ec2.run_instances(ImageId=image, InstanceType="t3.medium", MinCount=1, MaxCount=1)[
        "Instances"][0]["InstanceId"]


def _host_lines(node) -> str:
    """A node's lines as preflight writes them (address, or [address]:port), plus one by name."""
    return (f"{node.address} ssh-ed25519 AAAA{node.name}\n[{node.address}]:2222 ssh-ed25519 AAAA{node.name}\n"
            f"{node.name} ecdsa-sha2-nistp256 AAAA{node.name}\n")


def _known_hosts(provider, cluster) -> None:
    """The cluster's known_hosts: a comment and every node's lines."""
    provider.state.known_hosts_path.write_text("# kept\n" + "".join(_host_lines(n) for n in cluster.nodes))


def test_grow_keeps_every_instance_and_launches_only_the_new_nodes(make_spec, provider_for, aws, faults, raw):
    small = provider_for(make_spec(_gpu_count(2)))
    before = {n.name: n.provider_id for n in small.create().nodes}
    sent = faults.spy("RunInstances")
    aws.calls.clear()
    grown = provider_for(make_spec(_gpu_count(4)))
    cluster = grown.create()
    assert aws.calls["ec2:TerminateInstances"] == 0
    assert [(s["MinCount"], s["MaxCount"], s["InstanceType"]) for s in sent] == [(2, 2, "p5.48xlarge")]
    assert {name: cluster.node(name).provider_id for name in before} == before
    new = {cluster.node(n).provider_id for n in ("gpu03", "gpu04")}
    assert len(new) == 2 and not new & set(before.values())
    assert set(_tagged_instances(raw)) == set(before.values()) | new
    assert {n.state for n in cluster.nodes} == {"running"}
    table = prices.table()
    assert grown.hourly_cost(list(cluster.nodes)) == round(table.instance("m7i.2xlarge") +
                                                            4 * table.instance("p5.48xlarge"), 4)
    grown.destroy()


def test_shrink_retires_exactly_the_named_nodes_and_down_leaves_nothing(make_spec, provider_for, aws, raw):
    full = provider_for(make_spec())
    cluster = full.create()
    ids = {n.name: n.provider_id for n in cluster.nodes}
    foreign = _foreign_instance(raw, full)
    _known_hosts(full, cluster)

    shrunk = provider_for(make_spec(_gpu_count(1)))
    aws.calls.clear()
    lines: list[str] = []
    after = shrunk.create(lines.append)  # the spec shrank, the nodes were not retired yet: nothing is terminated
    assert aws.calls["ec2:TerminateInstances"] == 0 and aws.calls["ec2:RunInstances"] == 0
    assert set(_states(raw, list(ids.values())).values()) == {"running"}
    assert [n.name for n in after.nodes] == ["head01", "gpu01"] == [n.name for n in shrunk.describe().nodes]
    assert any("gpu02, gpu03, gpu04" in line and "keep running" in line for line in lines)

    leaving = ["gpu02", "gpu03", "gpu04"]
    removed = shrunk.retire(leaving)
    assert removed == [f"instance {ids[n]} ({n})" for n in leaving]
    states = _states(raw, list(ids.values()) + [foreign])
    assert {i: s for i, s in states.items() if s == "terminated"} == {ids[n]: "terminated" for n in leaving}
    assert states[ids["head01"]] == states[ids["gpu01"]] == states[foreign] == "running"
    assert set(Ledger(shrunk.state).instances) == {"head01", "gpu01"}
    known = shrunk.state.known_hosts_path.read_text()
    assert known == "# kept\n" + _host_lines(cluster.node("head01")) + _host_lines(cluster.node("gpu01"))
    assert {n.name: n.state for n in shrunk.describe().nodes} == {"head01": "running", "gpu01": "running"}

    aws.calls.clear()
    assert shrunk.retire(leaving) == []  # a second call: nothing recorded any more, nothing asked of AWS
    assert sum(aws.calls.values()) == 0
    assert shrunk.state.known_hosts_path.read_text() == known

    teardown = shrunk.destroy()
    assert teardown.leftovers == [] and tagged(raw, "moto") == []
    assert _states(raw, [foreign])[foreign] == "running"  # not the cluster's: untouched by down too


def test_retire_forgets_a_node_whose_instance_is_gone_and_ignores_unknown_names(make_spec, provider_for, aws, raw):
    provider = provider_for(make_spec(_gpu_count(2)))
    cluster = provider.create()
    _known_hosts(provider, cluster)
    raw.ec2.terminate_instances(InstanceIds=[cluster.node("gpu02").provider_id])
    aws.calls.clear()
    lines: list[str] = []
    assert provider_for(make_spec(_gpu_count(1))).retire(["gpu02", "gpu09"], lines.append) == []
    assert aws.calls["ec2:TerminateInstances"] == 0
    assert any("gpu02" in line and "gone already" in line for line in lines)
    assert set(Ledger(provider.state).instances) == {"head01", "gpu01"}
    assert "gpu02" not in provider.state.known_hosts_path.read_text()
    assert provider.destroy().leftovers == []


def test_retire_never_terminates_an_instance_without_the_cluster_tag(make_spec, provider_for, aws, raw):
    provider = provider_for(make_spec(_gpu_count(2)))
    provider.create()
    foreign = _foreign_instance(raw, provider)
    ledger = Ledger(provider.state)
    ours = ledger.instances["gpu02"]["id"]
    ledger.instances["gpu02"]["id"] = foreign  # the state names an instance that is not the cluster's
    ledger.save()
    lines: list[str] = []
    assert provider_for(make_spec(_gpu_count(1))).retire(["gpu02"], lines.append) == []
    assert aws.calls["ec2:TerminateInstances"] == 0
    assert _states(raw, [foreign, ours]) == {foreign: "running", ours: "running"}
    assert any(foreign in line and "not terminated" in line for line in lines)
    assert "gpu02" not in Ledger(provider.state).instances
    assert provider.destroy().leftovers == [] and tagged(raw, "moto") == []  # the tagged gpu02 goes with down
    assert _states(raw, [foreign])[foreign] == "running"


def test_retire_of_nodes_in_an_open_launch_batch_keeps_create_from_bringing_them_back(make_spec, provider_for,
                                                                                    faults, aws, raw):
    faults.crash_after("RunInstances", call=2)  # the gpu batch was launched, its answer never recorded
    with pytest.raises(SimulatedCrash):
        provider_for(make_spec()).create()
    shrunk = provider_for(make_spec(_gpu_count(2)))
    assert set(Ledger(shrunk.state).launches) == {"gpu"}
    removed = shrunk.retire(["gpu03", "gpu04"])
    assert len(removed) == 2 and all("gpu03" in r or "gpu04" in r for r in removed)
    ledger = Ledger(shrunk.state)
    assert ledger.launches == {} and set(ledger.instances) == {"head01", "gpu01", "gpu02"}
    aws.calls.clear()
    cluster = provider_for(make_spec(_gpu_count(2))).create()
    assert aws.calls["ec2:RunInstances"] == 0
    assert set(Ledger(shrunk.state).instances) == {"head01", "gpu01", "gpu02"}
    assert sorted(_tagged_instances(raw).values()) == ["running"] * 3 + ["terminated"] * 2
    assert {n.state for n in cluster.nodes} == {"running"}
    assert shrunk.destroy().leftovers == []


def _price(itype: str) -> float:
    return prices.table().instance(itype)


def _reserved(data):
    data["node_groups"][1].update(capacity="reservation", capacity_reservation_id="cr-0123456789abcdef0")


def _spot(data):
    data["node_groups"][1]["capacity"] = "spot"


def _node(name: str, group: str, itype: str | None = None) -> NodeInfo:
    return NodeInfo(name=name, group=group, roles=("compute",), extra={"instance_type": itype} if itype else {})


@pytest.mark.parametrize("change, nodes, expected", [
    (None, None, _price("m7i.2xlarge") + 4 * _price("p5.48xlarge")),  # the planned nodes: the spec's types
    (_gpu_count(2), None, _price("m7i.2xlarge") + 2 * _price("p5.48xlarge")),
    (_spot, None, _price("m7i.2xlarge") + 4 * _price("p5.48xlarge")),  # spot: at on-demand, as plan says
    (_reserved, None, _price("m7i.2xlarge")),  # billed by the reservation
    (None, [_node("gpu01", "gpu", "p4d.24xlarge")] * 3, 3 * _price("p4d.24xlarge")),  # the live type wins
    (None, [_node("old01", "gone", "g5.xlarge"), _node("old02", "gone")], _price("g5.xlarge")),
    (None, [_node("gpu01", "gpu", "x9.unknown"), _node("gpu02", "gpu", "g6.xlarge")], _price("g6.xlarge")),
    (None, [_node("gpu01", "gpu", "x9.unknown")] * 2, None),
    (None, [_node("old01", "gone")], None),
    (None, [], None),
])
def test_hourly_cost_prices_each_node_from_the_table(make_spec, provider_for, change, nodes, expected):
    spec = make_spec(change)
    cost = provider_for(spec).hourly_cost(planned_nodes(spec) if nodes is None else nodes)
    assert cost == (None if expected is None else round(expected, 4))
