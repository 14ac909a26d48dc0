"""Helpers for the aws provider tests: constants, the fault injector and independent checks of what exists."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlparse

import pytest

from provision.adaptors.aws import Aws, RetryPolicy

REGION = "us-east-1"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Tiny delays so retries and waiters cost milliseconds.
FAST = RetryPolicy(max_attempts=4, base_delay=0.001, max_delay=0.005, capacity_attempts=2, capacity_delay=0.001,
                   dependency_attempts=2, wait_delay=0.01, wait_attempts=50, fsx_wait_delay=0.01, fsx_wait_attempts=5)
CREATE_OPERATIONS = ("Create", "Run", "Import", "Authorize", "Attach", "Associate", "Allocate", "Put")

BASE = {
    "name": "moto",
    "provider": {"type": "aws", "region": REGION, "availability_zone": "us-east-1a",
                 "ssh_ingress_cidr": "203.0.113.7/32",
                 "ami": {"ssm_parameter": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"}},
    "ssh": {"user": "ec2-user"},
    "node_groups": [
        {"name": "head", "roles": ["controller", "login"], "count": 1, "instance_type": "m7i.2xlarge"},
        {"name": "gpu", "roles": ["compute"], "count": 4, "instance_type": "p5.48xlarge",
         "gpu": {"model": "H100-SXM", "count": 8}, "interconnect": {"type": "efa", "nics": 32}},
    ],
}


# Import everything first, say so, then wait for the start file, so every process reaches the same point together.
AT_THE_SIGNAL = """\
import os, sys, time
from provision.cli.main import run
open(sys.argv[1] + ".ready-" + str(os.getpid()), "w").close()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.005)
run(sys.argv[2:])
"""


def run_together(go: Path, arguments: list[list[str]], timeout: float = 300) -> list[tuple[int, str, str, int]]:
    """Run one `provision` process per argument list, released at one instant once each has imported everything;
    (pid, stdout, stderr, exit code) of each, in the order given."""
    processes = [subprocess.Popen([sys.executable, "-c", AT_THE_SIGNAL, str(go), *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=os.environ) for args in arguments]
    deadline = time.monotonic() + 120  # a loaded machine imports slowly: wait until every one says it is ready
    while len(list(go.parent.glob(f"{go.name}.ready-*"))) < len(processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list(go.parent.glob(f"{go.name}.ready-*"))) == len(processes), "the processes did not start"
    go.touch()
    return [(p.pid, *p.communicate(timeout=timeout), p.returncode) for p in processes]


def require_loopback(url: str | None) -> str:
    """Fail loudly unless the endpoint is this machine."""
    host = urlparse(url or "").hostname
    if host not in LOOPBACK:
        pytest.fail(f"AWS_ENDPOINT_URL is {url!r}; the aws tests only ever talk to a moto server on loopback")
    return url


def tagged(raw, cluster: str) -> list[str]:
    """Everything still carrying the cluster tag: live instances, key pairs and the tagging API's answer."""
    tag = [{"Name": "tag:gpu-provision:cluster", "Values": [cluster]}]
    live = [i["InstanceId"] for r in raw.ec2.describe_instances(Filters=tag)["Reservations"] for i in r["Instances"]
            if i["State"]["Name"] != "terminated"]
    keys = [k["KeyName"] for k in raw.ec2.describe_key_pairs(Filters=tag)["KeyPairs"]]
    mapped = raw.tagging.get_resources(TagFilters=[{"Key": "gpu-provision:cluster", "Values": [cluster]}],
                                       ResourcesPerPage=100)["ResourceTagMappingList"]
    others = [m["ResourceARN"] for m in mapped if ":instance/" not in m["ResourceARN"]]
    return live + keys + others


def publish(raw, name: str, value: str) -> None:
    """Publish a public parameter (/aws/service/...) in moto's SSM, as an image's publisher does in every region of AWS;
    each call adds a version, the newest answers GetParameter.

    moto refuses PutParameter under /aws, as AWS refuses it to every account, and serves only its own public trees
    (Amazon Linux, ECS, global infrastructure). Its server runs in this process (conftest's ThreadedMotoServer), so the
    parameter goes into moto's SSM backend of the caller's account and region, the way moto loads its own trees."""
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter, ssm_backends

    account = raw.sts.get_caller_identity()["Account"]
    versions = ssm_backends[account][REGION]._parameters[name]
    versions.append(Parameter(account_id=account, name=name, value=value, parameter_type="String", description=None,
                              allowed_pattern=None, keyid=None, last_modified_date=utcnow(),
                              version=len(versions) + 1, data_type="aws:ec2:image"))


def creates(calls: Counter) -> dict[str, int]:
    """The create-like calls among counted API calls."""
    return {op: n for op, n in calls.items() if op.split(":", 1)[1].startswith(CREATE_OPERATIONS)}


class SimulatedCrash(Exception):
    """Stands in for the process dying (kill -9, power loss) at an exact point."""


class Faults:
    """Faults injected at the SDK boundary through botocore event hooks on the adaptor's clients."""

    def __init__(self, aws: Aws) -> None:
        self.aws = aws
        self.seen: Counter[str] = Counter()
        self.params: dict[str, list[dict]] = {}

    def fail(self, operation: str, code: str, *, times: int = 1, after: int = 0, service: str = "ec2",
             status: int = 400) -> None:
        """Answer calls number after+1 .. after+times of an operation with an AWS error instead of sending them."""
        def handler(model, **_):
            self.seen[operation] += 1
            if after < self.seen[operation] <= after + times:
                return (SimpleNamespace(status_code=status, headers={}),
                        {"Error": {"Code": code, "Message": f"injected {code}"},
                         "ResponseMetadata": {"HTTPStatusCode": status}})
            return None
        self.aws.on(f"before-call.{service}.{operation}", handler)

    def answer(self, operation: str, response: dict, *, service: str) -> None:
        """Answer an operation the endpoint lacks with a fixed successful response."""
        self.aws.on(f"before-call.{service}.{operation}",
                    lambda **_: (SimpleNamespace(status_code=200, headers={}), response))

    def crash_after(self, operation: str, *, service: str = "ec2", call: int = 1) -> None:
        """Die right after the n-th call of an operation succeeded, before its answer is recorded."""
        def handler(**_):
            self.seen[f"after:{operation}"] += 1
            if self.seen[f"after:{operation}"] == call:
                raise SimulatedCrash(operation)
        self.aws.on(f"after-call.{service}.{operation}", handler)

    def crash_before(self, operation: str, *, service: str = "ec2") -> None:
        """Die just before the first call of an operation is sent (between two resources)."""
        def handler(**_):
            self.seen[f"before:{operation}"] += 1
            if self.seen[f"before:{operation}"] == 1:
                raise SimulatedCrash(operation)
        self.aws.on(f"before-call.{service}.{operation}", handler)

    def spy(self, operation: str, *, service: str = "ec2") -> list[dict]:
        """Record the parameters of every call of an operation."""
        seen = self.params.setdefault(operation, [])
        self.aws.on(f"before-parameter-build.{service}.{operation}", lambda params, **_: seen.append(dict(params)))
        return seen
