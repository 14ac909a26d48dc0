"""Shapes of spec strings, table-driven: (field, bad value, the finding it must give) and values that must pass."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from provision.spec.loader import validate_file

STATIC = {
    "name": "demo",
    "provider": {"type": "static"},
    "node_groups": [
        {"name": "head", "roles": ["controller"], "hosts": "head01", "addresses": ["10.0.0.10"]},
        {"name": "gpu", "roles": ["compute"], "hosts": "gpu[01-02]", "addresses": "10.0.0.[11-12]"},
    ],
}


def _set(data: dict, path: str, value) -> dict:
    data = copy.deepcopy(data)
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = data
    for key in keys[:-1]:
        node = node[key] if isinstance(key, int) else node.setdefault(key, {})
    node[keys[-1]] = value
    return data


def _rendered(tmp_path: Path, data: dict) -> list[str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return [f.render() for f in validate_file(path).findings]


BAD = [
    ("ssh.user", "u$(touch M)", "ssh.user (line 17): 'u$(touch M)' is not a user name"),
    ("ssh.user", "root\n", "is not a user name"),
    ("ssh.user", "Administrator", "is not a user name"),
    ("ssh.key_path", "/keys/my key", "'/keys/my key' is not a usable path"),
    ("ssh.key_path", "/keys/../../etc/shadow", "contains '..'; write the path without '..' components"),
    ("ssh.key_path", "~nobodyxx/key", "names the home of nobodyxx, which this machine does not know"),
    ("ssh.key_path", "/k/%d", "is not a usable path"),
    ("state_dir", "\0", "is not a usable path"),
    ("state_dir", "/var/lib/$(id)", "is not a usable path"),
    ("filesystem.mount_point", "/shared\n/etc", "is not an absolute path of letters, digits"),
    ("filesystem.mount_point", "shared", "is not an absolute path"),
    ("filesystem.mount_point", "/shared dir", "is not an absolute path"),
    ("filesystem.server", "{{ lookup('pipe','id') }}", "is not a host name or IPv4 address"),
    ("filesystem.server", "nas01.exämple.com", "is not a host name or IPv4 address"),
    ("filesystem.server", "10.0.0.300", "'10.0.0.300' is not an IPv4 address"),
    ("filesystem.server", "-nas", "is not a host name"),
    ("filesystem.remote_path", "/export;reboot", "is not a mount name or export path"),
    ("filesystem.remote_path", "/export/../etc", "contains '..'"),
    ("software.mirrors.cuda_repository", "http://m/x y", "is not a URL (no spaces"),
    ("software.mirrors.cuda_repository", "file:///srv/cuda", "is not an http or https URL with a host"),
    ("software.mirrors.cuda_repository", "http://m/%zz", "'%' only as %XX"),
    ("software.mirrors.cuda_repository", "http://{{x}}/", "is not a URL"),
    ("software.mirrors.cuda_repository", "http://bad_host/", "is not a host name"),
    ("software.slurm.repository_url", "http://m/`id`", "is not a URL"),
    ("software.nvidia_driver.version", "570; reboot", "is not a name or version"),
    ("software.slurm.repository_key", "/keys/slurm key.asc", "'/keys/slurm key.asc' is not a usable path"),
    ("software.slurm.repository_key", "$(id).asc", "is not a usable path"),
    ("software.slurm.repository_key_fingerprint", "53EF24C0", "is not an OpenPGP fingerprint (40 hex digits)"),
    ("software.slurm.repository_key_fingerprint", "53EF24C03C61808FECDFCA64274B4CB61408D2CG",
     "is not an OpenPGP fingerprint"),
    ("software.slurm.repository_key_fingerprint", "53EF 24C0 3C61 808F ECDF  CA64 274B 4CB6 1408 D2C1", None),
    ("software.slurm.version", "24.11.5-1 site", "is not a Debian package version"),
    ("software.slurm.version", "v24.11", "is not a Debian package version ([EPOCH:]UPSTREAM[-REVISION]"),
    ("software.slurm.version", "24.11.5-1;reboot", "is not a Debian package version"),
    ("software.slurm.version", "1:24.11.5-1+site~1", None),
    ("software.slurm.repository_suite", "bookworm main", "is not an APT suite"),
    ("software.slurm.repository_suite", "../../etc/", "is not an APT suite (letters, digits and . _ / -, no '..')"),
    ("software.slurm.repository_components", ["main", "contrib\nx"], "is not an APT component"),
    ("software.slurm.packages", {"compute": ["slurmd", "Slurmd"]}, "packages.compute[1]"),
    ("software.slurm.packages", {"compute": ["slurmd=24.11"]}, "is not a Debian package name"),
    ("software.slurm.packages", {"client": []}, "0 entries, at least 1 needed"),
    ("software.cuda.versions", ["１２.８"], "is not MAJOR.MINOR"),
    ("node_groups.1.hosts", "gpu[1-3]@all", "is not a valid hostlist expression (only letters, digits"),
    ("node_groups.1.hosts", "gpu[1-99999]", "stands for 99999 names; a node group has at most 10000"),
    ("node_groups.1.hosts", "gpu[01-02]", None),
    ("node_groups.1.addresses", ["10.0.0.11", "$(id)"], "holds '$(id)', which is not an IP address"),
    ("node_groups.1.gpu", {"model": "H100 SXM", "count": 8}, "'H100 SXM' is not a name or version"),
    ("node_groups.1.default_partition", "yes", "'yes' is not valid: not true or false"),
]


@pytest.mark.parametrize("path, value, expected", BAD, ids=[f"{p}={v!r}"[:60] for p, v, _ in BAD])
def test_a_value_of_the_wrong_shape_is_a_finding(tmp_path, path, value, expected):
    data = _set(STATIC, path, value)
    rendered = _rendered(tmp_path, data)
    if expected is None:
        assert not [line for line in rendered if line.startswith("error")], rendered
    else:
        assert any(expected in line for line in rendered), rendered


AWS = {
    "name": "demo",
    "provider": {"type": "aws", "region": "us-east-1", "availability_zone": "us-east-1a",
                 "ssh_ingress_cidr": "203.0.113.0/24",
                 "ami": {"name_filter": "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *",
                         "owner": "amazon"}},
    "ssh": {"user": "ubuntu"},
    "node_groups": [{"name": "head", "roles": ["controller"], "count": 1, "instance_type": "m7i.2xlarge"},
                    {"name": "gpu", "roles": ["compute"], "count": 1, "instance_type": "m7i.2xlarge"}],
}


@pytest.mark.parametrize("path, value, expected", [
    ("provider.ami.name_filter", "ubuntu-*\"; rm -rf /", "is not an image name filter"),
    ("provider.ami.owner", "amazon;x", "is not an image owner"),
    ("provider.ami.ssm_parameter", "/aws/service/$(id)", "is not a parameter path"),
    ("provider.key_pair_name", "key`id`", "is not a key pair name"),
    ("provider.region", "us-east-1\nx", "is not a name or version"),
])
def test_aws_filters_and_names_have_shapes(tmp_path, path, value, expected):
    assert any(expected in line for line in _rendered(tmp_path, _set(AWS, path, value)))


def test_well_formed_values_pass(tmp_path):
    data = _set(_set(STATIC, "filesystem", {"type": "nfs", "server": "nas01.example.com", "remote_path": "/export/home",
                                            "mount_point": "/home/shared"}),
                "software", {"mirrors": {"cuda_repository": "https://mirror.example.internal:8443/cuda/deb%20x/?a=1",
                                         "efa_installer": ""}})
    data = _set(data, "ssh", {"user": "ec2-user", "key_path": "~/keys/id_ed25519"})
    rendered = _rendered(tmp_path, data)
    assert [line for line in rendered if line.startswith("error")] == [  # the shape passes; the file is not there
        "error: ssh.key_path (line 26): '~/keys/id_ed25519' does not exist; give the path of the private key, or "
        "omit key_path to use the generated cluster key"]
    assert not [line for line in _rendered(tmp_path, AWS) if line.startswith("error")]
