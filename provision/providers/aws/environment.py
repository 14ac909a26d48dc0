"""Read-only checks against the account before anything is created.

Instance types offered in the zone, EFA and placement support (DescribeInstanceTypes), the image,
the key pair, an existing subnet, capacity reservations and the vCPU quota. Problems with the spec
come back together as one SpecError with a finding each; a quota shortfall is a QuotaError.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from provision.adaptors.aws import Aws, UnsupportedError
from provision.errors import CloudAuthError, CloudNotFoundError, QuotaError, SpecError
from provision.providers.aws import audit, tags
from provision.providers.aws.instance_types import quota_class
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec

# Service Quotas codes for running vCPUs: (quota class, spot) -> code.
QUOTA_CODES = {
    ("Standard", False): "L-1216C47A", ("Standard", True): "L-34B43A08",
    ("G", False): "L-DB2E81BA", ("G", True): "L-3819A6DF",
    ("P", False): "L-417A185B", ("P", True): "L-7212CCBC",
}


@dataclass(frozen=True)
class TypeFacts:
    """What DescribeInstanceTypes says about one type, as far as launching needs it."""

    name: str
    vcpus: int
    efa_supported: bool
    max_efa: int
    cards: tuple[tuple[int, tuple[str, ...]], ...]  # (network card index, interface types it takes)
    cluster_placement: bool
    architectures: tuple[str, ...]

    @classmethod
    def from_api(cls, info: dict) -> TypeFacts:
        """Build from one InstanceTypes entry."""
        network = info.get("NetworkInfo") or {}
        cards = tuple((c["NetworkCardIndex"], tuple(c.get("InterfaceTypes") or ()))
                      for c in network.get("NetworkCards") or [])
        return cls(name=info["InstanceType"], vcpus=info.get("VCpuInfo", {}).get("DefaultVCpus", 0),
                   efa_supported=bool(network.get("EfaSupported")),
                   max_efa=(network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0),
                   cards=tuple(sorted(cards)),
                   cluster_placement="cluster" in (info.get("PlacementGroupInfo") or {}).get("SupportedStrategies", []),
                   architectures=tuple((info.get("ProcessorInfo") or {}).get("SupportedArchitectures", [])))


@dataclass(frozen=True)
class Image:
    """The machine image every node boots."""

    id: str
    root_device: str
    architecture: str
    name: str = ""
    root_size_gib: int = 0  # the root snapshot's size: the root volume cannot be smaller


@dataclass
class Facts:
    """Everything the checks learned that creating needs."""

    types: dict[str, TypeFacts]
    image: Image
    reservations: dict[str, str] = field(default_factory=dict)  # id -> ReservationType (default, capacity-block)
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why


def check(aws: Aws, spec: ClusterSpec, pending: dict[str, int], recorded_image: dict | None = None, *,
          fresh: bool = False) -> Facts:
    """Run every pre-create check; `pending` is group -> nodes still to launch (for quota and reservations).

    `fresh`: this machine records nothing for the cluster yet, so its name must not be in use in the region."""
    findings: list[Finding] = []
    notes: list[str] = []
    if fresh:
        findings += _name_in_use(aws, spec, notes)
    types = _instance_types(aws, spec, findings)
    image = Image(**recorded_image) if recorded_image else _image(aws, spec, findings)
    if image is not None:
        findings += _image_fits(spec, types, image)
    findings += _key_pair(aws, spec) + _subnet(aws, spec)
    reservations = _reservations(aws, spec, pending, findings, notes)
    if findings:
        raise SpecError(f"the spec does not fit what AWS offers in {spec.provider.availability_zone}",
                        findings=findings, hint="fix the findings above; nothing was created")
    notes += _quota(aws, spec, types, pending)
    return Facts(types=types, image=image, reservations=reservations, notes=notes)


def _name_in_use(aws: Aws, spec: ClusterSpec, notes: list[str]) -> list[Finding]:
    """Resources tagged with the cluster's name that this machine did not record: another cluster's, or orphans.

    Every lookup, adoption and teardown selects by that tag, so a second cluster of the same name in the
    region would share (and on `down`, destroy) the first one's resources."""
    found = audit.find(aws, spec.name, notes)
    if not found:
        return []
    return [Finding("error", "name",
                    f"'{spec.name}' is already used in {spec.provider.region}: {len(found)} resource(s) carry "
                    f"{tags.CLUSTER}={spec.name} but this machine's state records none of them ({audit.summary(found)})",
                    "choose another cluster name; if they are left from your own cluster whose state directory "
                    "was lost, remove them with `provision down SPEC --orphans`")]


