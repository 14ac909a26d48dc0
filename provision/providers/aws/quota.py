"""Enough running-vCPU quota for the nodes still to launch (Service Quotas), read before anything is created."""
from __future__ import annotations

from collections import Counter

from provision.adaptors.aws import Aws, UnsupportedError
from provision.errors import CloudAuthError, CloudNotFoundError, QuotaError
from provision.providers.aws.facts import TypeFacts
from provision.providers.aws.instance_types import quota_class
from provision.spec.model import ClusterSpec

# Service Quotas codes for running vCPUs: (quota class, spot) -> code.
QUOTA_CODES = {
    ("Standard", False): "L-1216C47A", ("Standard", True): "L-34B43A08",
    ("G", False): "L-DB2E81BA", ("G", True): "L-3819A6DF",
    ("P", False): "L-417A185B", ("P", True): "L-7212CCBC",
}


def check(aws: Aws, spec: ClusterSpec, types: dict[str, TypeFacts], pending: dict[str, int]) -> list[str]:
    """Enough running-vCPU quota for the nodes still to launch; returns notes on what could not be read."""
    need: Counter[tuple[str, bool]] = Counter()
    for group in spec.node_groups:
        facts = types.get(group.instance_type or "")
        if facts and pending.get(group.name) and group.capacity != "reservation":
            need[(quota_class(facts.name), group.capacity == "spot")] += facts.vcpus * pending[group.name]
    notes: list[str] = []
    limits = {}
    for (cls, spot), vcpus in sorted(need.items()):
        code = QUOTA_CODES.get((cls, spot))
        if code is None:
            notes.append(f"no vCPU quota code known for {cls} {'spot' if spot else 'on-demand'} instances; "
                         "quota not checked")
            continue
        limit = _quota_value(aws, code, notes)
        if limit is not None:
            limits[(cls, spot)] = (code, limit)
    used = _vcpus_in_use(aws, types) if limits else Counter()
    for (cls, spot), (code, limit) in limits.items():
        wanted, in_use = need[(cls, spot)], used[(cls, spot)]
        if in_use + wanted > limit:
            raise QuotaError(f"the {'spot' if spot else 'on-demand'} {cls} vCPU quota ({code}) is {limit:g} in "
                             f"{spec.provider.region}; {in_use} are in use and the cluster needs {wanted} more",
                             hint=f"request an increase to at least {in_use + wanted:g} (Service Quotas, ec2, "
                                  f"{code}), or ask for fewer nodes; nothing was created")
    return notes


def _quota_value(aws: Aws, code: str, notes: list[str]) -> float | None:
    """The applied quota value, else the AWS default; None (with a note) when neither can be read."""
    for operation in ("get_service_quota", "get_aws_default_service_quota"):
        try:
            return float(aws.call("service-quotas", operation, ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
        except CloudNotFoundError:
            continue
        except (CloudAuthError, UnsupportedError) as exc:
            notes.append(f"vCPU quota {code} not checked: {exc.message}")
            return None
    notes.append(f"vCPU quota {code} not checked: the Service Quotas endpoint does not know it")
    return None


def _vcpus_in_use(aws: Aws, types: dict[str, TypeFacts]) -> Counter[tuple[str, bool]]:
    """vCPUs of running or pending instances in the region per (quota class, spot), in one filtered describe.

    Classified here rather than with an instance-type wildcard filter, which moto does not implement.
    """
    used: Counter[tuple[str, bool]] = Counter()
    unknown: Counter[tuple[str, bool, str]] = Counter()
    for reservation in aws.pages("ec2", "describe_instances", "Reservations", MaxResults=1000,
                                 Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]):
        for instance in reservation["Instances"]:
            itype, spot = instance["InstanceType"], instance.get("InstanceLifecycle") == "spot"
            cpu = instance.get("CpuOptions") or {}
            if cpu.get("CoreCount"):
                used[(quota_class(itype), spot)] += cpu["CoreCount"] * cpu.get("ThreadsPerCore", 1)
            elif itype in types:
                used[(quota_class(itype), spot)] += types[itype].vcpus
            else:
                unknown[(quota_class(itype), spot, itype)] += 1
    if unknown:
        described = {i["InstanceType"]: TypeFacts.from_api(i).vcpus for i in aws.pages(
            "ec2", "describe_instance_types", "InstanceTypes", InstanceTypes=sorted({k[2] for k in unknown}))}
        for (cls, spot, itype), count in unknown.items():
            used[(cls, spot)] += described.get(itype, 0) * count
    return used
