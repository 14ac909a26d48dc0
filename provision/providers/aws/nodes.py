"""From recorded and live instances to the typed cluster record the rest of the tool uses."""
from __future__ import annotations

from provision.providers.aws.ledger import Ledger
from provision.records import ClusterInfo, NodeInfo, NodeState
from provision.spec.model import ClusterSpec
from provision.spec.topology import planned_nodes
from provision.state import ClusterState

_STATES: dict[str, NodeState] = {"pending": "pending", "running": "running", "stopping": "stopped",
                                 "stopped": "stopped", "shutting-down": "absent", "terminated": "absent"}


def cluster_info(spec: ClusterSpec, state: ClusterState, ledger: Ledger, live: dict[str, dict]) -> ClusterInfo:
    """Every planned node with its instance (address, state, id) where one exists."""
    nodes = tuple(_node(spec, ledger, node, live) for node in planned_nodes(spec))
    facts = ledger.facts
    env = {"aws_region": spec.provider.region, "aws_availability_zone": spec.provider.availability_zone}
    for key in ("vpc", "subnet", "security-group"):
        if ledger.id(key):
            env[f"aws_{key.replace('-', '_')}_id"] = ledger.id(key)
    for key in ("fsx_dns_name", "fsx_mount_name"):
        if facts.get(key):
            env[key] = facts[key]
    controller = next((n for n in nodes if n.has_role("controller")), None)
    if controller and controller.extra.get("public_ip") and any(
            n.provider_id and not n.extra.get("public_ip") for n in nodes):
        env["ssh_jump_host"] = controller.extra["public_ip"]  # nodes without a public address are reached through it
    key = spec.ssh.key_path.expanduser() if spec.ssh.key_path else state.ssh_key_path
    return ClusterInfo(name=spec.name, provider="aws", nodes=nodes, ssh_user=spec.ssh.user, ssh_key_path=key,
                       known_hosts_path=state.known_hosts_path, vars=env)


def _node(spec: ClusterSpec, ledger: Ledger, node: NodeInfo, live: dict[str, dict]) -> NodeInfo:
    """One node: planned, or its instance's address (public if any, else private), state and facts."""
    record = ledger.instances.get(node.name)
    if record is None:
        return node
    instance = live.get(record["id"])
    vcpus = (ledger.facts.get("vcpus") or {}).get(record["instance_type"])
    update: dict = {"provider_id": record["id"], "cpus": node.cpus or vcpus,
                    "extra": {"instance_type": record["instance_type"],
                              "availability_zone": spec.provider.availability_zone}}
    if instance is None:
        return node.model_copy(update={**update, "state": "absent"})
    public, private = instance.get("PublicIpAddress"), instance.get("PrivateIpAddress")
    update["extra"].update({k: v for k, v in (("public_ip", public), ("private_ip", private)) if v})
    update["extra"]["availability_zone"] = instance.get("Placement", {}).get("AvailabilityZone",
                                                                             spec.provider.availability_zone)
    update.update(address=public or private, state=_STATES.get(instance["State"]["Name"], "unknown"))
    return node.model_copy(update=update)