def _instance_types(aws: Aws, spec: ClusterSpec, findings: list[Finding]) -> dict[str, TypeFacts]:
    """Each group's type offered in the zone and described; EFA and NIC count checked live."""
    zone = spec.provider.availability_zone
    wanted = sorted({g.instance_type for g in spec.node_groups if g.instance_type})
    offered = {o["InstanceType"] for o in aws.pages(
        "ec2", "describe_instance_type_offerings", "InstanceTypeOfferings", LocationType="availability-zone",
        Filters=[{"Name": "location", "Values": [zone]}, {"Name": "instance-type", "Values": wanted}])}
    missing = [t for t in wanted if t not in offered]
    if missing:
        elsewhere: dict[str, list[str]] = {}
        for o in aws.pages("ec2", "describe_instance_type_offerings", "InstanceTypeOfferings",
                           LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": missing}]):
            elsewhere.setdefault(o["InstanceType"], []).append(o["Location"])
        for i, group in enumerate(spec.node_groups):
            if group.instance_type in missing:
                zones = sorted(elsewhere.get(group.instance_type, []))
                fix = f"use availability_zone {' or '.join(zones)}" if zones else \
                    f"{group.instance_type} is not offered in {spec.provider.region}; pick another type or region"
                findings.append(Finding("error", f"node_groups[{i}].instance_type",
                                        f"{group.instance_type} is not offered in {zone}", fix))
    present = [t for t in wanted if t in offered]
    types = {}
    if present:
        for info in aws.pages("ec2", "describe_instance_types", "InstanceTypes", InstanceTypes=present):
            facts = TypeFacts.from_api(info)
            types[facts.name] = facts
    for i, group in enumerate(spec.node_groups):
        facts = types.get(group.instance_type or "")
        if facts is None or group.interconnect.type != "efa":
            continue
        path = f"node_groups[{i}].interconnect"
        if not facts.efa_supported:
            findings.append(Finding("error", f"{path}.type", f"efa, but {facts.name} does not support EFA",
                                    "use an EFA-capable type (p5, p4d, g5.8xlarge and up) or type: none"))
        elif group.interconnect.nics != facts.max_efa:
            findings.append(Finding("error", f"{path}.nics", f"{group.interconnect.nics}, but {facts.name} takes "
                                    f"{facts.max_efa} EFA interfaces and the provider attaches all of them",
                                    f"set nics: {facts.max_efa}"))
    return types


def _image(aws: Aws, spec: ClusterSpec, findings: list[Finding]) -> Image | None:
    """Resolve the image selector (id, SSM parameter or name filter) to one available image."""
    selector = spec.provider.ami
    image_id = selector.id
    try:
        if selector.ssm_parameter:
            image_id = aws.ssm.get_parameter(Name=selector.ssm_parameter)["Parameter"]["Value"]
        if image_id:
            images = aws.ec2.describe_images(ImageIds=[image_id])["Images"]
        else:
            images = aws.pages("ec2", "describe_images", "Images", Owners=[selector.owner],
                               Filters=[{"Name": "name", "Values": [selector.name_filter]},
                                        {"Name": "state", "Values": ["available"]}])
    except CloudNotFoundError as exc:
        images = []
        detail = str(exc)
    else:
        detail = ""
    if not images:
        where = ("provider.ami.ssm_parameter", selector.ssm_parameter) if selector.ssm_parameter else \
            ("provider.ami.id", selector.id) if selector.id else ("provider.ami.name_filter", selector.name_filter)
        findings.append(Finding("error", where[0], f"'{where[1]}' matches no image in {spec.provider.region}"
                                + (f" ({detail})" if detail else ""),
                                "check the value and the region; images are regional"))
        return None
    newest = max(images, key=lambda i: i.get("CreationDate", ""))
    root = newest.get("RootDeviceName") or "/dev/xvda"
    size = next((m.get("Ebs", {}).get("VolumeSize", 0) for m in newest.get("BlockDeviceMappings", [])
                 if m.get("DeviceName") == root), 0)
    return Image(id=newest["ImageId"], root_device=root, architecture=newest.get("Architecture", "x86_64"),
                 name=newest.get("Name", ""), root_size_gib=size or 0)


def _image_fits(spec: ClusterSpec, types: dict[str, TypeFacts], image: Image) -> list[Finding]:
    """The image's CPU architecture runs on every group's type, and its root snapshot fits the root volume."""
    out = []
    if image.root_size_gib > spec.provider.root_volume_gib:
        out.append(Finding("error", "provider.root_volume_gib", f"{spec.provider.root_volume_gib} is smaller than "
                           f"the root snapshot of image {image.id} ({image.root_size_gib} GiB)",
                           f"set root_volume_gib: {image.root_size_gib} or more"))
    for i, group in enumerate(spec.node_groups):
        facts = types.get(group.instance_type or "")
        if facts and facts.architectures and image.architecture not in facts.architectures:
            out.append(Finding("error", f"node_groups[{i}].instance_type", f"{facts.name} runs "
                               f"{'/'.join(facts.architectures)} but image {image.id} is {image.architecture}",
                               "choose an image for that architecture, or another instance type"))
    return out


def _key_pair(aws: Aws, spec: ClusterSpec) -> list[Finding]:
    """A named key pair exists; a given private key has its .pub beside it (to import)."""
    name = spec.provider.key_pair_name
    if name:
        try:
            aws.ec2.describe_key_pairs(KeyNames=[name])
        except CloudNotFoundError:
            return [Finding("error", "provider.key_pair_name", f"'{name}' does not exist in {spec.provider.region}",
                            "create or import it, or remove key_pair_name to import the cluster key")]
    elif spec.ssh.key_path is not None and not spec.ssh.key_path.expanduser().with_suffix(".pub").is_file():
        return [Finding("error", "ssh.key_path", f"'{spec.ssh.key_path}' has no .pub file beside it to import "
                        "as the EC2 key pair", "put the public key next to it, or set provider.key_pair_name")]
    return []


def _subnet(aws: Aws, spec: ClusterSpec) -> list[Finding]:
    """An existing subnet exists, belongs to the VPC and lies in the zone."""
    p = spec.provider
    if not p.subnet_id:
        return []
    try:
        subnet = aws.ec2.describe_subnets(SubnetIds=[p.subnet_id])["Subnets"][0]
    except CloudNotFoundError:
        return [Finding("error", "provider.subnet_id", f"'{p.subnet_id}' does not exist in {p.region}",
                        "copy the id of an existing subnet, or remove vpc_id and subnet_id to create them")]
    out = []
    if subnet["VpcId"] != p.vpc_id:
        out.append(Finding("error", "provider.vpc_id", f"'{p.vpc_id}' is not the VPC of {p.subnet_id} "
                           f"({subnet['VpcId']})", f"set vpc_id: {subnet['VpcId']}"))
    if subnet["AvailabilityZone"] != p.availability_zone:
        out.append(Finding("error", "provider.availability_zone", f"'{p.availability_zone}' is not the zone of "
                           f"{p.subnet_id} ({subnet['AvailabilityZone']})",
                           f"set availability_zone: {subnet['AvailabilityZone']}"))
    return out


def _reservations(aws: Aws, spec: ClusterSpec, pending: dict[str, int], findings: list[Finding],
                  notes: list[str]) -> dict[str, str]:
    """Capacity reservations are active, in the zone, for the type, with room for the nodes to launch."""
    groups = [(i, g) for i, g in enumerate(spec.node_groups) if g.capacity == "reservation" and
              g.capacity_reservation_id]
    if not groups:
        return {}
    ids = sorted({g.capacity_reservation_id for _, g in groups})
    try:
        found = {r["CapacityReservationId"]: r for r in aws.ec2.describe_capacity_reservations(
            CapacityReservationIds=ids)["CapacityReservations"]}
    except UnsupportedError as exc:
        notes.append(f"capacity reservations not checked: {exc.message}")
        return {rid: "default" for rid in ids}
    except CloudNotFoundError as exc:
        found = {}
        notes.append(str(exc))
    kinds = {}
    for i, group in groups:
        rid, path = group.capacity_reservation_id, f"node_groups[{i}].capacity_reservation_id"
        record = found.get(rid)
        if record is None:
            findings.append(Finding("error", path, f"'{rid}' does not exist in {spec.provider.region}",
                                    "copy the id from the EC2 console (Capacity Reservations)"))
            continue
        kinds[rid] = record.get("ReservationType", "default")
        problems = []
        if record.get("State") not in ("active", "scheduled"):
            problems.append(f"is {record.get('State')}")
        if record.get("InstanceType") != group.instance_type:
            problems.append(f"is for {record.get('InstanceType')}, not {group.instance_type}")
        if record.get("AvailabilityZone") != spec.provider.availability_zone:
            problems.append(f"is in {record.get('AvailabilityZone')}")
        if record.get("AvailableInstanceCount", 0) < pending.get(group.name, 0):
            problems.append(f"has room for {record.get('AvailableInstanceCount', 0)} instances, "
                            f"not {pending.get(group.name, 0)}")
        if problems:
            findings.append(Finding("error", path, f"'{rid}' " + "; ".join(problems),
                                    "use a reservation that matches the group, or change the group to match it"))
    return kinds


def _quota(aws: Aws, spec: ClusterSpec, types: dict[str, TypeFacts], pending: dict[str, int]) -> list[str]:
    """Enough running-vCPU quota for the nodes still to launch; returns notes on what could not be read."""
    need: Counter[tuple[str, bool]] = Counter()
    for group in spec.node_groups:
        facts = types.get(group.instance_type or "")
        if facts and pending.get(group.name) and group.capacity != "reservation":
            need[(quota_class(facts.name), group.capacity == "spot")] += facts.vcpus * pending[group.name]
    notes: list[str] = []
    limits = {}
    for (cls, spot), vcpus in sorted(need.items()):
        code = QUOTA_CODES.get((cls, spot))
        if code is None:
            notes.append(f"no vCPU quota code known for {cls} {'spot' if spot else 'on-demand'} instances; "
                         "quota not checked")
            continue
        limit = _quota_value(aws, code, notes)
        if limit is not None:
            limits[(cls, spot)] = (code, limit)
    used = _vcpus_in_use(aws, types) if limits else Counter()
    for (cls, spot), (code, limit) in limits.items():
        wanted, in_use = need[(cls, spot)], used[(cls, spot)]
        if in_use + wanted > limit:
            raise QuotaError(f"the {'spot' if spot else 'on-demand'} {cls} vCPU quota ({code}) is {limit:g} in "
                             f"{spec.provider.region}; {in_use} are in use and the cluster needs {wanted} more",
                             hint=f"request an increase to at least {in_use + wanted:g} (Service Quotas, ec2, "
                                  f"{code}), or ask for fewer nodes; nothing was created")
    return notes


def _quota_value(aws: Aws, code: str, notes: list[str]) -> float | None:
    """The applied quota value, else the AWS default; None (with a note) when neither can be read."""
    for operation in ("get_service_quota", "get_aws_default_service_quota"):
        try:
            return float(aws.call("service-quotas", operation, ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
        except CloudNotFoundError:
            continue
        except (CloudAuthError, UnsupportedError) as exc:
            notes.append(f"vCPU quota {code} not checked: {exc.message}")
            return None
    notes.append(f"vCPU quota {code} not checked: the Service Quotas endpoint does not know it")
    return None


def _vcpus_in_use(aws: Aws, types: dict[str, TypeFacts]) -> Counter[tuple[str, bool]]:
    """vCPUs of running or pending instances in the region per (quota class, spot), in one filtered describe.

    Classified here rather than with an instance-type wildcard filter, which moto does not implement.
    """
    used: Counter[tuple[str, bool]] = Counter()
    unknown: Counter[tuple[str, bool, str]] = Counter()
    for reservation in aws.pages("ec2", "describe_instances", "Reservations", MaxResults=1000,
                                 Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]):
        for instance in reservation["Instances"]:
            itype, spot = instance["InstanceType"], instance.get("InstanceLifecycle") == "spot"
            cpu = instance.get("CpuOptions") or {}
            if cpu.get("CoreCount"):
                used[(quota_class(itype), spot)] += cpu["CoreCount"] * cpu.get("ThreadsPerCore", 1)
            elif itype in types:
                used[(quota_class(itype), spot)] += types[itype].vcpus
            else:
                unknown[(quota_class(itype), spot, itype)] += 1
    if unknown:
        described = {i["InstanceType"]: TypeFacts.from_api(i).vcpus for i in aws.pages(
            "ec2", "describe_instance_types", "InstanceTypes", InstanceTypes=sorted({k[2] for k in unknown}))}
        for (cls, spot, itype), count in unknown.items():
            used[(cls, spot)] += described.get(itype, 0) * count
    return used
