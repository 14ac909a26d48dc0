"""`up` for aws: the name's claim, key pair, network, security group, placement groups, FSx, instances, in
dependency order.

Every step is find-or-create against the state document, so a second run creates nothing and a run
after a crash picks up where the last one stopped. The claim comes first: a name another state root holds
stops `up` before anything is made.
"""
from __future__ import annotations

from dataclasses import asdict

from provision.adaptors.aws import Aws
from provision.providers.aws import claim, fsx, instances, network, nodes, placement, security
from provision.providers.aws.facts import Facts
from provision.providers.aws.ledger import Ledger
from provision.records import ClusterInfo, Progress
from provision.spec.model import ClusterSpec
from provision.state import ClusterState


def create(aws: Aws, spec: ClusterSpec, state: ClusterState, facts: Facts, progress: Progress) -> ClusterInfo:
    """Make every resource that does not exist yet and return the cluster with its addresses."""
    ledger = Ledger(state)
    claim.hold(aws, ledger, spec.provider.region, progress)
    ledger.learn(region=spec.provider.region, image=asdict(facts.image),
                 vcpus={name: t.vcpus for name, t in facts.types.items()})
    for note in facts.notes:
        progress(f"note: {note}")
    state.ensure("ssh")
    state.known_hosts_path.touch(mode=0o600, exist_ok=True)  # preflight learns the host keys into it
    key_name = security.ensure_key_pair(aws, ledger, spec, state, progress)
    net = network.ensure(aws, ledger, spec, progress)
    group_id = security.ensure_security_group(aws, ledger, spec, net.vpc_id, progress)
    placement_groups = placement.ensure(aws, ledger, spec, facts, progress)
    file_system = fsx.ensure(aws, ledger, spec, net.subnet_id, group_id, progress)
    alive = instances.live(aws, ledger.owner) if ledger.instances or ledger.launches else {}
    instances.forget_dead(ledger, alive, progress)
    context = instances.LaunchContext(subnet_id=net.subnet_id, security_group_id=group_id, key_name=key_name,
                                      public_ip=net.owned, placement=placement_groups)
    launched = instances.launch(aws, ledger, spec, facts, context, progress)
    waited = any(not r.get("ready") for r in ledger.instances.values())
    instances.wait_ready(aws, ledger, progress)
    if file_system and not ledger.facts.get("fsx_dns_name"):
        ledger.learn(**fsx.wait(aws, file_system, progress))
    if launched or waited or not alive:
        alive = instances.live(aws, ledger.owner)
    kept = instances.outside_spec(ledger, spec)
    if kept:
        progress(f"{len(kept)} instance(s) the spec no longer names keep running until they are removed: "
                 f"{', '.join(kept)}")
    if not launched:
        progress(f"no instance launched: all {len(ledger.instances) - len(kept)} already exist")
    return nodes.cluster_info(spec, state, ledger, alive)
