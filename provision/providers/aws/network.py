"""The VPC, subnet, internet gateway and route table, made only when the spec names no existing ones.

CreateRouteTable carries a client token, the same on every retry of the call, so a retry of a call that landed
returns that table; CreateVpc, CreateSubnet and CreateInternetGateway take none (a retried call that had landed
leaves a second one, tagged with the cluster's id, which `down` removes).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from provision.adaptors.aws import AlreadyExistsError, Aws
from provision.providers.aws import tags
from provision.providers.aws.ledger import Ledger
from provision.providers.aws.lookup import one_by_tag
from provision.records import Progress
from provision.spec.model import ClusterSpec


@dataclass(frozen=True)
class Network:
    """Where the nodes go."""

    vpc_id: str
    subnet_id: str
    owned: bool  # made by us, with an internet gateway: nodes get public addresses


def ensure(aws: Aws, ledger: Ledger, spec: ClusterSpec, progress: Progress) -> Network:
    """The spec's existing VPC and subnet, or new ones with a route to the internet."""
    p = spec.provider
    if p.vpc_id and p.subnet_id:
        for key, value in (("vpc", p.vpc_id), ("subnet", p.subnet_id)):
            if ledger.id(key) != value:
                ledger.created(key, key, value, owned=False)
        return Network(p.vpc_id, p.subnet_id, owned=False)
    owner = ledger.owner

    def make(kind: str, operation: str, result: str, id_field: str, **params) -> str:
        """Create one taggable network resource and return its id."""
        tagged = tags.specifications(owner.tags(kind), kind)
        return getattr(aws.ec2, operation)(TagSpecifications=tagged, **params)[result][id_field]

    def find(kind: str, operation: str, key: str, id_field: str):
        return lambda: one_by_tag(aws, operation, key, id_field, owner, kind)

    vpc, made = ledger.ensure("vpc", "vpc",
                              lambda: make("vpc", "create_vpc", "Vpc", "VpcId", CidrBlock=str(p.vpc_cidr)),
                              find("vpc", "describe_vpcs", "Vpcs", "VpcId"))
    _said(progress, made, f"created VPC {vpc} ({p.vpc_cidr})")
    gateway, made = ledger.ensure(
        "internet-gateway", "internet-gateway",
        lambda: make("internet-gateway", "create_internet_gateway", "InternetGateway", "InternetGatewayId"),
        find("internet-gateway", "describe_internet_gateways", "InternetGateways", "InternetGatewayId"), vpc_id=vpc)
    _said(progress, made, f"created internet gateway {gateway}")
    _step(ledger, "internet-gateway-attached",
          lambda: aws.ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc))
    subnet, made = ledger.ensure(
        "subnet", "subnet",
        lambda: make("subnet", "create_subnet", "Subnet", "SubnetId", VpcId=vpc, CidrBlock=str(p.subnet_cidr),
                     AvailabilityZone=p.availability_zone),
        find("subnet", "describe_subnets", "Subnets", "SubnetId"))
    _said(progress, made, f"created subnet {subnet} ({p.subnet_cidr}, {p.availability_zone})")
    table, made = ledger.ensure(
        "route-table", "route-table", lambda: make("route-table", "create_route_table", "RouteTable", "RouteTableId",
                                                   VpcId=vpc, ClientToken=uuid.uuid4().hex),
        find("route-table", "describe_route_tables", "RouteTables", "RouteTableId"))
    _said(progress, made, f"created route table {table}")
    _step(ledger, "default-route", lambda: aws.ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0",
                                                                GatewayId=gateway))
    ledger.ensure("route-table-association", "route-table-association",
                  lambda: aws.ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)["AssociationId"],
                  lambda: _association(aws, table, subnet))
    return Network(vpc, subnet, owned=True)


def _step(ledger: Ledger, step: str, action) -> None:
    """Run an attach/route step once; 'already there' counts as done (a crash may have come after it)."""
    if ledger.step_done(step):
        return
    try:
        action()
    except AlreadyExistsError:
        pass
    ledger.mark_step(step)


def _association(aws: Aws, table: str, subnet: str) -> str | None:
    """The association of the route table with the subnet, if the last run made it."""
    for route_table in aws.ec2.describe_route_tables(RouteTableIds=[table])["RouteTables"]:
        for association in route_table.get("Associations", []):
            if association.get("SubnetId") == subnet:
                return association["RouteTableAssociationId"]
    return None


def _said(progress: Progress, made: bool, line: str) -> None:
    """Report a creation, not an adoption or a resource from an earlier run."""
    if made:
        progress(line)
