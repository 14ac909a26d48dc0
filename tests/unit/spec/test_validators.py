"""Every semantic validator, table-driven: (change to a valid spec, the exact finding it must give)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from provision.spec.model import ClusterSpec
from provision.spec.validators import VALIDATORS, semantic_findings

BASE = {
    "name": "demo",
    "provider": {"type": "static", "subnet": "10.0.0.0/24"},
    "node_groups": [
        {"name": "head", "roles": ["controller"], "hosts": "head01", "addresses": ["10.0.0.10"]},
        {"name": "gpu", "roles": ["compute"], "hosts": "gpu[01-02]", "addresses": "10.0.0.[11-12]",
         "gpu": {"model": "H100-SXM", "count": 8}},
        {"name": "fs", "roles": ["storage"], "hosts": "fs[01-02]", "addresses": "10.0.0.[21-22]"},
    ],
    "filesystem": {"type": "glusterfs", "replica": 2},
}


KEYS = Path(__file__).resolve().parents[2] / "fixtures" / "slurm_repository"
SITE_KEY, SITE_FPR = KEYS / "site-key.asc", "53EF24C03C61808FECDFCA64274B4CB61408D2C1"
SITE_REPO = {"source": "repository", "repository_url": "https://slurm.example.internal/debian",
             "repository_key": str(SITE_KEY), "repository_key_fingerprint": SITE_FPR, "version": "24.11.5-1site"}


GRAFANA = {"key": str(SITE_KEY), "key_fingerprint": SITE_FPR}


def _slurm(**fields):
    """A change that gives software.slurm the site repository above, with some fields replaced (None: dropped)."""
    return _set("software.slurm", {k: v for k, v in {**SITE_REPO, **fields}.items() if v is not None})


def _spec(change) -> ClusterSpec:
    data = copy.deepcopy(BASE)
    change(data)
    return ClusterSpec.model_validate(data)


def _set(path: str, value):
    """A change that sets data[path] (dotted, with list indexes) to value."""
    def change(data):
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        node = data
        for key in keys[:-1]:
            node = node[key] if isinstance(key, int) else node.setdefault(key, {})
        node[keys[-1]] = value
    return change


def _replica(replica: int | None, storage: int):
    """A change that gives the fs group `storage` nodes and filesystem.replica `replica` (None: not set)."""
    def change(data):
        data["node_groups"][2].update(hosts=f"fs[01-{storage:02d}]", addresses=f"10.0.0.[21-{20 + storage}]")
        data["filesystem"] = {"type": "glusterfs", **({"replica": replica} if replica is not None else {})}
    return change


def test_base_spec_has_no_findings():
    assert semantic_findings(_spec(lambda d: None)) == []


CASES = [
    ("group without count or hosts",
     _set("node_groups.2.hosts", None),
     "error: node_groups[2]: group 'fs' has neither count nor hosts; add count: N or hosts: name[01-N]"),
    ("count disagrees with hosts",
     _set("node_groups.1.count", 3),
     "error: node_groups[1].count: 3 does not match the 2 names in hosts 'gpu[01-02]'; "
     "drop count or make it equal to the number of hosts"),
    ("fewer addresses than hosts",
     _set("node_groups.1.addresses", ["10.0.0.11"]),
     "error: node_groups[1].addresses: 1 addresses for 2 hosts; give one address per host, in the order of hosts"),
    ("unreadable hostlist",
     _set("node_groups.1.hosts", "gpu[01-2]"),
     "error: node_groups[1].hosts: 'gpu[01-2]' is not a valid hostlist expression ('bad range: \"padding length "
     "mismatch : \"01-2\"\"'); write names such as gpu[01-16] or node1,node2"),
    ("invalid host name",
     _set("node_groups.0.hosts", "Head01"),
     "error: node_groups[0].hosts: 'Head01' is not a valid host name; "
     "use lower-case letters, digits and '-', starting with a letter"),
    ("duplicate host name",
     _set("node_groups.2.hosts", "gpu[01-02]"),
     "error: node_groups[2]: host name 'gpu01' is also in node_groups[1]; give every host a unique name"),
    ("duplicate group name",
     _set("node_groups.2.name", "gpu"),
     "error: node_groups[1].name: 'gpu' names more than one group; give every node group its own name"),
    ("address not an IP",
     _set("node_groups.0.addresses", ["10.0.0.300"]),
     "error: node_groups[0].addresses: '10.0.0.300' is not an IP address; use a dotted quad such as 10.0.0.12"),
    ("address is IPv6",
     _set("node_groups.0.addresses", ["fd00::1"]),
     "error: node_groups[0].addresses: 'fd00::1' is IPv6; use an IPv4 address"),
    ("address outside subnet",
     _set("node_groups.0.addresses", ["10.1.0.10"]),
     "error: node_groups[0].addresses: '10.1.0.10' is outside the declared subnet 10.0.0.0/24; "
     "use an address in 10.0.0.0/24 or widen provider.subnet"),
    ("duplicate address",
     _set("node_groups.0.addresses", ["10.0.0.11"]),
     "error: node_groups[1].addresses: address '10.0.0.11' is also used by group 'head'; "
     "give every host its own address"),
    ("static host without address",
     _set("node_groups.0.addresses", None),
     "error: node_groups[0].addresses: static group 'head' has no addresses; "
     "list one address per host, e.g. addresses: 10.0.0.[11-14]"),
    ("sandbox with addresses",
     lambda d: d.update(provider={"type": "sandbox"}),
     "error: node_groups[0].addresses: the sandbox provider assigns addresses itself; "
     "remove addresses, or use provider type static"),
    ("two controllers",
     _set("node_groups.2.roles", ["controller", "storage"]),
     "error: node_groups: 3 controller nodes; give exactly one node the controller role "
     "(a group with roles: [controller], count: 1)"),
    ("no controller",
     _set("node_groups.0.roles", ["login"]),
     "error: node_groups: 0 controller nodes; give exactly one node the controller role "
     "(a group with roles: [controller], count: 1)"),
    ("no compute group",
     _set("node_groups.1.roles", ["login"]),
     "error: node_groups: no group has the compute role; add a group with roles: [compute]"),
    ("repeated role",
     _set("node_groups.2.roles", ["storage", "storage"]),
     "error: node_groups[2].roles: ['storage', 'storage'] repeats a role; list each role once"),
    ("GPUs on a non-compute group",
     _set("node_groups.2.gpu", {"model": "L40S", "count": 2}),
     "error: node_groups[2].gpu: group 'fs' has GPUs but not the compute role; "
     "add compute to roles, or move the GPUs to a compute group"),
    ("unknown GPU model, close to a known one",
     _set("node_groups.1.gpu.model", "H100-SMX"),
     "error: node_groups[1].gpu.model: 'H100-SMX' is not a known GPU model; did you mean 'H100-SXM'?"),
    ("unknown GPU model, nothing close",
     _set("node_groups.1.gpu.model", "Voodoo5"),
     "error: node_groups[1].gpu.model: 'Voodoo5' is not a known GPU model; use one of H100-SXM, H100-PCIe, "
     "H100-NVL, H200-SXM, A100-SXM-80GB, A100-SXM-40GB, A100-PCIe, A30, L40S, L40, L4, A10G, B200, B300, GB200"),
    ("driver branch too old for the GPU",
     lambda d: (_set("node_groups.1.gpu.model", "H200-SXM")(d),
                d.update(software={"nvidia_driver": {"branch": 535}, "cuda": {"versions": ["12.2"]},
                                   "nccl": {"version": "2.19.3"}})),
     "error: software.nvidia_driver.branch: 535 does not support H200-SXM; use branch 550 or newer"),
    ("partition mixing GPU models",
     lambda d: d["node_groups"].append({"name": "l40s", "roles": ["compute"], "hosts": "l40s01",
                                        "addresses": ["10.0.0.31"], "gpu": {"model": "L40S", "count": 4},
                                        "partition": "gpu"}),
     "error: node_groups: partition 'gpu' mixes H100-SXM, L40S; give heterogeneous groups separate partitions"),
    ("two default partitions",
     lambda d: (_set("node_groups.1.default_partition", True)(d),
                d["node_groups"].append({"name": "cpu", "roles": ["compute"], "hosts": "cpu01",
                                         "addresses": ["10.0.0.41"], "default_partition": True})),
     "error: node_groups[3].default_partition: groups [1, 3] all claim the default partition; "
     "set default_partition on one group"),
    ("unknown driver branch",
     _set("software", {"nvidia_driver": {"branch": 999}}),
     "error: software.nvidia_driver.branch: 999 is not a known driver branch; use one of 470, 525, 530, 535, 545, "
     "550, 555, 560, 565, 570, 575, 580"),
    ("CUDA too new for the driver branch",
     _set("software", {"nvidia_driver": {"branch": 535}, "cuda": {"versions": ["12.4"]}}),
     "error: software.cuda.versions[0]: CUDA 12.4 is too new for driver branch 535 (supports up to 12.2); "
     "use driver branch 550 or newer, or CUDA 12.2 or older"),
    ("CUDA default not among versions",
     _set("software", {"cuda": {"versions": ["12.4", "12.8"], "default": "12.6"}}),
     "error: software.cuda.default: '12.6' is not in cuda.versions ['12.4', '12.8']; add it to versions or pick one of them"),
    ("NCCL without a build for the CUDA",
     _set("software", {"nccl": {"version": "2.12.12"}}),
     "error: software.nccl.version: NCCL 2.12.12 has no build for CUDA 12.8; "
     "use an NCCL release built for CUDA 12 (2.16-2.27)"),
    ("driver version on another branch",
     _set("software", {"nvidia_driver": {"version": "550.54.15"}}),
     "error: software.nvidia_driver.version: '550.54.15' is not on branch 570; give a full version on branch 570 "
     "(570.MINOR[.PATCH]), or leave version out to take the newest 570 driver"),
    ("driver version that is only a branch",
     _set("software", {"nvidia_driver": {"version": "570"}}),
     "error: software.nvidia_driver.version: '570' is not a driver version; give a full version on branch 570 "
     "(570.MINOR[.PATCH]), or leave version out to take the newest 570 driver"),
    ("distribution driver for NVSwitch GPUs",
     _set("software", {"nvidia_driver": {"source": "distribution"}}),
     "warning: software.nvidia_driver.source: 'distribution' drivers have no fabric manager at the same version, "
     "and group 'gpu' (H100-SXM) has NVSwitches that need one (nvidia-fabricmanager must equal the driver version); "
     "use source cuda-repo, where nvidia-fabricmanager-570 is published for every 570 driver"),
    ("slurm repository without URL",
     _set("software", {"slurm": {"source": "repository"}}),
     "error: software.slurm.repository_url: is missing while source is 'repository'; "
     "set repository_url to the site's Slurm APT repository, or use source: distribution"),
    ("slurm repository without a key",
     _slurm(repository_key=None, repository_key_fingerprint=None),
     "error: software.slurm.repository_key: is missing while source is 'repository'; give the path of the "
     "repository's signing key on this machine (an OpenPGP public key, armored or binary): apt trusts that key, and "
     "only it, for the repository"),
    ("slurm repository without a version",
     _slurm(version=None),
     "error: software.slurm.version: is missing while source is 'repository'; pin the Slurm version the site's "
     "repository holds, as `apt-cache policy slurmd` shows it (e.g. 24.11.5-1)"),
    ("slurm repository key file that is no key",
     _slurm(repository_key=str(KEYS / "README.md")),
     f"error: software.slurm.repository_key: '{KEYS / 'README.md'}' is not an OpenPGP key gpg can read (gpg: no "
     "valid OpenPGP data found.); give an OpenPGP public key file, armored or binary, as `gpg --export [--armor] KEYID` writes it"),
    ("slurm repository key file that is missing",
     _slurm(repository_key="/nonexistent/slurm.asc"),
     "error: software.slurm.repository_key: /nonexistent/slurm.asc: no such file; "
     "give the path of the repository's signing key on this machine"),
    ("slurm repository key that is not the fingerprint's",
     _slurm(repository_key=str(KEYS / "other-key-rsa.asc")),
     f"error: software.slurm.repository_key_fingerprint: '{KEYS / 'other-key-rsa.asc'}' holds the key "
     f"1D116EA2A3E2C02406F912CBB4D940D27E229B89, not {SITE_FPR}; give the file of the key with this fingerprint, "
     "or correct the fingerprint"),
    ("slurm repository key without a fingerprint",
     _slurm(repository_key_fingerprint=None, repository_key=str(KEYS / "site-key.gpg")),
     f"warning: software.slurm.repository_key_fingerprint: is not set, so the key in '{KEYS / 'site-key.gpg'}' is "
     "trusted as the file holds it; check the key with the repository's owner and write "
     f"repository_key_fingerprint: {SITE_FPR}; a swapped key file is then refused"),
    ("flat slurm repository with components",
     _slurm(repository_suite="./", repository_components=["main"]),
     "error: software.slurm.repository_components: are set, but suite './' is a flat repository, which has none; "
     "remove repository_components, or name a suite (e.g. bookworm)"),
    ("slurm packages of two families",
     _slurm(packages={"compute": ["slurm-smd-slurmd"]}),
     "error: software.slurm.packages: mix SchedMD's names (slurm-smd-slurmd) with Debian's (slurm-client, "
     "slurmctld, slurmdbd), whose packages conflict; name every role's packages from one family, e.g. "
     "slurm-smd-client, slurm-smd-slurmctld, slurm-smd-slurmd and slurm-smd-slurmdbd"),
    ("slurm repository fields with Debian's packages",
     _slurm(source="distribution", repository_key=None, repository_key_fingerprint=None, repository_url=None),
     "warning: software.slurm.version: is set but source is 'distribution', so it is not used; remove it, or set "
     "source: repository to install Slurm from the site's repository"),
    ("mount point that walks up into a system path",
     _set("filesystem.mount_point", "/shared/../etc"),
     "error: filesystem.mount_point: '/shared/../etc' (that is /etc) is a system path; "
     "mount the shared filesystem at its own path, such as /shared"),
    ("mount point not in normal form",
     _set("filesystem.mount_point", "/data/./shared"),
     "error: filesystem.mount_point: '/data/./shared' (that is /data/shared) is not written in normal form; "
     "write /data/shared"),
    ("host name ending in '-'",
     _set("node_groups.0.hosts", "head-"),
     "error: node_groups[0].hosts: 'head-' is not a valid host name; "
     "use lower-case letters, digits and '-', starting with a letter"),
    ("mount point with two leading slashes (POSIX keeps them, Linux reads one)",
     _set("filesystem.mount_point", "//etc"),
     "error: filesystem.mount_point: '//etc' (that is /etc) is a system path; "
     "mount the shared filesystem at its own path, such as /shared"),
    ("mount point with two leading slashes, not a system path",
     _set("filesystem.mount_point", "//shared"),
     "error: filesystem.mount_point: '//shared' (that is /shared) is not written in normal form; write /shared"),
    ("host named like Slurm's defaults line",
     _set("node_groups.2.hosts", "default,fs02"),
     "error: node_groups[2].hosts: 'default' is a reserved name (Slurm reads NodeName=DEFAULT as the defaults of "
     "the node lines after it); give the host another name, such as default01"),
    ("host named like Ansible's group of every host",
     _set("node_groups.1.hosts", "gpu01,all"),
     "error: node_groups[1].hosts: 'all' is a reserved name (Ansible's group of every host, and Slurm's "
     "Nodes=ALL); give the host another name, such as all01"),
    ("host named localhost",
     _set("node_groups.0.hosts", "localhost"),
     "error: node_groups[0].hosts: 'localhost' is a reserved name (Ansible's implicit host, the machine it runs "
     "on); give the host another name, such as localhost01"),
    ("partition named DEFAULT in any case",
     _set("node_groups.1.partition", "Default"),
     "error: node_groups[1].partition: 'Default' is a reserved name (Slurm reads PartitionName=DEFAULT as the "
     "defaults of the partition lines after it); name the partition otherwise, such as batch"),
    ("compute group named default, which names its partition",
     _set("node_groups.1.name", "default"),
     "error: node_groups[1].name: 'default' is a reserved partition name, and a compute group without a "
     "partition makes one of its name (Slurm reads PartitionName=DEFAULT as the defaults of the partition lines "
     "after it); rename the group, or set its partition to another name, such as batch"),
    ("mount point under a system path",
     _set("filesystem.mount_point", "/usr/shared"),
     "error: filesystem.mount_point: '/usr/shared' is a system path; "
     "mount the shared filesystem at its own path, such as /shared"),
    ("glusterfs without replicas", _replica(None, 4),
     "warning: filesystem.replica: is not set, so the volume is plain distribute (each file on one of the 4 storage "
     "nodes): losing one loses the files on it; set filesystem.replica: 2"),
    ("glusterfs of replica 1", _replica(1, 3), "warning: filesystem.replica: is 1, so the volume is plain distribute "
     "(each file on one of the 3 storage nodes): losing one loses the files on it; set filesystem.replica: 3"),
    ("glusterfs on five nodes without replicas", _replica(None, 5),
     "warning: filesystem.replica: is not set, so the volume is plain distribute (each file on one of the 5 storage "
     "nodes): losing one loses the files on it; make the storage nodes a multiple of 2 or 3 (there are 5) and set "
     "filesystem.replica"),
    ("glusterfs on one storage node", _replica(None, 1),
     "warning: filesystem: one storage node holds the whole volume: losing it loses the files on it; add a second "
     "storage node and set filesystem.replica: 2"),
    ("a replica count that does not divide the bricks", _replica(2, 3),
     "error: filesystem.replica: 2 does not divide the 3 storage nodes (one brick each; GlusterFS makes replica sets "
     "of that many bricks); use a replica count that divides 3, or change the number of storage nodes"),
    ("glusterfs without storage nodes",
     _set("node_groups.2.roles", ["login"]),
     "error: filesystem.type: glusterfs needs nodes with the storage role; add a group with roles: [storage]"),
    ("replica above storage nodes",
     _set("filesystem.replica", 3),
     "error: filesystem.replica: 3 is more than the 2 storage nodes; use a replica count of at most 2"),
    ("lustre client without a server",
     _set("filesystem", {"type": "lustre"}),
     "error: filesystem.server: lustre needs the server to mount from; "
     "set filesystem.server (Lustre MGS or FSx DNS name, BeeGFS management host, NFS server)"),
    ("public sandbox subnet",
     lambda d: (d.update(provider={"type": "sandbox", "subnet": "8.8.8.0/24"}),
                [g.pop("addresses") for g in d["node_groups"]]),
     "error: provider.subnet: 8.8.8.0/24 is not a private range; use a private range such as 10.99.0.0/24"),
    ("sandbox subnet too small",
     lambda d: (d.update(provider={"type": "sandbox", "subnet": "10.99.0.0/29"}),
                [g.pop("addresses") for g in d["node_groups"]]),
     "error: provider.subnet: 10.99.0.0/29 holds 0 nodes, the spec has 5; use a larger subnet, e.g. a /22"),
    ("efa outside aws",
     _set("node_groups.1.interconnect", {"type": "efa", "nics": 32}),
     "error: node_groups[1].interconnect.type: efa is only available on the aws provider; use infiniband or none"),
    ("fabric without NICs",
     _set("node_groups.1.interconnect", {"type": "infiniband"}),
     "error: node_groups[1].interconnect.nics: 0 NICs for a infiniband fabric; "
     "set nics to the fabric NICs per node (e.g. 8 for 8x NDR)"),
    ("GPU certify level without GPUs",
     lambda d: (d["node_groups"][1].pop("gpu"), d.update(certify={"level": "standard"})),
     "warning: certify.level: 'standard' runs GPU tests but no group has GPUs; "
     "use level quick, or add gpu to a compute group"),
    ("missing key file",
     _set("ssh", {"key_path": "/nonexistent/id_ed25519"}),
     "error: ssh.key_path: '/nonexistent/id_ed25519' does not exist; "
     "give the path of the private key, or omit key_path to use the generated cluster key"),
    ("two Slurm majors",
     lambda d: (d["node_groups"][0].update(os="debian-12"), d["node_groups"][1].update(os="debian-13")),
     "error: node_groups[1].os: the groups' OS releases ship different Slurm majors (debian-12: Slurm 22.05; "
     "debian-13: Slurm 24.11); one Slurm series per cluster; run every group on one release, or set "
     "software.slurm.source: repository with one site build for all"),
    ("sandbox group on another release",
     lambda d: (d.update(provider={"type": "sandbox", "os": "debian-13"}),
                [g.pop("addresses") for g in d["node_groups"]], d["node_groups"][1].update(os="debian-12")),
     "error: node_groups[1].os: sandbox nodes all run provider.os (debian-13), the group asks for debian-12; "
     "drop the group's os, or set provider.os: debian-12"),
    ("sandbox with another user",
     lambda d: (d.update(provider={"type": "sandbox"}, ssh={"user": "admin"}),
                [g.pop("addresses") for g in d["node_groups"]]),
     "warning: ssh.user: 'admin' is ignored by the sandbox; sandbox nodes are reached as root"),
    # people (every case of provision/spec/people_checks.py is in tests/unit/spec/test_people.py)
    ("a user in the system range",
     _set("users", [{"name": "alice", "uid": 999}]),
     "error: users[0].uid: 999 is in the system range (below 1000), where the OS and its packages take ids; use uid "
     "1000 or above, e.g. 2001"),
    ("a user's unknown account",
     _set("users", [{"name": "alice", "uid": 2001, "accounts": ["physics"]}]),
     "error: users[0].accounts[0]: 'physics' is not an account of accounting.accounts; add an accounting section "
     "with accounts: [{name: physics}]"),
    ("an account's unknown parent",
     _set("accounting", {"accounts": [{"name": "ml", "parent": "physics"}]}),
     "error: accounting.accounts[0].parent: 'physics' is not an account of accounting.accounts; name a listed "
     "account, or root"),
    ("a directory user's unknown account",
     _set("accounting", {"accounts": [{"name": "ml"}], "users": [{"name": "dave", "accounts": ["physics"]}]}),
     "error: accounting.users[0].accounts[0]: 'physics' is not an account of accounting.accounts; add "
     "{name: physics} to accounting.accounts"),
    ("homes in a system path",
     _set("homes", {"base": "/usr/home"}),
     "error: homes.base: '/usr/home' is a system path; use a folder of its own, such as /home or <mount point>/home"),
    ("certify's user on a person's uid",
     lambda d: (d.update(users=[{"name": "alice", "uid": 2001}]), d.update(certify={"user": {"uid": 2001}})),
     "error: certify.user.uid: 2001 is already the uid or gid of 'alice' (certify's user's gid is its uid); give "
     "certify's user an id of its own, e.g. 59990"),
    ("active checks with the health program off",
     _set("health", {"enabled": False, "active": {"interval_s": 600}}),
     "error: health.active: is set while health.enabled is false: the health service runs the active checks; set "
     "health.enabled: true, or remove health.active"),
    ("active checks beside a spec's own preemption",
     lambda d: (d.update(health={"active": {}}), d.setdefault("software", {}).update(
         slurm={"config": {"PreemptType": "preempt/qos"}})),
     "error: software.slurm.config.PreemptType: is written by gpu-provision while health.active is set (its "
     "partition is preempted by every other); remove PreemptType from software.slurm.config, or remove "
     "health.active"),
    ("active checks on slurmd's port",
     _set("health", {"active": {"port": 6818}}),
     "error: health.active.port: 6818 is a Slurm daemon's port; choose another port, e.g. 5301"),
    ("Prometheus on slurmctld's port",
     _set("monitoring", {"prometheus_port": 6817}),
     "error: monitoring.prometheus_port: 6817 is a Slurm daemon's port; choose another port"),
    ("two monitoring services on one port",
     _set("monitoring", {"alertmanager_port": 9100}),
     "error: monitoring: port 9100 is given to alertmanager_port and node_exporter_port; give each service its own "
     "port"),
    ("a receiver's URL file that is missing",
     _set("monitoring", {"receivers": [{"name": "ops", "url_file": "/nonexistent/hook"}]}),
     "error: monitoring.receivers[0].url_file: /nonexistent/hook: no such file; give the path of a file holding the "
     "receiver's URL"),
    ("Grafana with monitoring off",
     _set("monitoring", {"enabled": False, "grafana": GRAFANA}),
     "error: monitoring.grafana: is set while monitoring.enabled is false (Grafana reads the cluster's Prometheus); "
     "set monitoring.enabled: true, or remove monitoring.grafana"),
    ("Grafana on the sandbox",
     lambda d: (d.update(provider={"type": "sandbox"}, node_groups=[
         {"name": "ctl", "roles": ["controller"], "count": 1}], filesystem={"type": "none"}),
         _set("monitoring", {"grafana": GRAFANA})(d)),
     "error: monitoring.grafana: cannot be installed on the sandbox provider: Debian has no Grafana package, and its "
     "nodes reach only the Debian mirror, not Grafana's repository; remove monitoring.grafana, and import the "
     "dashboards (playbooks/roles/monitoring/files/dashboards) into your own Grafana"),
    ("Grafana on Prometheus's port",
     _set("monitoring", {"grafana": {**GRAFANA, "port": 9090}}),
     "error: monitoring: port 9090 is given to prometheus_port and grafana.port; give each service its own port"),
    ("Grafana's key file is not the fingerprint's key",
     _set("monitoring", {"grafana": {**GRAFANA, "key": str(KEYS / "other-key-rsa.asc")}}),
     f"error: monitoring.grafana.key_fingerprint: '{KEYS / 'other-key-rsa.asc'}' holds the key "
     f"1D116EA2A3E2C02406F912CBB4D940D27E229B89, not {SITE_FPR}; give the file of the key with this fingerprint, "
     "or correct the fingerprint"),
    ("Grafana's key file is not an OpenPGP key",
     _set("monitoring", {"grafana": {**GRAFANA, "key": str(KEYS / "README.md")}}),
     f"error: monitoring.grafana.key: '{KEYS / 'README.md'}' is not an OpenPGP key gpg can read (gpg: no valid "
     "OpenPGP data found.); give an OpenPGP public key file, armored or binary, as `gpg --export [--armor] KEYID` "
     "writes it"),
    ("two monitoring nodes",
     lambda d: d["node_groups"].append({"name": "mon", "roles": ["monitoring"], "count": 2}),
     "error: node_groups: 2 nodes have the monitoring role; Prometheus and Alertmanager run on one; give the "
     "monitoring role to one node (a group with count: 1)"),
    ("an LDAP CA file that is missing",
     _set("directory", {"type": "ldap", "uri": "ldaps://ldap.example.org", "base_dn": "dc=example,dc=org",
                        "ca_file": "/nonexistent/ca.pem"}),
     "error: directory.ca_file: '/nonexistent/ca.pem' does not exist; give the path of the LDAP server's CA "
     "certificate (PEM) on this machine"),
]


@pytest.mark.parametrize("change, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validator_reports_exact_message(change, expected):
    rendered = [f.render() for f in semantic_findings(_spec(change))]
    assert expected in rendered, rendered


def test_every_validator_is_exercised_by_a_case():
    fired = set()
    for _, change, _ in CASES:
        spec = _spec(change)
        fired |= {check.__name__ for check in VALIDATORS if check(spec)}
    assert fired == {check.__name__ for check in VALIDATORS}


def test_a_site_repository_with_its_key_and_fingerprint_has_no_findings():
    assert semantic_findings(_spec(_slurm())) == []
    schedmd = {"client": ["slurm-smd-client"], "controller": ["slurm-smd-slurmctld"], "compute": ["slurm-smd-slurmd"],
               "accounting": ["slurm-smd-slurmdbd"]}
    assert semantic_findings(_spec(_slurm(packages=schedmd, repository_suite="./"))) == []


def test_all_findings_are_reported_together():
    def many(d):
        _set("node_groups.1.gpu.model", "H100-SMX")(d)
        _set("filesystem.mount_point", "/etc/x")(d)
        _set("node_groups.0.addresses", ["10.9.9.9"])(d)
    assert len(semantic_findings(_spec(many))) == 3


def test_errors_sort_before_warnings():
    def change(d):
        d["node_groups"][1].pop("gpu")
        d.update(certify={"level": "full"})
        d["filesystem"]["replica"] = 5
    levels = [f.level for f in semantic_findings(_spec(change))]
    assert levels == sorted(levels, key=lambda level: level != "error") and "warning" in levels
