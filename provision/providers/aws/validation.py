"""Checks of an aws spec that need no API call: instance types and GPUs, EFA, capacity, network, image, keys, FSx."""
from __future__ import annotations

import re

from provision.errors import SpecError
from provision.providers.aws.config import DEBIAN_12_AMD64
from provision.providers.aws.instance_types import (GPU_INSTANCE_TYPES, GpuInstanceType, is_cpu_only, known,
                                                    suggestions, well_formed)
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec, NodeGroup
from provision.spec.topology import group_names

_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_RESERVATION = re.compile(r"^cr-[0-9a-f]{8,17}$")
_AMI = re.compile(r"^ami-[0-9a-f]{8,17}$")
_IDS = {"vpc_id": re.compile(r"^vpc-[0-9a-f]{8,17}$"), "subnet_id": re.compile(r"^subnet-[0-9a-f]{8,17}$")}
_FSX_STEP_GIB = 2400
_PARAMETER_LEVELS = 15  # SSM's limit on a parameter name's hierarchy


def findings(spec: ClusterSpec) -> list[Finding]:
    """Every aws-specific finding for a spec; none when the spec uses another provider."""
    if spec.provider.type != "aws":
        return []
    return [f for check in CHECKS for f in check(spec)]


def _size(group: NodeGroup) -> int:
    """How many nodes a group has (0 when its hostlist is unreadable; the common checks report that)."""
    try:
        return len(group_names(group))
    except SpecError:
        return 0


def check_instance_types(spec: ClusterSpec) -> list[Finding]:
    """Every group names a well-formed instance type whose GPUs match the group's gpu block."""
    out: list[Finding] = []
    for i, group in enumerate(spec.node_groups):
        path = f"node_groups[{i}]"
        if not group.instance_type:
            out.append(Finding("error", f"{path}.instance_type", f"group '{group.name}' has none; the aws provider "
                               "needs one per group", "set instance_type, e.g. p5.48xlarge (8x H100) or m7i.2xlarge "
                               "for a controller"))
        elif not well_formed(group.instance_type):
            out.append(Finding("error", f"{path}.instance_type", f"'{group.instance_type}' is not an EC2 instance "
                               "type name", "write family.size, e.g. p5.48xlarge"))
        else:
            out += _gpu_match(path, group, group.instance_type)
    return out


def _gpu_match(path: str, group: NodeGroup, itype: str) -> list[Finding]:
    """The group's gpu block against what the instance type carries."""
    entry, gpu = known(itype), group.gpu
    if entry is not None:
        if gpu is None:
            return [Finding("error", f"{path}.gpu", f"is missing, but {itype} has {entry.gpu_count}x {entry.gpu_model}",
                            f"add gpu: {{model: {entry.gpu_model}, count: {entry.gpu_count}}}")]
        others = [t for t in suggestions(gpu.model, gpu.count) if t != itype]
        alternative = f", or use instance_type {' / '.join(others)} for {gpu.count}x {gpu.model}" if others else ""
        if gpu.model != entry.gpu_model:
            return [Finding("error", f"{path}.gpu.model", f"'{gpu.model}' does not match {itype}, which has "
                            f"{entry.gpu_model}", f"set gpu.model: {entry.gpu_model}{alternative}")]
        if gpu.count != entry.gpu_count:
            return [Finding("error", f"{path}.gpu.count", f"{gpu.count} does not match {itype}, which has "
                            f"{entry.gpu_count}x {entry.gpu_model}", f"set gpu.count: {entry.gpu_count}{alternative}")]
        return []
    if is_cpu_only(itype):
        if gpu is None:
            return []
        fitting = " / ".join(suggestions(gpu.model, gpu.count)) or "a GPU instance type such as p5.48xlarge"
        return [Finding("error", f"{path}.instance_type", f"'{itype}' has no GPUs but the group declares "
                        f"{gpu.count}x {gpu.model}", f"use {fitting}, or remove gpu")]
    if gpu is None:
        return [Finding("warning", f"{path}.instance_type", f"'{itype}' is an accelerator type the tool does not "
                        "know and the group declares no gpu", "add a gpu block so preflight checks the GPUs")]
    return [Finding("warning", f"{path}.instance_type", f"'{itype}' is not in the tool's table of GPU instance "
                    f"types, so {gpu.count}x {gpu.model} cannot be checked here", "preflight checks the GPUs on the "
                    "nodes; known types are p5/p5e/p5en, p4d/p4de, g5, g6 and g6e")]


