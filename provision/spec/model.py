"""The cluster spec's structure: pydantic models that reject unknown keys and wrong types."""
from __future__ import annotations

import re
from ipaddress import IPv4Network
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from provision import hostlist
from provision.limits import MAX_NODE_GROUPS, MAX_NODES_PER_CLUSTER, MAX_NODES_PER_GROUP, clip
from provision.spec.shapes import (Addresses, AmiNameFilter, AmiOwner, BridgeName, HostName, Hostlist,
                                   KeyPairName, LocalPath, MountPoint, RemotePath, SsmParameter, Token, Url,
                                   UserName, shape_error)

Role = Literal["controller", "login", "compute", "storage"]
ROLES: tuple[str, ...] = ("controller", "login", "compute", "storage")

_NAME = r"^[a-z][a-z0-9-]{0,30}$"
_NAME_HINT = "lower-case letters, digits and '-', starting with a letter, at most 31 characters"
NAME_PATTERN, NAME_HINT = _NAME, _NAME_HINT  # cluster and group names; `init --name` checks the same


class _Strict(BaseModel):
    """Base for every spec section: unknown keys are errors, values are immutable after load."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SandboxProvider(_Strict):
    """Simulated nodes on this machine: namespaces, overlay roots, a private bridge."""

    type: Literal["sandbox"]
    subnet: IPv4Network = Field(IPv4Network("10.99.0.0/24"), description="private subnet for the sandbox bridge")
    bridge: BridgeName | None = Field(None, description="bridge name; default derived from the cluster name")
    mirror: Url | None = Field(None, description="Debian mirror URL; default: the one in this machine's apt sources")


class StaticProvider(_Strict):
    """Existing hosts (on-prem, bare metal) listed in the node groups with their addresses."""

    type: Literal["static"]
    subnet: IPv4Network | None = Field(None, description="if set, every address must lie in it")


class AmiSelector(_Strict):
    """Exactly one way of choosing the machine image."""

    id: Token | None = None
    name_filter: AmiNameFilter | None = None
    owner: AmiOwner | None = None
    ssm_parameter: SsmParameter | None = None


class FsxLustre(_Strict):
    """An FSx for Lustre file system created with the cluster."""

    storage_capacity_gib: int = Field(1200, ge=1200, description="1200 or a multiple of 2400")
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "SCRATCH_2"
    per_unit_storage_throughput: Literal[125, 250, 500, 1000] = Field(
        125, description="MB/s per TiB; PERSISTENT_2 only")


class AwsProvider(_Strict):
    """EC2 instances, with EFA and a cluster placement group for GPU groups."""

    type: Literal["aws"]
    region: Token
    availability_zone: Token
    vpc_id: Token | None = Field(None, description="existing VPC; omit to create one")
    subnet_id: Token | None = Field(None, description="existing subnet; omit to create one")
    vpc_cidr: IPv4Network = IPv4Network("10.42.0.0/16")
    subnet_cidr: IPv4Network = IPv4Network("10.42.0.0/20")
    ssh_ingress_cidr: IPv4Network = Field(description="who may reach port 22; 0.0.0.0/0 only if written")
    ami: AmiSelector
    key_pair_name: KeyPairName | None = None
    root_volume_gib: int = Field(200, ge=8, le=16384)
    fsx_lustre: FsxLustre | None = None


ProviderSpec = Annotated[Union[SandboxProvider, StaticProvider, AwsProvider], Field(discriminator="type")]


class GpuSpec(_Strict):
    """GPUs in every node of a compute group."""

    model: Token = Field(description="a key of provision.gpus.GPU_MODELS, e.g. H100-SXM")
    count: int = Field(ge=1, le=16)


class Interconnect(_Strict):
    """The high-speed fabric between GPU nodes."""

    type: Literal["none", "infiniband", "efa"] = "none"
    nics: int = Field(0, ge=0, le=32, description="fabric NICs per node")


class NodeGroup(_Strict):
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


class NvidiaDriver(_Strict):
    """The NVIDIA driver: a pinned branch, optionally an exact version."""

    branch: int = 570
    version: Token | None = None
    source: Literal["cuda-repo", "distribution"] = "cuda-repo"
    open_kernel_modules: StrictBool = True
    reboot: Literal["drain", "now", "never"] = "drain"


class Cuda(_Strict):
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


class Nccl(_Strict):
    """NCCL, pinned to a build for the default CUDA."""

    version: str = Field("2.26.2", pattern=r"^\d+\.\d+\.\d+$")


class Slurm(_Strict):
    """Slurm packages and accounting."""

    source: Literal["distribution", "repository"] = "distribution"
    repository_url: Url | None = None
    accounting: StrictBool = True


class Mirrors(_Strict):
    """Download locations, so an air-gapped site can point every fetch at its own mirror."""

    cuda_repository: Url | None = None
    nccl_tests_source: Url | None = None
    efa_installer: Url | None = None
    lustre_repository: Url | None = None
    beegfs_repository: Url | None = None


class Software(_Strict):
    """Versions of everything installed on the nodes."""

    nvidia_driver: NvidiaDriver = NvidiaDriver()
    cuda: Cuda = Cuda()
    nccl: Nccl = Nccl()
    slurm: Slurm = Slurm()
    mirrors: Mirrors = Mirrors()


class Filesystem(_Strict):
    """The shared filesystem mounted on every node."""

    type: Literal["none", "glusterfs", "lustre", "beegfs", "nfs"] = "none"
    mount_point: MountPoint = "/shared"
    volume: str = Field("shared", pattern=r"^[A-Za-z0-9_-]+$")
    replica: int | None = Field(None, ge=1)
    server: HostName | None = Field(None, description="lustre MGS/DNS name, beegfs management host, nfs server")
    remote_path: RemotePath | None = Field(None, description="lustre mount name or nfs export")


class Ssh(_Strict):
    """How the tool and Ansible log in to nodes."""

    user: UserName = "root"
    key_path: LocalPath | None = Field(None, description="private key; omit to use the per-cluster generated key")
    port: int = Field(22, ge=1, le=65535)


class Certify(_Strict):
    """How deep certification goes at the end of `up`."""

    level: Literal["quick", "standard", "full"] = "quick"


class ClusterSpec(_Strict):
    """A whole cluster: where its nodes come from, what runs on them, how it is proven."""

    name: str = Field(pattern=_NAME)
    provider: ProviderSpec
    ssh: Ssh = Ssh()
    node_groups: list[NodeGroup] = Field(min_length=1, max_length=MAX_NODE_GROUPS)
    software: Software = Software()
    filesystem: Filesystem = Filesystem()
    certify: Certify = Certify()
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
