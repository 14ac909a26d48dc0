"""`provision plan` for aws: the resources `up` would create and an hourly estimate, with no API call."""
from __future__ import annotations

from provision import hostlist
from provision.errors import SpecError
from provision.providers.aws import claim, prices
from provision.providers.aws.instance_types import known
from provision.providers.aws.security import group_name
from provision.providers.aws.tags import Owner
from provision.providers.base import Plan, PlanItem
from provision.spec.model import ClusterSpec, NodeGroup
from provision.spec.topology import group_names


def build(spec: ClusterSpec) -> Plan:
    """Every resource `up` would make, in creation order, priced from the dated table where it can be."""
    p, table = spec.provider, prices.table()
    owner = Owner(spec.name, "<cluster id>")  # drawn at the first `up`
    items = [PlanItem("claim", claim.parameter(spec.name), f"SSM parameter: the name in {p.region}, held by this "
                      "cluster until `down`")]
    notes = [f"hourly costs: {table.region} list prices as of {table.date} ({table.source}); data transfer, "
             "snapshots and taxes not included"]
    if p.region != table.region:
        notes.append(f"the price table holds {table.region} prices; {p.region} usually costs the same or more")
    if p.vpc_id:
        notes.append(f"uses the existing VPC {p.vpc_id} and subnet {p.subnet_id}; they are kept at `down`")
    else:
        items += [PlanItem("vpc", f"{spec.name}-vpc", str(p.vpc_cidr)),
                  PlanItem("internet-gateway", f"{spec.name}-internet-gateway", f"attached to {spec.name}-vpc"),
                  PlanItem("subnet", f"{spec.name}-subnet", f"{p.subnet_cidr} in {p.availability_zone}"),
                  PlanItem("route-table", f"{spec.name}-route-table", "0.0.0.0/0 through the internet gateway")]
    items.append(PlanItem("security-group", group_name(owner), f"all traffic within the group (EFA); SSH from "
                          f"{p.ssh_ingress_cidr}"))
    if not p.key_pair_name:
        items.append(PlanItem("key-pair", owner.name("<key digest>"), "imports the cluster's "
                              "public key"))
    for group in spec.node_groups:
        if group.gpu and group.capacity != "reservation":
            items.append(PlanItem("placement-group", owner.name(group.name),
                                  f"cluster strategy for group {group.name}"))
    if p.fsx_lustre:
        fs = p.fsx_lustre
        items.append(PlanItem("fsx-lustre", f"{spec.name}-fsx", f"{fs.storage_capacity_gib} GiB {fs.deployment_type}",
                              _round(table.fsx(fs))))
    total_nodes = 0
    for group in spec.node_groups:
        item, count, note = _instances(spec, group, table)
        items += [item] if item else []
        notes += [note] if note else []
        total_nodes += count
    if total_nodes:
        items.append(PlanItem("volumes", f"{total_nodes} root volumes", f"{total_nodes} x {p.root_volume_gib} GiB "
                              "gp3, encrypted, deleted with the instance",
                              _round(table.volumes(total_nodes, p.root_volume_gib))))
    return Plan(items=items, notes=notes)


def _instances(spec: ClusterSpec, group: NodeGroup, table: prices.PriceTable) -> tuple[PlanItem | None, int, str]:
    """The instances of one group, how many, and a note when their price is unknown or only a bound."""
    try:
        names = group_names(group)
    except SpecError:
        return None, 0, f"group {group.name}: its hosts expression is unreadable; run `provision validate`"
    itype = group.instance_type or "<no instance_type>"
    entry = known(itype)
    hardware = f"{entry.gpu_count}x {entry.gpu_model}" if entry else (
        f"{group.gpu.count}x {group.gpu.model}" if group.gpu else "CPU only")
    efa = f", {group.interconnect.nics} EFA" if group.interconnect.type == "efa" else ""
    capacity = f"reservation {group.capacity_reservation_id}" if group.capacity == "reservation" else group.capacity
    detail = f"{len(names)} x {itype} ({hardware}{efa}), {capacity}, {spec.provider.availability_zone}"
    price = table.instance(itype)
    note = ""
    if price is None:
        note = f"no price for {itype} in the table ({table.date}); group {group.name} is not in the estimate"
    elif group.capacity == "spot":
        note = f"group {group.name} is spot, priced here at on-demand (an upper bound)"
    elif group.capacity == "reservation":
        note = f"group {group.name} runs in reservation {group.capacity_reservation_id}, billed by the reservation"
        price = None
    cost = None if price is None else _round(price * len(names))
    return PlanItem("instances", hostlist.compress(names), detail, cost), len(names), note


def _round(value: float | None) -> float | None:
    """Cents are enough for an estimate."""
    return None if value is None else round(value, 4)
