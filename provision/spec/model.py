"""The cluster spec's structure: pydantic models that reject unknown keys and wrong types."""
from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, StrictBool, field_validator

from provision import hostlist
from provision.limits import MAX_NODE_GROUPS, MAX_NODES_PER_CLUSTER, MAX_NODES_PER_GROUP, clip
from provision.providers import registry
from provision.spec.monitoring import Monitoring
from provision.spec.people import MAX_USERS, Accounting, CertifyUser, Directory, Homes, User
from provision.spec.section import StrictModel
from provision.spec.slurm_config import ALLOWED as SLURM_PARAMETERS, SlurmParameter, SlurmValue
from provision.spec.shapes import (Addresses, AptComponent, AptSuite, DebianVersion, Fingerprint, HostName, Hostlist,
                                   LocalPath, MountPoint, NcclVersion, PackageName, RemotePath, Token, Url, UserName,
                                   shape_error)

Role = Literal["controller", "login", "compute", "storage", "monitoring"]
ROLES: tuple[str, ...] = ("controller", "login", "compute", "storage", "monitoring")

_NAME = r"^[a-z][a-z0-9-]{0,30}$"
_NAME_HINT = "lower-case letters, digits and '-', starting with a letter, at most 31 characters"
NAME_PATTERN, NAME_HINT = _NAME, _NAME_HINT  # cluster and group names; `init --name` checks the same


ProviderSpec = Annotated[Union[registry.configs()], Field(discriminator="type")]  # each provider's own section


class GpuSpec(StrictModel):
    """GPUs in every node of a compute group."""

    model: Token = Field(description="a key of provision.certify.probe.gpus.GPU_MODELS, e.g. H100-SXM")
    count: int = Field(ge=1, le=16)


class Interconnect(StrictModel):
    """The high-speed fabric between GPU nodes."""

    type: Literal["none", "infiniband", "efa"] = "none"
    nics: int = Field(0, ge=0, le=32, description="fabric NICs per node")


class NodeGroup(StrictModel):
    """Nodes that share roles and hardware; a compute group becomes a Slurm partition."""

    name: str = Field(pattern=_NAME)
    roles: list[Role] = Field(min_length=1)
    count: int | None = Field(None, ge=1, le=MAX_NODES_PER_GROUP)
    hosts: Hostlist | None = Field(None, description="hostlist expression, e.g. gpu[01-16]")
    addresses: Addresses | None = Field(None, description="list or expression, e.g. 10.0.0.[11-26]")
    gpu: GpuSpec | None = None
    partition: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]+$")
    default_partition: StrictBool = False
    cpus: int | None = Field(None, ge=1)
    real_memory_mb: int | None = Field(None, ge=1)
    interconnect: Interconnect = Interconnect()
    instance_type: Token | None = None
    capacity: Literal["on-demand", "spot", "reservation"] = "on-demand"
    capacity_reservation_id: Token | None = None
    os: str | None = Field(None, pattern=r"^[a-z][a-z0-9]*-[0-9][0-9.]*$",
                           description="the OS release the group's nodes run, as os-release ID-VERSION_ID: "
                                       "debian-13, debian-12, ubuntu-24.04; preflight checks it")


class NvidiaDriver(StrictModel):
    """The NVIDIA driver: a pinned branch, optionally an exact version."""

    branch: int = 570
    version: Token | None = None
    source: Literal["cuda-repo", "distribution"] = "cuda-repo"
    open_kernel_modules: StrictBool = True
    reboot: Literal["drain", "now", "never"] = "drain"


class Cuda(StrictModel):
    """CUDA toolkits installed side by side; /usr/local/cuda points at the default."""

    versions: list[str] = Field(["12.8"], min_length=1)
    default: Token | None = None

    @field_validator("versions")
    @classmethod
    def _dotted(cls, versions: list[str]) -> list[str]:
        """Accept only MAJOR.MINOR (ASCII digits) so package names (cuda-toolkit-12-8) can be derived."""
        for version in versions:
            if not re.fullmatch(r"[0-9]{1,3}\.[0-9]{1,3}", version):
                raise ValueError(f"{clip(version)} is not MAJOR.MINOR; write e.g. 12.8")
        return versions


