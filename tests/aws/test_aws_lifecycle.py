"""Full up/down of the aws provider against moto: resources, state, idempotence, describe, teardown audit."""
from __future__ import annotations

import json
import stat

import pytest

from aws_support import creates, tagged

from provision.errors import ClaimError, SpecError, UsageError
from provision.providers.aws.ledger import Ledger

pytestmark = pytest.mark.aws


def test_up_creates_the_cluster_and_down_leaves_nothing_tagged(make_spec, provider_for, aws, raw):
    spec = make_spec()
    provider = provider_for(spec)
    provider.check_environment()
    lines: list[str] = []
    cluster = provider.create(lines.append)

    head, gpus = cluster.node("head01"), [n for n in cluster.nodes if n.group == "gpu"]
    assert head.state == "running" and head.address == head.extra["public_ip"]
    assert len(gpus) == 4 and all(n.state == "running" and n.provider_id.startswith("i-") for n in gpus)
    assert all(n.address == n.extra["private_ip"] for n in gpus)  # 33 interfaces: AWS gives no public address
    assert gpus[0].extra["instance_type"] == "p5.48xlarge" and gpus[0].extra["availability_zone"] == "us-east-1a"
    assert gpus[0].cpus == 192 and gpus[0].interconnect_nics == 32
    assert cluster.vars["ssh_jump_host"] == head.address
    assert cluster.ssh_key_path == provider.state.ssh_key_path and cluster.ssh_user == "ec2-user"
    assert any("placement group" in line for line in lines)  # moto lacks them: said, not faked

    vpcs = raw.ec2.describe_vpcs(Filters=[{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}])["Vpcs"]
    assert len(vpcs) == 1
    instances = [i for r in raw.ec2.describe_instances(
        Filters=[{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}])["Reservations"] for i in r["Instances"]]
    gpu_tags = {t["Key"]: t["Value"] for t in next(i for i in instances if i["InstanceType"] == "p5.48xlarge")["Tags"]}
    assert gpu_tags["gpu-provision:node-group"] == "gpu" and gpu_tags["gpu-provision:role"] == "compute"

    teardown = provider.destroy()
    assert teardown.leftovers == [] and len(teardown.removed) >= 5 + 7
    assert tagged(raw, "moto") == []
    assert not (provider.state.path / "aws.json").exists()


def test_state_file_is_private_and_records_every_resource_before_use(make_spec, provider_for, raw):
    provider = provider_for(make_spec())
    provider.create()
    path = provider.state.path / "aws.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    state = json.loads(path.read_text())
    recorded = {r["id"] for r in state["resources"].values() if r.get("id")}
    assert {"vpc", "subnet", "internet-gateway", "route-table", "route-table-association", "security-group",
            "key-pair"} <= set(state["resources"])
    tag = [{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}]
    assert {v["VpcId"] for v in raw.ec2.describe_vpcs(Filters=tag)["Vpcs"]} <= recorded
    assert {s["GroupId"] for s in raw.ec2.describe_security_groups(Filters=tag)["SecurityGroups"]} <= recorded
    live = {i["InstanceId"] for r in raw.ec2.describe_instances(Filters=tag)["Reservations"] for i in r["Instances"]}
    assert live == {r["id"] for r in state["instances"].values()}
    assert state["launches"] == {}
    provider.destroy()


def test_second_up_creates_nothing_new(make_spec, provider_for, aws):
    spec = make_spec()
    first = provider_for(spec)
    first.check_environment()
    before = first.create()
    aws.calls.clear()
    second = provider_for(spec)
    second.check_environment()
    lines: list[str] = []
    after = second.create(lines.append)
    assert creates(aws.calls) == {}
    assert sum(aws.calls.values()) <= 4  # offerings, instance types, one filtered describe
    assert [n.provider_id for n in after.nodes] == [n.provider_id for n in before.nodes]
    assert lines[-1] == "no instance launched: all 5 already exist"
    second.destroy()


def test_describe_reports_live_nodes_then_planned_after_down(make_spec, provider_for, raw):
    provider = provider_for(make_spec())
    provider.create()
    described = provider.describe()
    assert {n.state for n in described.nodes} == {"running"}
    raw.ec2.terminate_instances(InstanceIds=[described.node("gpu02").provider_id])
    assert provider.describe().node("gpu02").state == "absent"
    provider.destroy()
    assert {n.state for n in provider.describe().nodes} == {"planned"}