def check_capacity(spec: ClusterSpec) -> list[Finding]:
    """capacity and capacity_reservation_id agree; spot is not used for the controller."""
    out: list[Finding] = []
    for i, group in enumerate(spec.node_groups):
        path = f"node_groups[{i}]"
        reservation = group.capacity_reservation_id
        if group.capacity == "reservation" and not reservation:
            out.append(Finding("error", f"{path}.capacity_reservation_id", "is missing while capacity is "
                               "'reservation'", "set it to the reservation's id (cr-...), or use capacity: on-demand"))
        elif reservation and group.capacity == "spot":
            out.append(Finding("error", f"{path}.capacity_reservation_id", f"'{reservation}' conflicts with capacity: "
                               "spot; spot instances cannot launch into a capacity reservation",
                               "remove capacity_reservation_id, or set capacity: reservation"))
        elif reservation and group.capacity == "on-demand":
            out.append(Finding("error", f"{path}.capacity", f"is 'on-demand' but capacity_reservation_id "
                               f"'{reservation}' is set", "set capacity: reservation, or remove the id"))
        if reservation and not _RESERVATION.match(reservation):
            out.append(Finding("error", f"{path}.capacity_reservation_id", f"'{reservation}' is not a capacity "
                               "reservation id", "copy the id from the EC2 console, e.g. cr-0123456789abcdef0"))
        if group.capacity == "spot" and "controller" in group.roles:
            out.append(Finding("warning", f"{path}.capacity", "is spot for the controller; one interruption stops "
                               "the whole cluster", "use on-demand for the controller group"))
    return out


def check_efa(spec: ClusterSpec) -> list[Finding]:
    """EFA only on types that have it, with the NIC count the provider attaches; no InfiniBand on AWS."""
    out: list[Finding] = []
    for i, group in enumerate(spec.node_groups):
        path, itype = f"node_groups[{i}].interconnect", group.instance_type or ""
        kind, entry = group.interconnect.type, known(itype)
        if kind == "infiniband":
            out.append(Finding("error", f"{path}.type", "infiniband does not exist on AWS",
                               "use type: efa on an EFA-capable type (p5, p4d, large g5/g6/g6e)"))
        elif kind == "efa" and entry is not None and entry.efa_interfaces == 0:
            bigger = [t.name for t in _same_family(itype) if t.efa_interfaces]
            fix = f"use {bigger[0]} or larger, or interconnect type: none" if bigger else "use type: none"
            out.append(Finding("error", f"{path}.type", f"efa on {itype}, which has no EFA interface", fix))
        elif kind == "efa" and entry is not None and group.interconnect.nics != entry.efa_interfaces:
            out.append(Finding("error", f"{path}.nics", f"{group.interconnect.nics} does not match the "
                               f"{entry.efa_interfaces} EFA interfaces of {itype}, which the provider attaches "
                               "all of", f"set nics: {entry.efa_interfaces}"))
        elif kind == "efa" and itype and entry is None and is_cpu_only(itype):
            out.append(Finding("warning", f"{path}.type", f"efa on {itype}, which the tool does not know as "
                               "EFA-capable", "`provision up` checks it with DescribeInstanceTypes before creating"))
        elif kind == "none" and entry is not None and entry.efa_interfaces and _size(group) > 1:
            out.append(Finding("warning", f"{path}.type", f"is none, but {itype} has {entry.efa_interfaces} EFA "
                               "interfaces; NCCL between its nodes would run over TCP",
                               f"set interconnect: {{type: efa, nics: {entry.efa_interfaces}}}"))
    return out


