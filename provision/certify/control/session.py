"""One certification run as it accumulates: the spec, the cluster, what was measured so far; and running one
srun step of it on the controller."""
from __future__ import annotations

import itertools
import secrets
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from provision.certify.control import srun
from provision.certify.control.fleet import Fleet, Outcome
from provision.certify.control.node_definition import Definition
from provision.certify.judging.nccl import NcclJob
from provision.certify.judging.netmatrix import PairResult
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.records import CheckResult
from provision.certify.records import NetSampling, RunScope
from provision.records import ClusterInfo, NodeInfo, Progress
from provision.spec.model import ClusterSpec

PREFIX = "/opt/gpu-provision/certify"  # the certify role's certify_prefix
MPI_CHECK = f"{PREFIX}/bin/mpi-check"  # built by the certify role with mpicc on compute nodes
PROBE = f"{PREFIX}/bin/certify-probe"
GPUBENCH = f"{PREFIX}/bin/gpubench"


def expectation_for(node: NodeInfo, spec: ClusterSpec, *, run_id: str = "manual",
                    fs_size_mib: int = 256) -> NodeExpectation:
    """What the probe compares a node with, from the spec and the node's record."""
    software = spec.software
    cuda = max(software.cuda.versions, key=lambda v: tuple(int(p) for p in v.split(".")))
    mount = spec.filesystem.mount_point if spec.filesystem.type != "none" else None
    fs_type = spec.filesystem.type if mount else None
    return NodeExpectation(node=node.name, gpu_model=node.gpu_model, gpu_count=node.gpu_count,
                           driver_branch=software.nvidia_driver.branch, driver_version=software.nvidia_driver.version,
                           cuda_version=cuda, interconnect=node.interconnect, interconnect_nics=node.interconnect_nics,
                           fs_mount=mount, fs_type=fs_type, fs_size_mib=fs_size_mib, run_id=run_id)


def now_iso() -> str:
    """UTC timestamp with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    """Unique and sortable: UTC time plus random hex (names the scratch folders of the run)."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


@dataclass
class Session:
    """What one collection accumulates."""

    spec: ClusterSpec
    cluster: ClusterInfo  # the nodes judged: the whole cluster, or the controller and the nodes of a partial run
    options: object  # run.CertifyOptions
    progress: Progress
    run_id: str = field(default_factory=new_run_id)
    checks: list[CheckResult] = field(default_factory=list)
    probes: dict[str, ProbeDocument] = field(default_factory=dict)
    fs_verify: dict[str, ProbeDocument] | None = None
    again: dict[str, ProbeDocument] = field(default_factory=dict)  # node -> its GPU benchmarks measured again
    pairs: list[PairResult] = field(default_factory=list)
    sampling: NetSampling | None = None  # which pairs the matrix measured (control.schedule)
    nccl: list[NcclJob] = field(default_factory=list)
    precheck: dict[str, str] = field(default_factory=dict)  # node -> its pre-check output
    view: dict[str, Definition] = field(default_factory=dict)  # the controller's node definitions
    scope: RunScope = field(default_factory=RunScope)  # full, or partial with its peers (certify.control.peers)
    peers: list[NodeInfo] = field(default_factory=list)  # in-service nodes a partial run measures against
    peer_idle: dict[str, int] = field(default_factory=dict)  # peer -> its idle CPUs when chosen
    peer_precheck: dict[str, str] = field(default_factory=dict)  # peer -> its package versions (pre-check text)
    sequence: Iterator[int] = field(default_factory=lambda: itertools.count(1))  # numbers each step's job name

    @property
    def controller(self) -> str:
        return self.cluster.controller.name

    @property
    def compute(self) -> list[NodeInfo]:
        return self.cluster.with_role("compute")

    def job(self, what: str) -> str:
        return f"certify-{what}-{self.run_id}"

    @property
    def user(self) -> str | None:
        """Who the user-shaped steps run as: certify.user of the spec, or root (None)."""
        return self.spec.certify.user.name if self.spec.certify.user else None

    def as_user(self, one: srun.Step) -> srun.Step:
        """A user-shaped step, submitted as certify's user where the spec has one."""
        return replace(one, user=self.user) if self.user else one


def step(run: Session, fleet: Fleet, one: srun.Step) -> tuple[srun.StepOutput, Outcome, float]:
    """Run one srun step from the controller: its output per node, the raw outcome and its wall time.

    Each step's job gets a name of its own (the run's job name and a number). A step that its timeout ended, or whose
    controller command was lost, has that job cancelled: srun stopped on the controller leaves its allocation behind
    while the tasks hang (the cluster's InactiveLimit is 0 by default), holding its nodes from every later step."""
    one = replace(one, job_name=f"{one.job_name}-{next(run.sequence)}")
    started = time.monotonic()
    outcome = fleet.run(run.controller, one.shell(), one.timeout_s + srun.KILL_AFTER_S + 15)
    output = srun.parse(outcome.rc, outcome.stdout, outcome.stderr)
    if outcome.rc is None:
        output.general.append(outcome.error or "the controller stopped answering")
    if output.timed_out or outcome.rc is None:
        fleet.run(run.controller, f"scancel --name={shlex.quote(one.job_name)}", 30)
    return output, outcome, time.monotonic() - started
