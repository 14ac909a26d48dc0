"""aws validation.findings, table-driven: (change to a valid aws spec, the exact finding it must give)."""
from __future__ import annotations

import copy

import pytest

from provision.providers.aws import validation
from provision.spec.model import ClusterSpec
from provision.spec.validators import semantic_findings

BASE = {
    "name": "demo",
    "provider": {"type": "aws", "region": "us-east-1", "availability_zone": "us-east-1a",
                 "ssh_ingress_cidr": "203.0.113.7/32", "ami": {"id": "ami-0123456789abcdef0"}},
    "ssh": {"user": "ubuntu"},
    "node_groups": [
        {"name": "head", "roles": ["controller"], "count": 1, "instance_type": "m7i.2xlarge"},
        {"name": "gpu", "roles": ["compute"], "count": 4, "instance_type": "p5.48xlarge",
         "gpu": {"model": "H100-SXM", "count": 8}, "interconnect": {"type": "efa", "nics": 32}},
    ],
}


def _spec(*changes) -> ClusterSpec:
    data = copy.deepcopy(BASE)
    for change in changes:
        change(data)
    return ClusterSpec.model_validate(data)


def _set(path: str, value):
    """A change that sets data[path] (dotted, list indexes as numbers); value None deletes the key."""
    def change(data):
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        node = data
        for key in keys[:-1]:
            node = node[key] if isinstance(key, int) else node.setdefault(key, {})
        if value is None:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
    return change


def test_the_base_spec_is_clean():
    spec = _spec()
    assert validation.findings(spec) == []
    assert semantic_findings(spec) == []


@pytest.mark.parametrize("parameter", [
    "/aws/service/debian/release/12/latest/amd64", "/aws/service/debian/release/12/latest/arm64",
    "/aws/service/debian/release/13/latest/amd64", "/aws/service/debian/release/trixie/latest/arm64",
    "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
    "/aws/service" + "/x" * 13,  # 15 levels, SSM's most
    "/golden-ami/latest",  # the account's own parameter: a pipeline's latest image
])
def test_parameters_public_or_private_are_clean(parameter):
    assert validation.findings(_spec(_set("provider.ami", {"ssm_parameter": parameter}))) == []


def test_other_providers_get_no_aws_findings():
    spec = ClusterSpec.model_validate({"name": "s", "provider": {"type": "sandbox"}, "node_groups": [
        {"name": "n", "roles": ["controller", "compute"], "count": 1}]})
    assert validation.findings(spec) == []


