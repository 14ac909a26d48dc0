"""Count the AWS API calls of `up` and `down` for 4 and 64 GPU nodes, against a moto server started here.

    .venv/bin/python bench/aws_api_calls.py [--fsx] [--sizes 4 64] [--nics 32|4]

Only loopback is contacted: moto runs on 127.0.0.1 with fake credentials. Counts are attempts per
operation as the adaptor's counter sees them (botocore before-parameter-build), waiters included.
"""
from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from provision.adaptors.aws import Aws, RetryPolicy  # noqa: E402
from provision.providers.aws.provider import AwsProvider  # noqa: E402
from provision.spec.model import ClusterSpec  # noqa: E402
from provision.state import ClusterState  # noqa: E402

REGION = "us-east-1"
CREATES = ("Create", "Run", "Import", "Authorize", "Attach", "Associate", "Put")  # Put: the name's claim
FAST = RetryPolicy(base_delay=0.001, max_delay=0.01, wait_delay=0.01, fsx_wait_delay=0.01)


GPU_TYPES = {32: ("p5.48xlarge", "H100-SXM"), 4: ("p4d.24xlarge", "A100-SXM-40GB")}  # EFA interfaces: type, GPU


def spec(nodes: int, fsx: bool, state_dir: Path, nics: int = 32) -> ClusterSpec:
    """A controller plus `nodes` p5.48xlarge with 32 EFA each, or p4d.24xlarge with 4 (`nics`)."""
    instance_type, model = GPU_TYPES[nics]
    provider = {"type": "aws", "region": REGION, "availability_zone": "us-east-1a",
                "ssh_ingress_cidr": "203.0.113.7/32",
                "ami": {"ssm_parameter": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"}}
    if fsx:
        provider["fsx_lustre"] = {"storage_capacity_gib": 2400}
    return ClusterSpec.model_validate({
        "name": f"bench{nodes}", "provider": provider, "ssh": {"user": "ec2-user"},
        "filesystem": {"type": "lustre" if fsx else "none"}, "state_dir": str(state_dir),
        "node_groups": [
            {"name": "head", "roles": ["controller", "login"], "count": 1, "instance_type": "m7i.2xlarge"},
            {"name": "gpu", "roles": ["compute"], "count": nodes, "instance_type": instance_type,
             "gpu": {"model": model, "count": 8}, "interconnect": {"type": "efa", "nics": nics}}]})


def measure(url: str, nodes: int, fsx: bool, state_dir: Path, nics: int = 32) -> tuple[Counter, Counter, float]:
    """Run check_environment + create, then destroy; return the call counts of each and the wall time."""
    aws = Aws(REGION, endpoint_url=url, policy=FAST)
    cluster_spec = spec(nodes, fsx, state_dir, nics)
    provider = AwsProvider(cluster_spec, ClusterState(state_dir, cluster_spec.name), aws=aws)
    started = time.monotonic()
    provider.check_environment()
    provider.create()
    up = Counter(aws.calls)
    aws.calls.clear()
    teardown = provider.destroy()
    if teardown.leftovers:
        raise SystemExit(f"teardown left {teardown.leftovers}")
    return up, Counter(aws.calls), time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 64])
    parser.add_argument("--fsx", action="store_true", help="include an FSx for Lustre file system")
    parser.add_argument("--nics", type=int, default=32, choices=sorted(GPU_TYPES),
                        help="EFA interfaces per GPU node: 32 (p5.48xlarge) or 4 (p4d.24xlarge); moto lists the "
                             "32,000 interfaces of 1,000 p5 nodes too slowly for botocore's read timeout")
    args = parser.parse_args()

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    os.environ.update(AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION=REGION)
    os.environ.pop("AWS_PROFILE", None)
    try:
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            for size in args.sizes:
                results[size] = measure(url, size, args.fsx, Path(tmp), args.nics)
    finally:
        server.stop()
    report(results)


def report(results: dict[int, tuple[Counter, Counter, float]]) -> None:
    """One row per operation, a column per size and phase, then totals."""
    sizes = list(results)
    operations = sorted(set().union(*(set(up) | set(down) for up, down, _ in results.values())))
    header = ["operation"] + [f"{phase} {size}" for size in sizes for phase in ("up", "down")]
    width = max(len(o) for o in operations + ["operation"])
    print("  ".join([header[0].ljust(width)] + [h.rjust(8) for h in header[1:]]))
    for op in operations:
        cells = [str(results[s][i][op] or "") for s in sizes for i in (0, 1)]
        print("  ".join([op.ljust(width)] + [c.rjust(8) for c in cells]))
    for label, pick in (("create calls", lambda c: sum(n for o, n in c.items() if o.split(":")[1].startswith(CREATES))),
                        ("total calls", lambda c: sum(c.values()))):
        cells = [str(pick(results[s][i])) for s in sizes for i in (0, 1)]
        print("  ".join([label.ljust(width)] + [c.rjust(8) for c in cells]))
    for size in sizes:
        print(f"{size} GPU nodes (+1 controller): up+down took {results[size][2]:.1f} s against moto")


if __name__ == "__main__":
    main()