def _same_family(itype: str) -> list[GpuInstanceType]:
    """Known types of the same family, smallest first."""
    family = itype.split(".", 1)[0]
    return sorted((t for t in GPU_INSTANCE_TYPES.values() if t.name.split(".", 1)[0] == family), key=lambda t: t.vcpus)


def check_network(spec: ClusterSpec) -> list[Finding]:
    """Region and zone agree; an existing VPC comes with its subnet; CIDRs nest; SSH ingress is not the world."""
    p, out = spec.provider, []
    if not _REGION.match(p.region):
        out.append(Finding("error", "provider.region", f"'{p.region}' is not an AWS region name",
                           "use a region such as us-east-1"))
    elif not p.availability_zone.startswith(p.region) or p.availability_zone == p.region:
        out.append(Finding("error", "provider.availability_zone", f"'{p.availability_zone}' is not a zone of "
                           f"region {p.region}", f"use a zone of {p.region}, such as {p.region}a"))
    if p.ssh_ingress_cidr.prefixlen == 0:
        out.append(Finding("warning", "provider.ssh_ingress_cidr", f"{p.ssh_ingress_cidr} is open to the world: any "
                           "host on the internet can reach port 22", "narrow it to your own address, e.g. "
                           "203.0.113.7/32"))
    for field in ("vpc_id", "subnet_id"):
        value = getattr(p, field)
        if value and not _IDS[field].match(value):
            out.append(Finding("error", f"provider.{field}", f"'{value}' is not a {field[:-3]} id",
                               f"copy the id from the VPC console, e.g. {field[:-3]}-0123456789abcdef0"))
    if bool(p.vpc_id) != bool(p.subnet_id):
        missing = "subnet_id" if p.vpc_id else "vpc_id"
        out.append(Finding("error", f"provider.{missing}", "is missing; an existing VPC is used together with one "
                           "of its subnets", f"set {missing} too, or remove both to create a new VPC and subnet"))
    if p.vpc_id:
        given = sorted({"vpc_cidr", "subnet_cidr"} & p.model_fields_set)
        if given:
            out.append(Finding("warning", f"provider.{given[0]}", "is ignored because vpc_id and subnet_id name "
                               "existing ones", f"remove {' and '.join(given)}"))
        return out
    if not 16 <= p.vpc_cidr.prefixlen <= 28:
        out.append(Finding("error", "provider.vpc_cidr", f"{p.vpc_cidr} is not a VPC size AWS allows",
                           "use a prefix between /16 and /28, e.g. 10.42.0.0/16"))
    if not p.subnet_cidr.subnet_of(p.vpc_cidr):
        example = next(p.vpc_cidr.subnets(new_prefix=max(20, p.vpc_cidr.prefixlen)))
        out.append(Finding("error", "provider.subnet_cidr", f"{p.subnet_cidr} is not inside vpc_cidr {p.vpc_cidr}",
                           f"use a range inside {p.vpc_cidr}, e.g. {example}"))
    nodes = sum(_size(g) for g in spec.node_groups)
    usable = p.subnet_cidr.num_addresses - 5  # AWS keeps 5 addresses of every subnet
    if nodes + 8 > usable:
        out.append(Finding("error", "provider.subnet_cidr", f"{p.subnet_cidr} has {usable} usable addresses, "
                           f"too few for {nodes} nodes plus file system interfaces", "use a larger subnet, e.g. a /20"))
    return out


def check_ami(spec: ClusterSpec) -> list[Finding]:
    """Exactly one way of choosing the image; a name filter needs the publisher's account."""
    ami, out = spec.provider.ami, []
    ways = [name for name in ("id", "name_filter", "ssm_parameter") if getattr(ami, name)]
    if len(ways) != 1:
        out.append(Finding("error", "provider.ami", f"gives {len(ways)} ways to choose the image "
                           f"({', '.join(ways) or 'none'})", "set exactly one of id, name_filter (with owner) or "
                           "ssm_parameter"))
    if ami.id and not _AMI.match(ami.id):
        out.append(Finding("error", "provider.ami.id", f"'{ami.id}' is not an image id",
                           "use an id such as ami-0123456789abcdef0"))
    if ami.name_filter and not ami.owner:
        out.append(Finding("error", "provider.ami.owner", "is missing; a name filter alone matches images anyone "
                           "can publish", "set owner to the publisher: amazon, or the vendor's account id"))
    if ami.owner and not ami.name_filter:
        out.append(Finding("warning", "provider.ami.owner", "is only used with name_filter", "remove owner"))
    return out + (_check_parameter(ami.ssm_parameter) if ami.ssm_parameter else [])


