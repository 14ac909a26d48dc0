"""Valid specs for every provider with every string field present, and helpers to change and write them."""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

# The Slurm site repository's signing key: a real public key (a throwaway's), so that only shapes can refuse the path.
SLURM_KEY = Path(__file__).resolve().parents[2] / "fixtures" / "slurm_repository" / "site-key.asc"
SLURM_KEY_FINGERPRINT = "53EF24C03C61808FECDFCA64274B4CB61408D2C1"
# A bind password file of the shape validate takes (one printable line), so that only shapes can refuse the path.
BIND_PASSWORD = Path(__file__).resolve().parents[2] / "fixtures" / "directory" / "bind-password"
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMd3wpfAkGCoTwbpcPBExObQN8qG+/3R60KGOduy5ScZ alice@laptop"


def bases_for(tmp_path: Path) -> dict[str, dict]:
    """A valid spec per provider with every string field present (the `bases` fixture writes the key file)."""
    key = tmp_path / "keys" / "id_ed25519"
    software = {"nvidia_driver": {"branch": 570, "version": "570.124.06", "source": "cuda-repo", "reboot": "drain"},
                "cuda": {"versions": ["12.4", "12.8"], "default": "12.8"}, "nccl": {"version": "2.26.2"},
                "slurm": {"source": "repository", "repository_url": "http://slurm.example.internal/debian",
                          "repository_key": str(SLURM_KEY), "repository_key_fingerprint": SLURM_KEY_FINGERPRINT,
                          "repository_suite": "bookworm", "repository_components": ["main"],
                          "version": "24.11.5-1site", "config": {"KillWait": "45", "SchedulerParameters": "bf_continue"},
                          "packages": {"client": ["slurm-smd-client"], "controller": ["slurm-smd-slurmctld"],
                                       "compute": ["slurm-smd-slurmd"], "accounting": ["slurm-smd-slurmdbd"],
                                       "pam_adopt": ["slurm-smd-libpam-slurm-adopt"]}},
                "mirrors": {name: f"http://mirror.example.internal/{name}" for name in (
                    "cuda_repository", "nccl_tests_source", "efa_installer", "lustre_repository", "beegfs_repository")}}
    people = {"users": [{"name": "alice", "uid": 2001, "gid": 2001, "groups": ["video"], "shell": "/bin/bash",
                         "ssh_public_keys": [PUBLIC_KEY], "accounts": ["physics"]}],
              "homes": {"base": "/shared/home"},
              "accounting": {"enforce": True, "accounts": [{"name": "physics", "parent": "root",
                                                            "grp_tres": {"gres/gpu": 8}, "qos": ["long"]}],
                             "qos": [{"name": "long", "max_wall": "2-00:00:00"}],
                             "users": [{"name": "dave", "accounts": ["physics"]}]},
              "directory": {"type": "ldap", "uri": "ldaps://ldap.example.internal", "base_dn": "dc=example,dc=org",
                            "ca_file": str(SLURM_KEY), "bind_dn": "cn=reader,dc=example,dc=org",
                            "bind_password_file": str(BIND_PASSWORD)}}
    common = {"name": "hostile", "ssh": {"user": "root", "key_path": str(key)}, "software": software, **people,
              "certify": {"level": "quick", "user": {"name": "gp-certify", "uid": 59990}},
              "health": {"enabled": True, "interval_s": 300, "node_state": ["ANY"],
                         "active": {"interval_s": 3600, "level": "quick"}},
              "monitoring": {"enabled": True, "listen": "cluster",
                             "receivers": [{"name": "ops", "url": "https://hooks.example.internal/alerts"},
                                           {"name": "pager", "url_file": str(BIND_PASSWORD), "send_resolved": False}]},
              "state_dir": str(tmp_path / "state")}
    compute = {"name": "gpu", "roles": ["compute"], "partition": "batch", "gpu": {"model": "H100-SXM", "count": 8},
               "interconnect": {"type": "infiniband", "nics": 8}, "os": "debian-13"}
    bases = {
        "sandbox": {**common, "provider": {"type": "sandbox", "bridge": "gpbr-hostile", "os": "debian-13",
                                           "mirror": "http://deb.debian.org/debian"},
                    "ssh": {"user": "root"},
                    "node_groups": [{"name": "ctl", "roles": ["controller", "storage"], "count": 1},
                                    {**compute, "count": 2}],
                    "filesystem": {"type": "glusterfs", "mount_point": "/shared", "volume": "shared", "replica": 1}},
        "static": {**common, "provider": {"type": "static"},
                   "node_groups": [{"name": "head", "roles": ["controller"], "hosts": "head01",
                                    "addresses": ["10.0.0.10"]},
                                   {**compute, "hosts": "gpu[01-02]", "addresses": "10.0.0.[11-12]"}],
                   "filesystem": {"type": "nfs", "mount_point": "/shared", "server": "nas01.example.internal",
                                  "remote_path": "/export/shared"}},
        "aws": {**common, "ssh": {"user": "ubuntu", "key_path": str(key)},
                "provider": {"type": "aws", "region": "us-east-1", "availability_zone": "us-east-1a",
                             "vpc_id": "vpc-0123456789abcdef0", "subnet_id": "subnet-0123456789abcdef0",
                             "ssh_ingress_cidr": "203.0.113.0/24", "key_pair_name": "my key (2024)",
                             "ami": {"name_filter": "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*",
                                     "owner": "099720109477"},
                             "fsx_lustre": {"deployment_type": "SCRATCH_2"}},
                "node_groups": [{"name": "head", "roles": ["controller"], "count": 1, "instance_type": "m7i.2xlarge"},
                                {"name": "gpu", "roles": ["compute"], "count": 2, "instance_type": "p5.48xlarge",
                                 "gpu": {"model": "H100-SXM", "count": 8}, "capacity": "reservation",
                                 "capacity_reservation_id": "cr-0123456789abcdef0", "os": "ubuntu-24.04",
                                 "interconnect": {"type": "efa", "nics": 32}}],
                "filesystem": {"type": "lustre", "mount_point": "/fsx", "remote_path": "fsx"}},
    }
    # Grafana comes from Grafana's repository, which a sandbox node cannot reach: only the other providers take it.
    grafana = {"repository_url": "https://apt.grafana.example.internal", "suite": "stable", "components": ["main"],
               "key": str(SLURM_KEY), "key_fingerprint": SLURM_KEY_FINGERPRINT, "port": 3000}
    for name in ("static", "aws"):
        bases[name]["monitoring"] = {**common["monitoring"], "grafana": grafana}
    for variant, ami in (("aws-image-id", {"id": "ami-0123456789abcdef0"}),
                         ("aws-ssm", {"ssm_parameter": "/aws/service/canonical/ubuntu/server/24.04/stable/current/"
                                                       "amd64/hvm/ebs-gp3/ami-id"})):
        bases[variant] = copy.deepcopy(bases["aws"])
        bases[variant]["provider"]["ami"] = ami
    return bases


PROVIDERS = ("sandbox", "static", "aws", "aws-image-id", "aws-ssm")


def string_paths(data: object, prefix: tuple = ()) -> list[tuple]:
    """The path of every string in a spec document (list items by index)."""
    if isinstance(data, dict):
        return [p for key, value in data.items() for p in string_paths(value, (*prefix, key))]
    if isinstance(data, list):
        return [p for index, value in enumerate(data) for p in string_paths(value, (*prefix, index))]
    return [prefix] if isinstance(data, str) else []


def with_value(data: dict, path: tuple, value: object) -> dict:
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


class _QuotingDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml writes it: 2,000 specs a provider
    """Writes every string double-quoted (as a careful author would), so YAML never reads one as a number."""


_QuotingDumper.add_representer(str, lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text,
                                                                                  style='"'))


def dump(data: dict) -> str:
    """The spec as YAML text."""
    return yaml.dump(data, Dumper=_QuotingDumper, allow_unicode=False)