CASES = [
    # instance types and GPUs
    ([_set("node_groups.1.instance_type", None)],
     "error: node_groups[1].instance_type: group 'gpu' has none; the aws provider needs one per group; set "
     "instance_type, e.g. p5.48xlarge (8x H100) or m7i.2xlarge for a controller"),
    ([_set("node_groups.0.instance_type", "m7i-2xlarge")],
     "error: node_groups[0].instance_type: 'm7i-2xlarge' is not an EC2 instance type name; write family.size, e.g. "
     "p5.48xlarge"),
    ([_set("node_groups.1.gpu.count", 4)],
     "error: node_groups[1].gpu.count: 4 does not match p5.48xlarge, which has 8x H100-SXM; set gpu.count: 8"),
    ([_set("node_groups.1.instance_type", "p4d.24xlarge"), _set("node_groups.1.interconnect.nics", 4)],
     "error: node_groups[1].gpu.model: 'H100-SXM' does not match p4d.24xlarge, which has A100-SXM-40GB; set "
     "gpu.model: A100-SXM-40GB, or use instance_type p5.48xlarge for 8x H100-SXM"),
    ([_set("node_groups.1.gpu", None)],
     "error: node_groups[1].gpu: is missing, but p5.48xlarge has 8x H100-SXM; add gpu: {model: H100-SXM, count: 8}"),
    ([_set("node_groups.1.instance_type", "c7i.48xlarge"), _set("node_groups.1.interconnect", None)],
     "error: node_groups[1].instance_type: 'c7i.48xlarge' has no GPUs but the group declares 8x H100-SXM; use "
     "p5.48xlarge, or remove gpu"),
    ([_set("node_groups.1.instance_type", "g4dn.12xlarge"), _set("node_groups.1.gpu", {"model": "L4", "count": 4}),
      _set("node_groups.1.interconnect", None)],
     "warning: node_groups[1].instance_type: 'g4dn.12xlarge' is not in the tool's table of GPU instance types, so "
     "4x L4 cannot be checked here; preflight checks the GPUs on the nodes; known types are p5/p5e/p5en, "
     "p4d/p4de, g5, g6 and g6e"),
    # capacity
    ([_set("node_groups.1.capacity", "reservation")],
     "error: node_groups[1].capacity_reservation_id: is missing while capacity is 'reservation'; set it to the "
     "reservation's id (cr-...), or use capacity: on-demand"),
    ([_set("node_groups.1.capacity", "spot"), _set("node_groups.1.capacity_reservation_id", "cr-0123456789abcdef0")],
     "error: node_groups[1].capacity_reservation_id: 'cr-0123456789abcdef0' conflicts with capacity: spot; spot "
     "instances cannot launch into a capacity reservation; remove capacity_reservation_id, or set capacity: "
     "reservation"),
    ([_set("node_groups.1.capacity_reservation_id", "cr-0123456789abcdef0")],
     "error: node_groups[1].capacity: is 'on-demand' but capacity_reservation_id 'cr-0123456789abcdef0' is set; set "
     "capacity: reservation, or remove the id"),
    ([_set("node_groups.1.capacity", "reservation"), _set("node_groups.1.capacity_reservation_id", "res-1")],
     "error: node_groups[1].capacity_reservation_id: 'res-1' is not a capacity reservation id; copy the id from the "
     "EC2 console, e.g. cr-0123456789abcdef0"),
    ([_set("node_groups.0.capacity", "spot")],
     "warning: node_groups[0].capacity: is spot for the controller; one interruption stops the whole cluster; use "
     "on-demand for the controller group"),
    # EFA
    ([_set("node_groups.1.interconnect.nics", 8)],
     "error: node_groups[1].interconnect.nics: 8 does not match the 32 EFA interfaces of p5.48xlarge, which the "
     "provider attaches all of; set nics: 32"),
    ([_set("node_groups.1.instance_type", "g5.xlarge"), _set("node_groups.1.gpu", {"model": "A10G", "count": 1}),
      _set("node_groups.1.interconnect.nics", 1)],
     "error: node_groups[1].interconnect.type: efa on g5.xlarge, which has no EFA interface; use g5.8xlarge or "
     "larger, or interconnect type: none"),
    ([_set("node_groups.1.interconnect", None)],
     "warning: node_groups[1].interconnect.type: is none, but p5.48xlarge has 32 EFA interfaces; NCCL between its "
     "nodes would run over TCP; set interconnect: {type: efa, nics: 32}"),
    ([_set("node_groups.1.interconnect", {"type": "infiniband", "nics": 8})],
     "error: node_groups[1].interconnect.type: infiniband does not exist on AWS; use type: efa on an EFA-capable "
     "type (p5, p4d, large g5/g6/g6e)"),
    # network
    ([_set("provider.ssh_ingress_cidr", "0.0.0.0/0")],
     "warning: provider.ssh_ingress_cidr: 0.0.0.0/0 is open to the world: any host on the internet can reach port "
     "22; narrow it to your own address, e.g. 203.0.113.7/32"),
    ([_set("provider.region", "us-east")],
     "error: provider.region: 'us-east' is not an AWS region name; use a region such as us-east-1"),
    ([_set("provider.availability_zone", "eu-west-1a")],
     "error: provider.availability_zone: 'eu-west-1a' is not a zone of region us-east-1; use a zone of us-east-1, "
     "such as us-east-1a"),
    ([_set("provider.vpc_id", "vpc-0123456789abcdef0")],
     "error: provider.subnet_id: is missing; an existing VPC is used together with one of its subnets; set "
     "subnet_id too, or remove both to create a new VPC and subnet"),
    ([_set("provider.vpc_id", "vpc-0123456789abcdef0"), _set("provider.subnet_id", "sn-1")],
     "error: provider.subnet_id: 'sn-1' is not a subnet id; copy the id from the VPC console, e.g. "
     "subnet-0123456789abcdef0"),
    ([_set("provider.subnet_cidr", "10.43.0.0/20")],
     "error: provider.subnet_cidr: 10.43.0.0/20 is not inside vpc_cidr 10.42.0.0/16; use a range inside "
     "10.42.0.0/16, e.g. 10.42.0.0/20"),
    ([_set("provider.subnet_cidr", "10.42.0.0/28")],
     "error: provider.subnet_cidr: 10.42.0.0/28 has 11 usable addresses, too few for 5 nodes plus file system "
     "interfaces; use a larger subnet, e.g. a /20"),
    # image
    ([_set("provider.ami", {"id": "ami-0123456789abcdef0", "ssm_parameter": "/aws/service/x"})],
     "error: provider.ami: gives 2 ways to choose the image (id, ssm_parameter); set exactly one of id, name_filter "
     "(with owner) or ssm_parameter"),
    ([_set("provider.ami", {"name_filter": "Deep Learning Base*"})],
     "error: provider.ami.owner: is missing; a name filter alone matches images anyone can publish; set owner to the "
     "publisher: amazon, or the vendor's account id"),
    ([_set("provider.ami", {"id": "ami-12"})],
     "error: provider.ami.id: 'ami-12' is not an image id; use an id such as ami-0123456789abcdef0"),
    ([_set("provider.ami", {"ssm_parameter": "aws/service/x"})],
     "error: provider.ami.ssm_parameter: 'aws/service/x' is not a parameter path (from the root: names between "
     "single slashes, no slash at the end, at most 15 levels); use the parameter the image's publisher documents, "
     "e.g. /aws/service/debian/release/12/latest/amd64 (Debian 12, x86_64), or one of your account's holding an "
     "image id"),
    ([_set("provider.ami", {"ssm_parameter": "/aws/service/debian/release//latest/amd64"})],
     "error: provider.ami.ssm_parameter: '/aws/service/debian/release//latest/amd64' is not a parameter path (from "
     "the root: names between single slashes, no slash at the end, at most 15 levels); use the parameter the image's publisher "
     "documents, e.g. /aws/service/debian/release/12/latest/amd64 (Debian 12, x86_64), or one of your "
     "account's holding an image id"),
    ([_set("provider.ami", {"ssm_parameter": "/aws/service/debian/release/13/latest/"})],
     "error: provider.ami.ssm_parameter: '/aws/service/debian/release/13/latest/' is not a parameter path (from "
     "the root: names between single slashes, no slash at the end, at most 15 levels); use the parameter the image's publisher "
     "documents, e.g. /aws/service/debian/release/12/latest/amd64 (Debian 12, x86_64), or one of your "
     "account's holding an image id"),
    ([_set("provider.ami", {"ssm_parameter": "/aws/service" + "/x" * 14})],
     "error: provider.ami.ssm_parameter: '/aws/service" + "/x" * 14 + "' is not a parameter path (from the root: "
     "names between single slashes, no slash at the end, at most 15 levels); use the parameter the image's publisher "
     "documents, e.g. /aws/service/debian/release/12/latest/amd64 (Debian 12, x86_64), or one of your account's "
     "holding an image id"),
    # keys and login
    ([_set("provider.key_pair_name", "team-key")],
     "error: provider.key_pair_name: 'team-key' is set but ssh.key_path is not, so the tool would log in with its "
     "generated key, which that key pair does not hold; set ssh.key_path to the key pair's private key, or remove "
     "key_pair_name to import the cluster key"),
    ([_set("ssh.user", "root")],
     "warning: ssh.user: 'root': AWS images log in as their default user and refuse root; set ssh.user to the "
     "image's user (admin on Debian, ubuntu on Ubuntu)"),
    # FSx
    ([_set("provider.fsx_lustre", {"storage_capacity_gib": 3000}), _set("filesystem", {"type": "lustre"})],
     "error: provider.fsx_lustre.storage_capacity_gib: 3000 is not a size FSx for Lustre offers; use 1200 or a "
     "multiple of 2400 (2400, 4800, ...)"),
    ([_set("provider.fsx_lustre", {})],
     "warning: provider.fsx_lustre: creates a Lustre file system but filesystem.type is 'none', so no node mounts "
     "it; set filesystem.type: lustre"),
    ([_set("filesystem", {"type": "lustre"})],
     "error: filesystem.server: lustre needs a server to mount from; add provider.fsx_lustre to create one, or set "
     "filesystem.server"),
]


@pytest.mark.parametrize("changes, expected", CASES, ids=[c[1].split(":")[1].strip() + f"-{i}"
                                                          for i, c in enumerate(CASES)])
def test_finding(changes, expected):
    rendered = [f.render() for f in validation.findings(_spec(*changes))]
    assert rendered == [expected]