def _check_parameter(name: str) -> list[Finding]:
    """A parameter's path: from the root, non-empty levels between single slashes, at most 15 levels. A public one
    (AWS's or an image publisher's, under /aws/service/) or the account's own (a golden image's id kept by a
    pipeline) are read the same way."""
    fix = (f"use the parameter the image's publisher documents, e.g. {DEBIAN_12_AMD64} (Debian 12, x86_64), or one "
           "of your account's holding an image id")
    levels = name[1:].split("/")
    if not name.startswith("/") or "" in levels or len(levels) > _PARAMETER_LEVELS:
        return [Finding("error", "provider.ami.ssm_parameter", f"'{name}' is not a parameter path (from the root: "
                        f"names between single slashes, no slash at the end, at most {_PARAMETER_LEVELS} levels)",
                        fix)]
    return []


def check_keys(spec: ClusterSpec) -> list[Finding]:
    """A named key pair needs the matching private key; AWS images do not let root log in."""
    out: list[Finding] = []
    if spec.provider.key_pair_name and spec.ssh.key_path is None:
        out.append(Finding("error", "provider.key_pair_name", f"'{spec.provider.key_pair_name}' is set but "
                           "ssh.key_path is not, so the tool would log in with its generated key, which that key "
                           "pair does not hold", "set ssh.key_path to the key pair's private key, or remove "
                           "key_pair_name to import the cluster key"))
    if spec.ssh.user == "root":
        out.append(Finding("warning", "ssh.user", "'root': AWS images log in as their default user and refuse root",
                           "set ssh.user to the image's user (admin on Debian, ubuntu on Ubuntu)"))
    return out


def check_fsx(spec: ClusterSpec) -> list[Finding]:
    """FSx for Lustre sizes; the file system is mounted only with filesystem.type lustre; servers are known."""
    fsx, fs, out = spec.provider.fsx_lustre, spec.filesystem, []
    if fsx is not None:
        size = fsx.storage_capacity_gib
        if size != 1200 and size % _FSX_STEP_GIB:
            out.append(Finding("error", "provider.fsx_lustre.storage_capacity_gib", f"{size} is not a size FSx for "
                               "Lustre offers", "use 1200 or a multiple of 2400 (2400, 4800, ...)"))
        if "per_unit_storage_throughput" in fsx.model_fields_set and fsx.deployment_type != "PERSISTENT_2":
            out.append(Finding("warning", "provider.fsx_lustre.per_unit_storage_throughput", "is only used by "
                               f"PERSISTENT_2, not {fsx.deployment_type}", "remove it or use PERSISTENT_2"))
        if fs.type != "lustre":
            out.append(Finding("warning", "provider.fsx_lustre", f"creates a Lustre file system but filesystem.type "
                               f"is '{fs.type}', so no node mounts it", "set filesystem.type: lustre"))
        elif fs.server:
            out.append(Finding("warning", "filesystem.server", f"'{fs.server}' is ignored; nodes mount the FSx file "
                               "system the provider creates", "remove filesystem.server"))
    elif fs.type in ("lustre", "beegfs", "nfs") and not fs.server:
        fix = "add provider.fsx_lustre to create one, or set filesystem.server" if fs.type == "lustre" else \
            f"set filesystem.server to the {fs.type} server"
        out.append(Finding("error", "filesystem.server", f"{fs.type} needs a server to mount from", fix))
    return out


CHECKS = (check_instance_types, check_capacity, check_efa, check_network, check_ami, check_keys, check_fsx)
