"""Names and paths of one sandbox cluster's host objects, derived so two clusters never share one."""
from __future__ import annotations

import hashlib
from pathlib import Path

from provision.state import ClusterState

IFNAME_MAX = 15  # Linux interface names: IFNAMSIZ - 1
PREFIX = "pv"  # every host object the sandbox makes starts with this


def cluster_tag(cluster: str) -> str:
    """Five hex digits that tell clusters apart in names too short for the whole cluster name."""
    return hashlib.sha1(cluster.encode()).hexdigest()[:5]


def bridge_name(cluster: str, configured: str | None = None) -> str:
    """The spec's bridge, or pv-<cluster, cut>-<tag>: at most 15 characters, unique per cluster."""
    if configured:
        return configured
    room = IFNAME_MAX - len(PREFIX) - 2 - 5
    return f"{PREFIX}-{cluster[:room].rstrip('-')}-{cluster_tag(cluster)}"


def veth_name(cluster: str, node: str) -> str:
    """The host end of a node's veth pair: pv<cluster tag><node tag>, 13 characters."""
    return f"{PREFIX}{cluster_tag(cluster)}{hashlib.sha1(node.encode()).hexdigest()[:6]}"


def veth_prefix(cluster: str) -> str:
    """What every host veth end of this cluster starts with (for the teardown audit)."""
    return f"{PREFIX}{cluster_tag(cluster)}"


def netns_name(cluster: str, node: str) -> str:
    """A node's network namespace; '.' cannot occur in cluster names, so prefixes never overlap."""
    return f"{netns_prefix(cluster)}{node}"


def netns_prefix(cluster: str) -> str:
    """What every network namespace of this cluster starts with."""
    return f"{PREFIX}-{cluster}."


def nodes_dir(state: ClusterState) -> Path:
    """Where the nodes' writable layers live (inside the cluster's private state directory)."""
    return state.path / "sandbox" / "nodes"


def node_dir(state: ClusterState, node: str) -> Path:
    """One node's upper, work and mount-point directories plus its boot log."""
    return nodes_dir(state) / node


def proxy_dir(state: ClusterState) -> Path:
    """The apt proxy's own configuration, socket and log for this cluster."""
    return state.path / "sandbox" / "aptproxy"


def sandbox_cache(state: ClusterState) -> Path:
    """The sandbox's part of the cache shared between clusters (base images, apt archives)."""
    return state.cache_dir / "sandbox"


def apt_cache_dir(state: ClusterState) -> Path:
    """The apt proxy's package cache: kept across runs, one per cluster so two proxies never share it."""
    return sandbox_cache(state) / "apt" / state.cluster
