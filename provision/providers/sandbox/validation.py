"""Checks of a sandbox spec: a private subnet big enough for the nodes; root on port 22 whatever the spec says."""
from __future__ import annotations

from provision.providers.sandbox.config import capacity
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec
from provision.spec.topology import names_per_group


def findings(spec: ClusterSpec) -> list[Finding]:
    """Every sandbox-specific finding for a spec; none when the spec uses another provider."""
    if spec.provider.type != "sandbox":
        return []
    return check_subnet(spec) + check_ssh(spec)


def check_subnet(spec: ClusterSpec) -> list[Finding]:
    """The sandbox subnet must be private and big enough."""
    subnet = spec.provider.subnet
    out = []
    if not subnet.is_private:
        out.append(Finding("error", "provider.subnet", f"{subnet} is not a private range",
                           "use a private range such as 10.99.0.0/24"))
    total = sum(len(n) for n in (names_per_group(spec) or []))
    if total > capacity(subnet):
        out.append(Finding("error", "provider.subnet", f"{subnet} holds {capacity(subnet)} nodes, "
                           f"the spec has {total}", "use a larger subnet, e.g. a /22"))
    return out


def check_ssh(spec: ClusterSpec) -> list[Finding]:
    """Sandbox nodes are reached as root on port 22: another user or port is ignored."""
    out = []
    if spec.ssh.user != "root":
        out.append(Finding("warning", "ssh.user", f"'{spec.ssh.user}' is ignored by the sandbox",
                           "sandbox nodes are reached as root"))
    if spec.ssh.port != 22:
        out.append(Finding("warning", "ssh.port", f"{spec.ssh.port} is ignored by the sandbox",
                           "sandbox nodes are reached on port 22"))
    return out
