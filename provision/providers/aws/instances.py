"""Launching a group's nodes in one RunInstances call, with the EFA layout of its type, and waiting for them."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from provision.adaptors.aws import Aws
from provision.errors import CapacityError, CloudError
from provision.providers.aws import tags
from provision.providers.aws.facts import Facts, TypeFacts
from provision.providers.aws.ledger import Ledger
from provision.records import Progress
from provision.spec.model import ClusterSpec, NodeGroup
from provision.spec.topology import group_names

LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
_RUNNING_BATCH = 1000  # DescribeInstances ids per waiter call
_STATUS_BATCH = 100  # DescribeInstanceStatus takes at most 100 ids


@dataclass(frozen=True)
class LaunchContext:
    """What every RunInstances call of the cluster shares."""

    subnet_id: str
    security_group_id: str
    key_name: str
    public_ip: bool  # our own subnet with an internet gateway: single-interface nodes get a public address
    placement: dict[str, str]  # group -> placement group name


def network_interfaces(facts: TypeFacts, efa: bool, subnet: str, group_id: str, public_ip: bool) -> list[dict]:
    """The NetworkInterfaces of one instance: every EFA the type takes, one per network card.

    Layout as AWS recommends for multi-card types (p5, p5e, p5en, p4d): an ENA primary interface on
    card 0 device 0, an EFA-only interface on card 0 device 1, and an EFA-only interface at device 0
    of each further card. Types whose cards do not list 'efa-only' get the older layout (EFA with ENA
    at card 0 device 0, then device 1 of each further card). A type with one EFA gets a single EFA
    interface, which can keep a public address; several interfaces never get one (AWS refuses).
    """
    base = {"SubnetId": subnet, "Groups": [group_id], "DeleteOnTermination": True}
    public = {"AssociatePublicIpAddress": True} if public_ip else {}
    if not efa:
        return [{**base, "DeviceIndex": 0, **public}]
    cards = [index for index, kinds in facts.cards if not kinds or {"efa", "efa-only"} & set(kinds)][:facts.max_efa]
    cards = cards or [0]
    if len(cards) == 1:
        return [{**base, "NetworkCardIndex": cards[0], "DeviceIndex": 0, "InterfaceType": "efa", **public}]
    kinds = dict(facts.cards)
    if all("efa-only" in kinds.get(card, ()) for card in cards):
        layout = [{**base, "NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}]
        layout += [{**base, "NetworkCardIndex": card, "DeviceIndex": 1 if card == 0 else 0, "InterfaceType": "efa-only"}
                   for card in cards]
        return layout
    return [{**base, "NetworkCardIndex": card, "DeviceIndex": 0 if card == cards[0] else 1, "InterfaceType": "efa"}
            for card in cards]


def launch_parameters(spec: ClusterSpec, group: NodeGroup, facts: Facts, context: LaunchContext) -> dict:
    """RunInstances parameters for a group, without counts, token and tags."""
    itype = facts.types[group.instance_type]
    params = {
        "ImageId": facts.image.id,
        "InstanceType": itype.name,
        "KeyName": context.key_name,
        "NetworkInterfaces": network_interfaces(itype, group.interconnect.type == "efa", context.subnet_id,
                                                context.security_group_id, context.public_ip),
        "BlockDeviceMappings": [{"DeviceName": facts.image.root_device, "Ebs": {
            "VolumeSize": spec.provider.root_volume_gib, "VolumeType": "gp3", "DeleteOnTermination": True,
            "Encrypted": True}}],
        "Placement": {"AvailabilityZone": spec.provider.availability_zone},
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},
    }
    if group.name in context.placement:
        params["Placement"]["GroupName"] = context.placement[group.name]
    if group.capacity == "spot":
        params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
            "SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}}
    elif group.capacity == "reservation":
        params["CapacityReservationSpecification"] = {
            "CapacityReservationTarget": {"CapacityReservationId": group.capacity_reservation_id}}
        if facts.reservations.get(group.capacity_reservation_id) == "capacity-block":
            params["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    return params


def live(aws: Aws, owner: tags.Owner, states: tuple[str, ...] = LIVE_STATES) -> dict[str, dict]:
    """instance id -> instance, for the cluster's instances in the given states (one filtered describe)."""
    reservations = aws.pages("ec2", "describe_instances", "Reservations",
                             Filters=owner.filters() + [{"Name": "instance-state-name", "Values": list(states)}])
    return {i["InstanceId"]: i for r in reservations for i in r["Instances"]}


def forget_dead(ledger: Ledger, alive: dict[str, dict], progress: Progress) -> None:
    """Drop recorded instances that no longer run (terminated, or a spot interruption) so they are relaunched."""
    dead = [name for name, record in ledger.instances.items() if record["id"] not in alive or
            alive[record["id"]]["State"]["Name"] == "shutting-down"]
    if dead:
        progress(f"{len(dead)} recorded instance(s) are gone ({', '.join(dead)}); launching replacements")
        ledger.forget_instances(dead)


