"""The sandbox provider's Provider: N simulated nodes on this machine, made idempotently and audited on removal."""
from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from ipaddress import IPv4Network
from pathlib import Path

from provision.errors import SandboxError
from provision.providers.base import Plan, PlanItem, Provider, Teardown
from provision.providers.sandbox import (aptproxy, audit, environment, fleet, layout, mirror, network, node,
                                         processes, record, releases, rootfs)
from provision.providers.sandbox.image import ImageCache
from provision.providers.sandbox.record import NodeRecord, SandboxRecord
from provision.records import ClusterInfo, NodeInfo, Progress, silent
from provision.remote.sshkeys import ensure_key_pair, public_key
from provision.spec.topology import planned_nodes
from provision.state import write_private


class SandboxProvider(Provider):
    """N simulated nodes, each with its own root, hostname, netns, process tree and sshd."""

    name = "sandbox"

    def check_environment(self) -> None:
        """Root, the binaries, namespaces, overlayfs, and a state directory overlayfs can use."""
        environment.check(self.state.root)

    def plan(self) -> Plan:
        """The bridge, the apt proxy and one namespace-backed node per planned node."""
        bridge = layout.bridge_name(self.spec.name, self.spec.provider.bridge)
        items = [PlanItem("bridge", bridge, str(self.spec.provider.subnet)),
                 PlanItem("apt proxy", "apt-cacher-ng", f"{network.bridge_address(self.spec.provider.subnet)}:"
                                                        f"{aptproxy.PORT}")]
        items += [PlanItem("node", n.name, n.address or "") for n in planned_nodes(self.spec)]
        return Plan(items, ["the base image is built once with debootstrap (about a minute) and cached"])

    def create(self, progress: Progress = silent) -> ClusterInfo:
        """Bring every planned node up (idempotent: existing pieces are reused, stopped nodes started)."""
        self.check_environment()
        self.state.ensure("sandbox")  # 0700: node layers hold host keys
        with self._network_lock():
            rec = self._record()
            progress(f"bridge {rec.bridge} on {rec.subnet}")
            network.ensure_bridge(rec.bridge, rec.bridge_address, IPv4Network(rec.subnet).prefixlen)
        if rec.base is None or not Path(rec.base).is_dir():
            suite = releases.release(rec.os).suite
            rec.base = str(ImageCache(layout.sandbox_cache(self.state)).ensure(rec.mirrors, progress, suite))
            record.save(self.state, rec)
        self._ensure_proxy(rec, progress)
        planned = self._planned(rec)
        self.state.ensure("ssh")
        key = ensure_key_pair(self.state.ssh_key_path, f"gpu-provision-{self.spec.name}")
        for planned_node in planned:
            self._ensure_node(rec, planned_node, public_key(key))
        fleet.boot(self.state, rec, [p.name for p in planned], progress)
        self._write_known_hosts(rec)
        progress(f"{len(planned)} sandbox node(s) answer on port 22")
        return self.describe()

    def describe(self) -> ClusterInfo:
        """Planned nodes with their recorded address and live state (running, stopped, absent)."""
        rec = record.load(self.state)
        return self._cluster(tuple(self._node_info(n, rec) for n in self._planned(rec)), rec)

    def planned(self) -> ClusterInfo:
        """The spec's nodes on the subnet this cluster runs on (chosen at its first `up`, another one than the spec's
        default when that was taken), reached as root with the cluster's key; no live check."""
        rec = record.load(self.state)
        return self._cluster(tuple(n.model_copy(update={"ssh_port": 22}) for n in self._planned(rec)), rec)

    def _cluster(self, nodes: tuple[NodeInfo, ...], rec: SandboxRecord | None) -> ClusterInfo:
        """The cluster record of these nodes: root with the cluster's key, the apt proxy and bridge as role facts."""
        variables = {"provision_apt_proxy": rec.proxy_url,
                     "provision_sandbox_bridge_address": rec.bridge_address} if rec else {}
        return ClusterInfo(name=self.spec.name, provider=self.name, nodes=nodes, ssh_user="root",
                           ssh_key_path=self.state.ssh_key_path, known_hosts_path=self.state.known_hosts_path,
                           sandbox=True, vars=variables)

    def destroy(self, progress: Progress = silent, *, orphans: bool = False) -> Teardown:
        """Stop nodes and the proxy (recorded PIDs only), remove links, namespaces, bridge and node layers."""
        rec = record.load(self.state)
        bridge = rec.bridge if rec else layout.bridge_name(self.spec.name, self.spec.provider.bridge)
        removed: list[str] = []
        if rec is not None:
            removed += self._teardown(rec, progress)
        leftovers = audit.leftovers(self.spec.name, bridge, self.state.path / "sandbox", rec)
        if rec is not None and not leftovers:
            shutil.rmtree(self.state.path / "sandbox", ignore_errors=True)
            record.forget(self.state)
            self.state.known_hosts_path.unlink(missing_ok=True)
        progress(f"sandbox removed ({len(removed)} objects)" if not leftovers else
                 f"sandbox teardown left {len(leftovers)} object(s) behind")
        return Teardown(removed=removed, leftovers=leftovers)

    # -- create, step by step ------------------------------------------------------------------

    def _record(self) -> SandboxRecord:
        """The existing record (checked against the spec) or a new one with a free subnet, saved."""
        rec = record.load(self.state)
        bridge = layout.bridge_name(self.spec.name, self.spec.provider.bridge)
        if rec is not None:
            self._check_unchanged(rec, bridge)
            return rec
        if network.link_kind(bridge) is not None:
            raise SandboxError(f"provider.bridge: interface '{bridge}' already exists and is not this cluster's",
                               hint="name another bridge in the spec, or remove that interface")
        explicit = "subnet" in self.spec.provider.model_fields_set
        subnet = network.choose_subnet(self.spec.provider.subnet, explicit, network.host_routes())
        mirrors = mirror.resolve(self.spec.provider.mirror)
        rec = SandboxRecord(cluster=self.spec.name, subnet=str(subnet), bridge=bridge,
                            bridge_address=network.bridge_address(subnet), mirror=mirrors.archive,
                            security_mirror=mirrors.security, components=list(mirrors.components),
                            os=self.spec.provider.os)
        record.save(self.state, rec)
        return rec

    def _check_unchanged(self, rec: SandboxRecord, bridge: str) -> None:
        """A running cluster cannot move to another bridge or an explicitly different subnet."""
        if rec.bridge != bridge:
            raise SandboxError(f"provider.bridge: the cluster runs on bridge {rec.bridge}, the spec names {bridge}",
                               hint="run `provision down` first to move it")
        if self.spec.provider.os != rec.os:
            raise SandboxError(f"provider.os: the cluster's nodes run {rec.os}, the spec says {self.spec.provider.os}",
                               hint="run `provision down` first to rebuild the nodes on another release")
        if "subnet" in self.spec.provider.model_fields_set and str(self.spec.provider.subnet) != rec.subnet:
            raise SandboxError(f"provider.subnet: the cluster runs on {rec.subnet}, the spec says "
                               f"{self.spec.provider.subnet}", hint="run `provision down` first to move it")

    def _ensure_proxy(self, rec: SandboxRecord, progress: Progress) -> None:
        """Start the apt proxy unless the recorded one still runs; record it before waiting on it."""
        directory = layout.proxy_dir(self.state)
        if processes.running(rec.proxy):
            return
        aptproxy.prepare(directory, layout.apt_cache_dir(self.state), rec.bridge_address, rec.mirrors)
        rec.proxy = aptproxy.start(directory)
        record.save(self.state, rec)
        aptproxy.wait_ready(rec.proxy, rec.bridge_address, directory)
        progress(f"apt proxy on {rec.proxy_url}")

    def _ensure_node(self, rec: SandboxRecord, planned_node: NodeInfo, authorized_key: str) -> None:
        """Record the node's names, make its netns and veth, and write its identity if it is stopped."""
        item = rec.nodes.get(planned_node.name)
        if item is not None and item.stand_in_gpus != planned_node.gpu_count:
            item.stand_in_gpus = planned_node.gpu_count  # takes effect at the node's next boot
            record.save(self.state, rec)
        if item is None or item.address != planned_node.address:
            item = NodeRecord(name=planned_node.name, address=str(planned_node.address),
                              netns=layout.netns_name(self.spec.name, planned_node.name),
                              veth=layout.veth_name(self.spec.name, planned_node.name),
                              dir=str(layout.node_dir(self.state, planned_node.name)),
                              host_key=item.host_key if item else None,
                              init=item.init if item else None, launcher=item.launcher if item else None,
                              namespaces=item.namespaces if item else {}, stand_in_gpus=planned_node.gpu_count)
            rec.nodes[item.name] = item
            record.save(self.state, rec)
        network.ensure_node_link(item.netns, item.veth, rec.bridge, item.address, IPv4Network(rec.subnet).prefixlen)
        if not node.running(item):
            upper = node.dirs(item)["upper"]
            upper.mkdir(parents=True, exist_ok=True, mode=0o755)
            item.host_key = rootfs.prepare_node(upper, Path(str(rec.base)), item.name, item.address,
                                                authorized_key, rec.proxy_url)
            record.save(self.state, rec)

    def _write_known_hosts(self, rec: SandboxRecord) -> None:
        """`name,address keytype key` per node, so host key checking stays on."""
        lines = [f"{n.name},{n.address} {n.host_key}\n" for n in rec.nodes.values() if n.host_key]
        write_private(self.state.known_hosts_path, "".join(lines))

    def retire(self, names: list[str], progress: Progress = silent) -> list[str]:
        """Stop the named nodes (recorded PIDs only) and remove their links, namespaces and layers; others stay."""
        rec = record.load(self.state)
        names = [n for n in names if rec is not None and n in rec.nodes]
        if not names:
            return []
        progress(f"removing sandbox node(s) {', '.join(names)}")
        if fleet.halt(self.state, rec, names):
            raise SandboxError(f"could not stop {', '.join(names)}", hint="run `provision up` again")
        removed: list[str] = []
        for name in names:
            removed += self._remove_node(rec.nodes.pop(name))
            record.save(self.state, rec)
        self._write_known_hosts(rec)
        return removed

    # -- destroy ----------------------------------------------------------------------------------

    def _teardown(self, rec: SandboxRecord, progress: Progress) -> list[str]:
        """Undo everything the record names, in reverse order of creation; what was removed."""
        removed: list[str] = []
        progress(f"stopping {len(rec.nodes)} node(s)")
        fleet.halt(self.state, rec, list(rec.nodes))
        for item in rec.nodes.values():
            removed += self._remove_node(item)
        if rec.proxy and processes.stop([rec.proxy], 5.0) == []:
            removed.append(f"process {rec.proxy.pid} (apt-cacher-ng)")
        if network.remove_link(rec.bridge):
            removed.append(f"bridge {rec.bridge}")
        shutil.rmtree(layout.proxy_dir(self.state), ignore_errors=True)
        recorded = [p for n in rec.nodes.values() for p in (n.init, n.launcher) if p] + ([rec.proxy] if rec.proxy
                                                                                         else [])
        processes.wait_gone(recorded, 15.0, include_zombies=True)  # launchers: reaped by their parent
        return removed

    def _remove_node(self, item: NodeRecord) -> list[str]:
        """Delete a stopped node's veth, netns and layers."""
        removed = []
        if network.remove_link(item.veth):
            removed.append(f"link {item.veth}")
        if network.remove_netns(item.netns):
            removed.append(f"namespace {item.netns}")
        if Path(item.dir).is_dir() and not environment.mounted_under(Path(item.dir)):
            shutil.rmtree(item.dir, ignore_errors=True)
            removed.append(f"directory {item.dir}")
        return removed

    # -- shared helpers ---------------------------------------------------------------------------

    def _planned(self, rec: SandboxRecord | None) -> list[NodeInfo]:
        """planned_nodes() on the subnet actually in use (which may differ from a defaulted spec)."""
        spec = self.spec
        if rec is not None and str(spec.provider.subnet) != rec.subnet:
            provider = spec.provider.model_copy(update={"subnet": IPv4Network(rec.subnet)})
            spec = spec.model_copy(update={"provider": provider})
        return planned_nodes(spec)

    def _node_info(self, planned_node: NodeInfo, rec: SandboxRecord | None) -> NodeInfo:
        """One node with live state and its init PID as provider id."""
        item = rec.nodes.get(planned_node.name) if rec else None
        if item is None:
            return planned_node.model_copy(update={"state": "absent", "ssh_port": 22})
        alive = node.running(item)
        return planned_node.model_copy(update={
            "address": item.address, "ssh_port": 22, "state": "running" if alive else "stopped",
            "provider_id": str(item.init.pid) if alive and item.init else None})

    @contextmanager
    def _network_lock(self) -> Iterator[None]:
        """Serialise subnet choice and bridge creation between clusters on this machine."""
        lock_dir = layout.sandbox_cache(self.state)
        lock_dir.mkdir(parents=True, exist_ok=True)
        with open(lock_dir / "network.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield
