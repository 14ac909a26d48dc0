"""Sandbox subnet choice: a free requested subnet is kept, a taken default moves, a taken explicit one fails."""
from __future__ import annotations

import json
from ipaddress import IPv4Network

import pytest

from provision.errors import SandboxError
from provision.providers.sandbox import network
from provision.providers.sandbox.network import Route

HOST_ROUTES_JSON = json.dumps([
    {"dst": "default", "gateway": "192.0.2.1", "dev": "eth0"},
    {"dst": "192.0.2.0/24", "dev": "eth0", "protocol": "kernel"},
    {"type": "local", "dst": "192.0.2.2", "dev": "eth0", "table": "local"},
    {"dst": "10.99.0.0/24", "dev": "pv-other-12345"},
    {"dst": "10.99.1.0/24", "dev": "docker0"},
])


def routes(*pairs: tuple[str, str]) -> list[Route]:
    return [Route(IPv4Network(dst), dev) for dst, dev in pairs]


def test_parse_routes_drops_default_and_keeps_host_routes():
    parsed = network.parse_routes(HOST_ROUTES_JSON)
    assert [str(r.dst) for r in parsed] == ["192.0.2.0/24", "192.0.2.2/32", "10.99.0.0/24", "10.99.1.0/24"]
    assert parsed[2].dev == "pv-other-12345"


@pytest.mark.parametrize("requested, explicit, taken, own, expected", [
    ("10.99.0.0/24", False, [], None, "10.99.0.0/24"),  # free: kept
    ("10.99.0.0/24", False, [("10.99.0.0/24", "br0")], None, "10.99.1.0/24"),  # default taken: next free
    ("10.99.0.0/24", False, [("10.99.0.0/23", "br0")], None, "10.99.2.0/24"),  # a wider route covers two
    ("10.99.0.0/24", False, [("10.0.0.0/8", "vpn0")], None, "ERROR"),  # nothing in 10/8 free
    ("10.98.0.0/24", True, [("10.98.0.0/24", "br0")], None, "ERROR"),  # explicit and taken: no silent move
    ("10.98.0.0/24", True, [("10.98.0.0/24", "pv-me")], "pv-me", "10.98.0.0/24"),  # our own bridge is no clash
    ("10.98.0.0/24", True, [("10.98.0.77/32", "eth0")], None, "ERROR"),  # a host route inside it clashes
])
def test_choose_subnet(requested, explicit, taken, own, expected):
    args = (IPv4Network(requested), explicit, routes(*taken), own)
    if expected == "ERROR":
        with pytest.raises(SandboxError):
            network.choose_subnet(*args)
    else:
        assert str(network.choose_subnet(*args)) == expected


def test_explicit_clash_names_field_route_and_a_free_alternative():
    with pytest.raises(SandboxError) as caught:
        network.choose_subnet(IPv4Network("10.98.0.0/24"), True, routes(("10.98.0.0/16", "eth1")))
    message = str(caught.value)
    assert message.startswith("provider.subnet: 10.98.0.0/24 overlaps 10.98.0.0/16 on eth1")
    assert "10.99.1.0/24" in message  # the first candidate that is free


def test_candidates_are_private_distinct_slash24s():
    seen = list(network.candidates())
    assert len(seen) == len(set(seen))
    assert all(c.prefixlen == 24 and c.is_private for c in seen)


def test_bridge_takes_dot_one():
    assert network.bridge_address(IPv4Network("10.98.0.0/24")) == "10.98.0.1"