class Nccl(StrictModel):
    """NCCL, pinned to a build for the default CUDA."""

    version: NcclVersion = "2.26.2"


_PACKAGES = list[PackageName]


class SlurmPackages(StrictModel):
    """The Slurm packages of each node role, by the names the site repository gives them (Debian's by default;
    SchedMD's builds name them slurm-smd-*, which conflict with Debian's)."""

    client: _PACKAGES = Field(["slurm-client"], min_length=1, max_length=32, description="every Slurm node")
    controller: _PACKAGES = Field(["slurmctld"], min_length=1, max_length=32, description="the controller")
    compute: _PACKAGES = Field(["slurmd"], min_length=1, max_length=32, description="compute nodes")
    accounting: _PACKAGES = Field(["slurmdbd"], min_length=1, max_length=32,
                                  description="the controller, with accounting (MariaDB comes from the distribution)")
    pam_adopt: _PACKAGES = Field(["libpam-slurm-adopt"], max_length=32,
                                 description="pam_slurm_adopt on compute nodes; [] where the repository lacks it (then "
                                             "people may log in to any compute node)")

    def every(self) -> list[str]:
        """Every package named, once, in role order."""
        return list(dict.fromkeys(self.client + self.controller + self.compute + self.accounting))


class Slurm(StrictModel):
    """Slurm packages and accounting: Debian's own, or a site's APT repository pinned to one version."""

    source: Literal["distribution", "repository"] = "distribution"
    repository_url: Url | None = None
    repository_key: LocalPath | None = Field(None, description="the repository's signing key on this machine: an "
                                             "OpenPGP public key file, armored or binary")
    repository_key_fingerprint: Fingerprint | None = Field(None, description="the key's fingerprint (40 hex digits); "
                                                           "apt then accepts only this key's signatures")
    repository_suite: AptSuite | None = Field(None, description="default: the node's release codename; a flat "
                                              "repository: ./")
    repository_components: list[AptComponent] | None = Field(None, max_length=16, description="default: [main]")
    version: DebianVersion | None = Field(None, description="the exact package version, e.g. 24.11.5-1")
    packages: SlurmPackages = SlurmPackages()
    accounting: StrictBool = True
    config: dict[SlurmParameter, SlurmValue] = Field(
        default_factory=dict, max_length=64, json_schema_extra={"propertyNames": {"enum": list(SLURM_PARAMETERS)}},
        description="extra slurm.conf parameters (scheduler, timeouts, priority), e.g. {KillWait: 60}; the ones "
                    "gpu-provision writes itself are refused (provision/spec/slurm_config.py)")

    REPOSITORY_FIELDS: ClassVar[tuple[str, ...]] = (
        "repository_url", "repository_key", "repository_key_fingerprint", "repository_suite", "repository_components",
        "version", "packages")


class Mirrors(StrictModel):
    """Download locations, so an air-gapped site can point every fetch at its own mirror."""

    cuda_repository: Url | None = None
    nccl_tests_source: Url | None = None
    efa_installer: Url | None = None
    lustre_repository: Url | None = None
    beegfs_repository: Url | None = None


class Software(StrictModel):
    """Versions of everything installed on the nodes."""

    nvidia_driver: NvidiaDriver = NvidiaDriver()
    cuda: Cuda = Cuda()
    nccl: Nccl = Nccl()
    slurm: Slurm = Slurm()
    mirrors: Mirrors = Mirrors()


class Filesystem(StrictModel):
    """The shared filesystem mounted on every node."""

    type: Literal["none", "glusterfs", "lustre", "beegfs", "nfs"] = "none"
    mount_point: MountPoint = "/shared"
    volume: str = Field("shared", pattern=r"^[A-Za-z0-9_-]+$")
    replica: int | None = Field(None, ge=1)
    server: HostName | None = Field(None, description="lustre MGS/DNS name, beegfs management host, nfs server")
    remote_path: RemotePath | None = Field(None, description="lustre mount name or nfs export")