def test_up_replaces_an_instance_that_disappeared(make_spec, provider_for, raw, aws):
    provider = provider_for(make_spec())
    gone = provider.create().node("gpu03").provider_id
    raw.ec2.terminate_instances(InstanceIds=[gone])
    aws.calls.clear()
    again = provider_for(make_spec())
    cluster = again.create()
    assert cluster.node("gpu03").provider_id != gone and cluster.node("gpu03").state == "running"
    assert aws.calls["ec2:RunInstances"] == 1
    again.destroy()
    assert tagged(raw, "moto") == []


def test_down_is_idempotent_and_audits_before_saying_zero(make_spec, provider_for, raw):
    provider = provider_for(make_spec())
    provider.create()
    provider.destroy()
    lines: list[str] = []
    teardown = provider_for(make_spec()).destroy(lines.append)
    assert teardown.removed == [] and teardown.leftovers == []
    assert lines[-1] == "audit: 0 resources left carrying gpu-provision:cluster=moto"


def test_down_without_state_refuses_then_sweeps_tagged_resources_with_orphans(make_spec, provider_for, raw):
    provider = provider_for(make_spec())
    provider.create()
    (provider.state.path / "aws.json").unlink()  # the state is gone; the tags are not
    before = sorted(tagged(raw, "moto"))
    with pytest.raises(UsageError) as refused:  # they could be another machine's cluster of the same name
        provider_for(make_spec()).destroy()
    assert refused.value.exit_code == 2 and "--orphans" in refused.value.hint
    assert any(":parameter/gpu-provision/clusters/moto" in arn for arn in before)  # the claim: released, not counted
    assert f"{len(before) - 1} resource(s)" in refused.value.message and sorted(tagged(raw, "moto")) == before
    lines: list[str] = []
    teardown = provider_for(make_spec()).destroy(lines.append, orphans=True)
    assert teardown.leftovers == []
    assert any(line.startswith("audit: ") and "removing them" in line for line in lines)
    assert tagged(raw, "moto") == []


def test_up_refuses_a_name_another_machine_holds_in_the_region(make_spec, provider_for, raw, tmp_path):
    first = provider_for(make_spec())
    first.create()
    before = sorted(tagged(raw, "moto"))
    from provision.providers.aws.provider import AwsProvider
    from provision.state import ClusterState

    elsewhere = AwsProvider(make_spec(), ClusterState(tmp_path / "elsewhere", "moto"), aws=first.aws)
    with pytest.raises(ClaimError) as refused:
        elsewhere.create()
    holder = Ledger(first.state).cluster_id
    assert refused.value.exit_code == 3
    assert refused.value.message.startswith(f"cluster 'moto' is claimed in us-east-1 by cluster id {holder}, claimed ")
    assert f":{first.state.path} (/gpu-provision/clusters/moto); nothing was created" in refused.value.message
    assert "choose another cluster name" in refused.value.hint and "--orphans" in refused.value.hint
    assert sorted(tagged(raw, "moto")) == before  # nothing was created, nothing adopted
    assert not (elsewhere.state.path / "aws.json").exists()
    first.destroy()
    assert tagged(raw, "moto") == []


def test_up_refuses_a_name_that_resources_carry_without_a_claim(make_spec, provider_for, raw, tmp_path):
    first = provider_for(make_spec())
    first.create()
    raw.ssm.delete_parameter(Name="/gpu-provision/clusters/moto")  # as a cluster made before claims would be
    before = sorted(tagged(raw, "moto"))
    from provision.providers.aws.provider import AwsProvider
    from provision.state import ClusterState

    elsewhere = AwsProvider(make_spec(), ClusterState(tmp_path / "elsewhere", "moto"), aws=first.aws)
    with pytest.raises(SpecError) as refused:
        elsewhere.create()
    finding = refused.value.findings[0]
    assert finding.path == "name" and "'moto' is already used in us-east-1" in finding.message
    assert "choose another cluster name" in finding.fix
    assert sorted(tagged(raw, "moto")) == before  # nothing was created, nothing adopted
    assert Ledger(elsewhere.state).is_empty()
    first.destroy()
    assert tagged(raw, "moto") == []