def launch(aws: Aws, ledger: Ledger, spec: ClusterSpec, facts: Facts, context: LaunchContext,
           progress: Progress) -> list[str]:
    """Launch every node of the spec that has no instance yet, one RunInstances per group; returns the new ids.

    Open batches are adopted first, those of groups the spec no longer has too, so that every instance made is
    recorded (and `retire` can remove it). Recorded instances the spec no longer names are left running."""
    for group in list(ledger.launches):
        adopt_open_batch(aws, ledger, group, progress)
    new: list[str] = []
    for group in spec.node_groups:
        missing = [n for n in group_names(group) if n not in ledger.instances]
        if missing:
            new += _launch_group(aws, ledger, spec, group, missing, launch_parameters(spec, group, facts, context),
                                 progress)
    return new


def outside_spec(ledger: Ledger, spec: ClusterSpec) -> list[str]:
    """Recorded nodes the spec no longer names: kept until `retire` removes them (after Slurm let them go)."""
    named = {name for group in spec.node_groups for name in group_names(group)}
    return [name for name in ledger.instances if name not in named]


def adopt_open_batch(aws: Aws, ledger: Ledger, group: str, progress: Progress) -> None:
    """A group's batch sent before a crash: adopt its instances (found by the batch's tag) or close it."""
    batch = ledger.launches.get(group)
    if not batch:
        return
    found = [i for r in aws.pages("ec2", "describe_instances", "Reservations",
                                  Filters=ledger.owner.filters(launch=batch["token"]) +
                                  [{"Name": "instance-state-name", "Values": list(LIVE_STATES)}])
             for i in r["Instances"]]
    if not found:
        ledger.launch_abandoned(group)
        return
    found.sort(key=lambda i: i.get("AmiLaunchIndex", 0))
    ledger.launched(group, found[0]["InstanceType"], {name: i["InstanceId"] for name, i in zip(batch["nodes"], found)})
    progress(f"adopted {len(found)} instance(s) of group {group} launched before an interruption")


def _launch_group(aws: Aws, ledger: Ledger, spec: ClusterSpec, group: NodeGroup, names: list[str], params: dict,
                  progress: Progress) -> list[str]:
    """One RunInstances for all of a group's missing nodes, retried with backoff while capacity is short."""
    policy, count, itype = aws.policy, len(names), params["InstanceType"]
    where = f"{count} x {itype} in {spec.provider.availability_zone}"
    for attempt in range(1, policy.capacity_attempts + 1):
        token = f"{spec.name}-{group.name}-{uuid.uuid4().hex[:16]}"[-64:]
        instance_tags = ledger.owner.tags(f"instances:{group.name}", group=group.name, roles=tuple(group.roles),
                                          launch=token)
        ledger.launching(group.name, token, names)
        try:
            response = aws.ec2.run_instances(**params, MinCount=count, MaxCount=count, ClientToken=token,
                                             TagSpecifications=tags.specifications(
                                                 instance_tags, "instance", "volume", "network-interface"))
        except CapacityError as exc:
            ledger.launch_abandoned(group.name)
            if attempt == policy.capacity_attempts:
                raise CapacityError(f"no capacity for {where} after {attempt} attempts ({exc.code})",
                                    hint=_capacity_hint(ledger)) from exc
            delay = policy.backoff(attempt, base=policy.capacity_delay)
            progress(f"no capacity for {where} ({exc.code}); retrying in {delay:.0f} s "
                     f"({attempt}/{policy.capacity_attempts})")
            aws.sleep(delay)
            continue
        except CloudError as exc:
            if getattr(exc, "code", ""):  # AWS answered with an error: nothing was launched
                ledger.launch_abandoned(group.name)
            raise  # otherwise the batch stays open and the next `up` adopts what it made
        instances = sorted(response["Instances"], key=lambda i: i.get("AmiLaunchIndex", 0))
        ledger.launched(group.name, itype, {name: i["InstanceId"] for name, i in zip(names, instances)})
        progress(f"launched {where} for group {group.name}")
        return [i["InstanceId"] for i in instances]
    raise AssertionError("unreachable")


def _capacity_hint(ledger: Ledger) -> str:
    """What to do after a capacity failure, naming what already runs."""
    running = len(ledger.instances)
    kept = f"the {running} instance(s) already launched are recorded and keep running (and billing); " if running \
        else "nothing was launched for this group; "
    return kept + "run `provision up` again later to resume, use another zone or a capacity reservation, " \
                  "or `provision down` to remove everything"


def wait_ready(aws: Aws, ledger: Ledger, progress: Progress) -> None:
    """Wait until every recorded instance not yet known ready is running and passes its status checks."""
    waiting = {name: r for name, r in ledger.instances.items() if not r.get("ready")}
    if not waiting:
        return
    ids = [r["id"] for r in waiting.values()]
    progress(f"waiting for {len(ids)} instance(s) to run and pass status checks")
    for start in range(0, len(ids), _RUNNING_BATCH):
        aws.wait("ec2", "instance_running", InstanceIds=ids[start:start + _RUNNING_BATCH])
    for start in range(0, len(ids), _STATUS_BATCH):
        aws.wait("ec2", "instance_status_ok", InstanceIds=ids[start:start + _STATUS_BATCH])
    for record in waiting.values():
        record["ready"] = True
    ledger.save()


def terminate(aws: Aws, ids: list[str]) -> None:
    """Terminate instances in batches and wait until they are gone."""
    for start in range(0, len(ids), _RUNNING_BATCH):
        batch = ids[start:start + _RUNNING_BATCH]
        aws.ec2.terminate_instances(InstanceIds=batch)
        aws.wait("ec2", "instance_terminated", InstanceIds=batch)
