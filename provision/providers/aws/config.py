"""The aws provider's spec section: region and zone, the network, the image, FSx for Lustre."""
from __future__ import annotations

from ipaddress import IPv4Network
from typing import ClassVar, Literal

from pydantic import Field

from provision.spec.section import ProviderSection, StrictModel
from provision.spec.shapes import AmiNameFilter, AmiOwner, KeyPairName, SsmParameter, Token


# Debian's official image, Debian 12 on x86_64: the public SSM parameter its cloud team keeps in each region it publishes
# to holds the newest AMI id (13 for trixie, arm64 for Graviton). `provision init` writes it: Debian 12 and 13 are the
# releases `make test` tests; Ubuntu's roles are written but untested until a machine can test them.
DEBIAN_12_AMD64 = "/aws/service/debian/release/12/latest/amd64"
PUBLIC_PARAMETERS = "/aws/service/"  # where AWS and image publishers keep public parameters; read-only to accounts


class AmiSelector(StrictModel):
    """Exactly one way of choosing the machine image."""

    id: Token | None = None
    name_filter: AmiNameFilter | None = None
    owner: AmiOwner | None = None
    ssm_parameter: SsmParameter | None = Field(None, description=(
        f"an SSM parameter that holds the image id, read at the cluster's first `up`: a publisher's under "
        f"{PUBLIC_PARAMETERS} (e.g. {DEBIAN_12_AMD64}) or the account's own"))


class FsxLustre(StrictModel):
    """An FSx for Lustre file system created with the cluster."""

    storage_capacity_gib: int = Field(1200, ge=1200, description="1200 or a multiple of 2400")
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "SCRATCH_2"
    per_unit_storage_throughput: Literal[125, 250, 500, 1000] = Field(
        125, description="MB/s per TiB; PERSISTENT_2 only")


class AwsConfig(ProviderSection):
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

    efa: ClassVar[bool] = True
    checks_filesystem_server: ClassVar[bool] = True  # FSx: validation.check_fsx judges filesystem.server