def test_existing_vpc_and_subnet_are_used_and_kept(make_spec, provider_for, raw):
    vpc = raw.ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = raw.ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24", AvailabilityZone="us-east-1a")["Subnet"]

    def existing(data):
        data["provider"].update(vpc_id=vpc, subnet_id=subnet["SubnetId"])

    provider = provider_for(make_spec(existing))
    provider.check_environment()
    cluster = provider.create()
    assert all(n.extra["private_ip"].startswith("10.9.1.") for n in cluster.nodes)
    assert provider.destroy().leftovers == []
    assert raw.ec2.describe_subnets(SubnetIds=[subnet["SubnetId"]])["Subnets"]  # not ours to delete
    assert tagged(raw, "moto") == []


def test_fsx_lustre_is_created_mounted_by_name_and_removed(make_spec, provider_for, raw):
    def with_fsx(data):
        data["provider"]["fsx_lustre"] = {"storage_capacity_gib": 2400}
        data["filesystem"] = {"type": "lustre"}

    provider = provider_for(make_spec(with_fsx))
    cluster = provider.create()
    systems = raw.fsx.describe_file_systems()["FileSystems"]
    assert len(systems) == 1 and cluster.vars["fsx_dns_name"] == systems[0]["DNSName"]
    assert systems[0]["StorageCapacity"] == 2400
    provider.destroy()
    assert raw.fsx.describe_file_systems()["FileSystems"] == []
    assert tagged(raw, "moto") == []


def test_run_instances_asks_for_every_efa_and_the_capacity_model(make_spec, provider_for, faults):
    def shapes(data):
        data["node_groups"].append({"name": "a100", "roles": ["compute"], "count": 2, "instance_type": "p4d.24xlarge",
                                    "gpu": {"model": "A100-SXM-40GB", "count": 8}, "capacity": "spot",
                                    "interconnect": {"type": "efa", "nics": 4}})

    sent = faults.spy("RunInstances")
    provider = provider_for(make_spec(shapes))
    provider.create()
    head, p5, p4d = sent
    assert head["NetworkInterfaces"] == [{"SubnetId": head["NetworkInterfaces"][0]["SubnetId"], "Groups":
                                          head["NetworkInterfaces"][0]["Groups"], "DeleteOnTermination": True,
                                          "DeviceIndex": 0, "AssociatePublicIpAddress": True}]
    assert (p5["MinCount"], p5["MaxCount"]) == (4, 4)
    assert len(p5["NetworkInterfaces"]) == 33
    assert sum(i["InterfaceType"] == "efa-only" for i in p5["NetworkInterfaces"]) == 32
    assert sorted({i["NetworkCardIndex"] for i in p5["NetworkInterfaces"]}) == list(range(32))
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in p4d["NetworkInterfaces"]] == [
        (0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "efa-only"), (2, 0, "efa-only"), (3, 0, "efa-only")]
    assert p4d["InstanceMarketOptions"]["MarketType"] == "spot"
    assert p5["MetadataOptions"]["HttpTokens"] == "required"
    assert {t["ResourceType"] for t in p5["TagSpecifications"]} == {"instance", "volume", "network-interface"}
    provider.destroy()


def test_down_that_left_something_is_finished_by_the_next_down_without_orphans(make_spec, provider_for, faults, raw):
    provider = provider_for(make_spec())
    provider.create()
    cluster_id = Ledger(provider.state).cluster_id
    raw.ec2.create_key_pair(KeyName="stray", TagSpecifications=[{"ResourceType": "key-pair", "Tags": [
        {"Key": "gpu-provision:cluster", "Value": "moto"},
        {"Key": "gpu-provision:cluster-id", "Value": cluster_id}]}])  # tagged as the cluster's, not in its state
    faults.fail("DeleteKeyPair", "OperationNotPermitted", after=1)  # the recorded key goes, the stray one stays
    first = provider.destroy()
    assert first.leftovers and "key-pair stray" in first.leftovers[0]
    claim = json.loads(raw.ssm.get_parameter(Name="/gpu-provision/clusters/moto")["Parameter"]["Value"])
    assert claim["id"] == cluster_id  # the name stays claimed while something is left
    second = provider_for(make_spec()).destroy()  # the state document is kept while something is left
    assert second.leftovers == [] and "key-pair stray" in second.removed
    assert tagged(raw, "moto") == []
