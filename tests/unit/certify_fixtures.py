"""A small cluster and a certify run over it, shared by the tests of `up`'s certify stage and of `provision certify`:
node01 passes, node02's slurmd check has the verdict asked for."""
from __future__ import annotations

from pathlib import Path

from provision.certify.control.run import CertifyRun
from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport, NodeResult
from provision.certify.report import ReportPaths
from provision.records import ClusterInfo, NodeInfo
from provision.spec.model import ClusterSpec

SPEC = ClusterSpec.model_validate({
    "name": "unit", "provider": {"type": "sandbox"}, "certify": {"level": "standard"},
    "node_groups": [{"name": "ctl", "roles": ["controller"], "count": 1},
                    {"name": "node", "roles": ["compute"], "count": 2, "partition": "batch",
                     "default_partition": True}],
})
CLUSTER = ClusterInfo(name="unit", provider="sandbox", nodes=(
    NodeInfo(name="ctl01", group="ctl", roles=("controller",), state="running"),))
PATHS = ReportPaths(Path("/r"), Path("/r/report.json"), Path("/r/report.xml"), Path("/r/report.html"))


def certify_run(verdict: str, drain_failed: bool = False) -> CertifyRun:
    """The run's report; with drain_failed, a failed node02 is recorded as drained, as `certify --drain` leaves it."""
    checks = (CheckResult("slurm.slurmd", verdict, node="node02", detail="slurmd is not running [/shared]"),
              CheckResult("gpu.nvml", "na", node="node02"))
    report = ClusterReport("unit", "standard", "2026-01-01T00:00:00.000+00:00", "2026-01-01T00:00:09.500+00:00",
                           (NodeResult("node01", (CheckResult("slurm.srun", "pass", node="node01"),)),
                            NodeResult("node02", checks)))
    drained = {"node02": "certify:slurm.slurmd"} if drain_failed and verdict == "fail" else {}
    return CertifyRun(report, PATHS, drained=drained)
