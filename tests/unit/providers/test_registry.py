"""Each provider package owns its spec section, defaults and checks; the registry lists them, spec/ takes the union."""
from __future__ import annotations

import subprocess
import sys
import typing

from provision.cluster.lifecycle import planned_cluster
from provision.providers import registry
from provision.spec.model import ClusterSpec

GROUPS = [{"name": "ctl", "roles": ["controller"], "count": 1}, {"name": "gpu", "roles": ["compute"], "count": 2}]


def test_every_registered_section_is_named_by_its_type():
    for name, entry in registry.PROVIDERS.items():
        assert typing.get_args(entry.config.model_fields["type"].annotation) == (name,)
        assert entry.config.__module__ == f"provision.providers.{name}.config"


def test_the_provider_defaults_come_from_its_section():
    sandbox = ClusterSpec.model_validate({"name": "demo", "provider": {"type": "sandbox", "subnet": "10.5.0.0/24"},
                                          "ssh": {"user": "admin"}, "node_groups": GROUPS})
    cluster = planned_cluster(sandbox)
    assert cluster.ssh_user == "root" and cluster.sandbox
    assert [n.address for n in cluster.nodes] == ["10.5.0.10", "10.5.0.11", "10.5.0.12"]


def test_reading_a_spec_loads_no_provider_implementation(tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("name: demo\nprovider: {type: aws, region: us-east-1, availability_zone: us-east-1a, "
                    "ssh_ingress_cidr: 10.0.0.0/8, ami: {id: ami-0123456789abcdef0}}\n"
                    "node_groups:\n  - {name: ctl, roles: [controller], count: 1, instance_type: m7i.large}\n"
                    "  - {name: gpu, roles: [compute], count: 1, instance_type: m7i.large}\n")
    code = ("import sys; from pathlib import Path; from provision.spec.loader import validate_file; "
            f"assert validate_file(Path({str(spec)!r})).findings is not None; "
            "print(sorted(m for m in sys.modules if m.startswith(('boto', 'provision.providers'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = eval(done.stdout)
    assert not [m for m in loaded if m.startswith("boto") or m.endswith(".provider")], loaded
    assert "provision.providers.aws.validation" in loaded
