"""Read-only checks against the account before anything is created.

The cluster's name (claimed by another state root, or carried by resources nobody claims), instance
types offered in the zone, EFA and placement support (DescribeInstanceTypes), the image, the key pair,
an existing subnet, capacity reservations and the vCPU quota. Problems with the spec come back together
as one SpecError with a finding each; a quota shortfall is a QuotaError, a claimed name a ClaimError.
"""
from __future__ import annotations

from provision.adaptors.aws import Aws, UnsupportedError
from provision.errors import CloudNotFoundError, SpecError
from provision.providers.aws import audit, claim, quota, tags
from provision.providers.aws.config import DEBIAN_12_AMD64, AmiSelector
from provision.providers.aws.facts import Facts, Image, TypeFacts
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec

def check(aws: Aws, spec: ClusterSpec, pending: dict[str, int], recorded_image: dict | None = None, *,
          fresh: bool = False, cluster_id: str | None = None) -> Facts:
    """Run every pre-create check; `pending` is group -> nodes still to launch (for quota and reservations).

    `fresh`: this machine records nothing for the cluster yet (at most its id, `cluster_id`), so its name must be
    neither claimed by another cluster nor carried by resources in the region."""
    findings: list[Finding] = []
    notes: list[str] = []
    if fresh:
        findings += _name_in_use(aws, spec, notes, cluster_id)
    types = _instance_types(aws, spec, findings)
    image = Image(**recorded_image) if recorded_image else _image(aws, spec, findings)
    if image is not None:
        findings += _image_fits(spec, types, image)
    findings += _key_pair(aws, spec) + _subnet(aws, spec)
    reservations = _reservations(aws, spec, pending, findings, notes)
    if findings:
        raise SpecError(f"the spec does not fit what AWS offers in {spec.provider.availability_zone}",
                        findings=findings, hint="fix the findings above; nothing was created")
    notes += quota.check(aws, spec, types, pending)
    return Facts(types=types, image=image, reservations=reservations, notes=notes)


def _name_in_use(aws: Aws, spec: ClusterSpec, notes: list[str], cluster_id: str | None) -> list[Finding]:
    """A ClaimError naming the holder when another cluster claims the name; else resources tagged with the name
    that this machine did not record: orphans of a lost state, or of a cluster made before names were claimed
    (`down --orphans` selects by that tag, so a new cluster of the same name would lose its resources to it).

    The claim is read after the audit: a cluster that made resources the audit saw had claimed the name before."""
    owner = tags.Owner(spec.name)
    found = audit.find(aws, owner, notes)
    claim.refuse_taken(aws, spec.name, spec.provider.region, cluster_id)
    if not found:
        return []
    return [Finding("error", "name",
                    f"'{spec.name}' is already used in {spec.provider.region}: {len(found)} resource(s) carry "
                    f"{owner.label()} but this machine's state records none of them ({audit.summary(found)})",
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
    """Resolve the image selector (id, SSM parameter or name filter) to one available image. The SSM parameter is read
    here, at the cluster's first `up` only: the image is recorded, and later runs launch the recorded one."""
    selector, region = spec.provider.ami, spec.provider.region
    detail = ""
    try:
        image_id = aws.ssm.get_parameter(Name=selector.ssm_parameter)["Parameter"]["Value"] \
            if selector.ssm_parameter else selector.id
        if selector.ssm_parameter and not image_id.startswith("ami-"):
            findings.append(Finding("error", "provider.ami.ssm_parameter", f"'{selector.ssm_parameter}' holds "
                                    f"'{image_id}', not an image id", "name a parameter that holds an AMI id "
                                    f"(ami-...), such as {DEBIAN_12_AMD64}, or set provider.ami.id"))
            return None
        images = _images(aws, selector, image_id)
    except CloudNotFoundError as exc:
        if getattr(exc, "code", "") == "ParameterNotFound":
            findings.append(Finding("error", "provider.ami.ssm_parameter", f"'{selector.ssm_parameter}' is not a "
                                    f"parameter in {region} (ParameterNotFound)", f"{exc.hint}; or set provider.ami.id"))
            return None
        images, detail = [], f" ({exc})"
    if not images:
        where = ("provider.ami.ssm_parameter", selector.ssm_parameter) if selector.ssm_parameter else \
            ("provider.ami.id", selector.id) if selector.id else ("provider.ami.name_filter", selector.name_filter)
        findings.append(Finding("error", where[0], f"'{where[1]}' matches no image in {region}{detail}",
                                "check the value and the region; images are regional"))
        return None
    return _newest(images)


def _images(aws: Aws, selector: AmiSelector, image_id: str | None) -> list[dict]:
    """The images an id names, or else those of the selector's owner and name filter."""
    if image_id:
        return aws.ec2.describe_images(ImageIds=[image_id])["Images"]
    return aws.pages("ec2", "describe_images", "Images", Owners=[selector.owner],
                     Filters=[{"Name": "name", "Values": [selector.name_filter]},
                              {"Name": "state", "Values": ["available"]}])


def _newest(images: list[dict]) -> Image:
    """The newest of the images, as a record."""
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
