"""An unsupported OS is refused before anything is installed. One node of the shared cluster claims to run Rocky Linux
9.4 (its /etc/os-release rewritten in place); preflight fails that node naming the supported OS, and a deploy
limited to it stops in the platform check, the first task any role runs, with the same words and nothing changed
on the node. The real os-release (on Debian a symlink to ../usr/lib/os-release) is put back afterwards."""
from __future__ import annotations

import json

import pytest

from conftest import provision
from provision.node import platforms

pytestmark = pytest.mark.e2e

ROCKY = """NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
"""
# Nothing a deploy may touch: a line inside gpu-provision's /etc/hosts block, which the common role would rewrite.
MARKER = "10.255.255.1 platform-test-marker"
READ_OS = ". /etc/os-release && echo \"$ID $VERSION_ID\""
STATE = "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' | sha1sum; cat /etc/hosts"


@pytest.fixture
def rocky_node(slurm_cluster):
    """A compute node whose /etc/os-release says Rocky Linux 9.4, restored (symlink or file) afterwards."""
    node = slurm_cluster.compute[0]
    real = slurm_cluster.ssh(node, READ_OS).stdout.strip()
    link = slurm_cluster.ssh(node, "readlink /etc/os-release", check=False).stdout.strip()
    if not link:
        slurm_cluster.ssh(node, "cp -p /etc/os-release /root/os-release.platform-test")
    try:
        slurm_cluster.ssh(node, "rm -f /etc/os-release && cat > /etc/os-release", input=ROCKY)
        assert slurm_cluster.ssh(node, READ_OS).stdout.strip() == "rocky 9.4"
        yield node
    finally:
        restore = (f"rm -f /etc/os-release && ln -s {link} /etc/os-release" if link
                   else "mv -f /root/os-release.platform-test /etc/os-release")
        slurm_cluster.ssh(node, restore)
    assert slurm_cluster.ssh(node, READ_OS).stdout.strip() == real
    assert slurm_cluster.ssh(node, "readlink /etc/os-release", check=False).stdout.strip() == link


def _refusal(node: str) -> str:
    return platforms.refusal(node, platforms.parse_os_release(ROCKY))


def test_preflight_refuses_the_node_naming_the_supported_os(slurm_cluster, rocky_node):
    result = provision("preflight", str(slurm_cluster.spec_path), "--json", check=False)
    assert result.returncode == 1, result.stderr
    nodes = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    refused = {c["id"]: c for c in nodes[rocky_node]["checks"]}["os"]
    assert (nodes[rocky_node]["verdict"], refused["verdict"]) == ("fail", "fail")
    assert refused["detail"] == _refusal(rocky_node)
    assert refused["detail"].startswith("gpu-provision supports Debian 12, Debian 13 (tested); Ubuntu 22.04")
    assert nodes[rocky_node]["os"] == "Rocky Linux 9.4"
    others = {name: node for name, node in nodes.items() if name != rocky_node}
    assert {name: {c["id"]: c["verdict"] for c in node["checks"]}["os"] for name, node in others.items()} == \
        {name: "pass" for name in others}
    assert all(node["os"].startswith("Debian ") for node in others.values())  # each node's OS is reported


def test_a_deploy_on_the_node_stops_in_the_platform_check_and_changes_nothing(slurm_cluster, rocky_node):
    slurm_cluster.ssh(rocky_node, f"sed -i 's/^# END gpu-provision/{MARKER}\\n&/' /etc/hosts && grep -q '{MARKER}' "
                                  "/etc/hosts")  # a difference the common role, first to run, would correct
    before = slurm_cluster.ssh(rocky_node, STATE).stdout
    try:
        code, result = slurm_cluster.deploy("--limit", rocky_node)
        after = slurm_cluster.ssh(rocky_node, STATE).stdout
    finally:
        slurm_cluster.ssh(rocky_node, f"sed -i '/{MARKER}/d' /etc/hosts")
    assert code == 1 and result["failed_hosts"] == [rocky_node], result
    host = next(h for h in result["hosts"] if h["host"] == rocky_node)
    assert "Refuse an OS that gpu-provision does not support" in host["failed_task"]
    assert host["message"] == _refusal(rocky_node)
    assert (host["changed"], host["changed_tasks"]) == (0, [])
    assert after == before  # the same packages, and /etc/hosts still holds the difference: nothing converged