class Ssh(StrictModel):
    """How the tool and Ansible log in to nodes."""

    user: UserName = "root"
    key_path: LocalPath | None = Field(None, description="private key; omit to use the per-cluster generated key")
    port: int = Field(22, ge=1, le=65535)


class Certify(StrictModel):
    """How deep certification goes at the end of `up`."""

    level: Literal["quick", "standard", "full"] = "quick"
    user: CertifyUser | None = Field(CertifyUser(), description="who runs the user-shaped jobs; null: root")


class ActiveChecks(StrictModel):
    """Measurements on idle compute nodes on a schedule (README "Active checks"): each node's health service measures
    its links to a few peers, host memory bandwidth, the shared filesystem and, on GPU nodes, a GEMM and DCGM, inside a
    job of a hidden partition that every other partition preempts (a user's job never waits for one); a confirmed
    failure drains the node naming the check and the figure, a pass returns a node the active checks drained."""

    interval_s: int = Field(3600, ge=10, le=604800, description="seconds between two active passes of a node")
    level: Literal["quick", "standard"] = Field("quick", description="standard: longer measurements, DCGM level 2")
    peers: int = Field(3, ge=1, le=16, description="how many other compute nodes a pass measures links to")
    net_min_gbps: float | None = Field(None, gt=0, le=10000, description="the floor of a node's links (iperf3 TCP); "
                                       "default: 0.25 on the sandbox (paced at 1 Gb/s), else 1 (a tenth of 10 GbE)")
    port: int = Field(5301, ge=1024, le=65535, description="TCP port of each compute node's iperf3 server")


class Health(StrictModel):
    """The node health program on every compute node (Slurm's HealthCheckProgram and its own service)."""

    enabled: StrictBool = True
    interval_s: int = Field(300, ge=5, le=86400, description="seconds between passes")
    node_state: list[Literal["ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE"]] = Field(
        ["ANY"], min_length=1, description="Slurm's HealthCheckNodeState: which nodes Slurm checks")
    active: ActiveChecks | None = Field(None, description="measurements on idle nodes on a schedule; null: none")


class ClusterSpec(StrictModel):
    """A whole cluster: where its nodes come from, what runs on them, how it is proven."""

    name: str = Field(pattern=_NAME)
    provider: ProviderSpec
    ssh: Ssh = Ssh()
    node_groups: list[NodeGroup] = Field(min_length=1, max_length=MAX_NODE_GROUPS)
    software: Software = Software()
    filesystem: Filesystem = Filesystem()
    certify: Certify = Certify()
    health: Health = Health()
    monitoring: Monitoring = Monitoring()
    users: list[User] = Field(default_factory=list, max_length=MAX_USERS,
                              description="people: the same account on every node (provision/spec/people.py)")
    homes: Homes = Homes()
    accounting: Accounting | None = Field(None, description="Slurm accounts, QoS and enforcement")
    directory: Directory | None = Field(None, description="an LDAP server every node resolves users from (SSSD)")
    state_dir: LocalPath | None = Field(None,
                                        description="default: $PROVISION_STATE_DIR or ~/.local/state/gpu-provision")

    @field_validator("node_groups")
    @classmethod
    def _bounded(cls, groups: list[NodeGroup]) -> list[NodeGroup]:
        """The cluster's node count, summed from counts and sized hostlists before anything is expanded."""
        total = sum(hostlist.count(g.hosts) if g.hosts else (g.count or 0) for g in groups)
        if total > MAX_NODES_PER_CLUSTER:
            raise shape_error(f"add up to {total} nodes; a cluster has at most {MAX_NODES_PER_CLUSTER}",
                              "make the cluster smaller, or split it into several clusters")
        return groups

    def people_names(self) -> list[str]:
        """The names of the spec's people: its users, then the directory's people of accounting.users (those not
        among the users: validation refuses a name in both)."""
        local = [user.name for user in self.users]
        named = [user.name for user in self.accounting.users] if self.accounting else []
        return local + [name for name in dict.fromkeys(named) if name not in local]
