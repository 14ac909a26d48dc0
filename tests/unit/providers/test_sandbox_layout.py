"""Host object names of a sandbox cluster: short enough for Linux, distinct between clusters."""
from __future__ import annotations

import pytest

from provision.providers.sandbox import layout


@pytest.mark.parametrize("cluster", ["a", "sbtest", "e2e", "a-very-long-cluster-name-of-31ch"])
def test_bridge_and_veth_names_fit_ifnamsiz(cluster):
    assert len(layout.bridge_name(cluster)) <= 15
    assert len(layout.veth_name(cluster, "node0001-with-a-long-name")) <= 15


def test_clusters_sharing_a_prefix_get_different_bridges_and_veths():
    first, second = "research-cluster-a", "research-cluster-b"
    assert layout.bridge_name(first) != layout.bridge_name(second)
    assert layout.veth_prefix(first) != layout.veth_prefix(second)
    assert layout.veth_name(first, "node01") != layout.veth_name(second, "node01")


def test_bridge_name_shows_the_cluster():
    assert layout.bridge_name("sbtest").startswith("pv-sbtest-")


def test_configured_bridge_is_used_as_is():
    assert layout.bridge_name("sbtest", "mybr0") == "mybr0"


def test_nodes_of_one_cluster_get_distinct_veths():
    names = {layout.veth_name("c", f"node{i:02d}") for i in range(100)}
    assert len(names) == 100


def test_netns_prefix_of_one_cluster_never_matches_another():
    # cluster names cannot contain '.', so "pv-a." can never prefix a namespace of cluster "a-b"
    assert not layout.netns_name("a-b", "n1").startswith(layout.netns_prefix("a"))
    assert layout.netns_name("a", "n1").startswith(layout.netns_prefix("a"))
