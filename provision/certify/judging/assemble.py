"""Turn everything certification collected into one ClusterReport with a verdict per check, node and cluster.

Pure: no I/O. Inputs are the probe documents (per node), the cross-node filesystem verification,
the nccl-tests runs, the pairwise network results and any checks the runner made itself (slurm.*).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

from provision import __version__
from provision.certify import catalogue
from provision.certify.judging import confirm, netmatrix, partial, thresholds
from provision.certify.judging.judge import Sample, judge
from provision.certify.judging.nccl import Fabric, NcclJob, judge_jobs
from provision.certify.judging.netmatrix import PairResult
from provision.certify.probe import PROBE_VERSION
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.records import CheckResult, Measurement
from provision.certify.probe.software import NA, SoftwareInventory
from provision.certify.records import ClusterReport, NetMatrix, NetSampling, NodeInventory, NodeResult, RunScope
from provision.errors import CertifyError
from provision.records import NodeInfo

PEAK_MARGIN = 1.02  # a GEMM result above the datasheet peak by more than this is a measurement error
# Which measurements have a floor and which are compared across nodes is the catalogue's (certify/catalogue.py).
# Shared-filesystem throughput is reported per node but not compared: every node writes to the same servers at
# the same moment, and a node that holds a brick or a cache reads locally, so differences between nodes are the
# filesystem's layout, not a fault of the node (fs.mount/write/checksum judge health).
NOT_COMPARED = "reported, not compared across nodes (shared servers)"


def parse_probe_output(text: str, node: str) -> ProbeDocument:
    """The probe's document from its stdout (the last JSON line); CertifyError names the node."""
    for line in reversed(text.strip().splitlines()):
        line = line.split(": ", 1)[1] if line[:1].isdigit() and ": {" in line else line  # srun --label
        if line.lstrip().startswith("{"):
            try:
                return ProbeDocument.from_dict(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CertifyError(f"{node}: probe output is not valid JSON ({exc.msg})",
                                   hint="run the probe by hand on the node to see its error") from exc
    raise CertifyError(f"{node}: the probe printed no JSON document",
                       hint="check that the certify venv exists on the node and the probe runs")


def assemble(*, cluster: str, level: str, nodes: Sequence[NodeInfo], probes: Mapping[str, ProbeDocument],
             started_at: str, finished_at: str, fs_verify: Mapping[str, ProbeDocument] | None = None,
             nccl: Sequence[NcclJob] = (), pairs: Sequence[PairResult] = (),
             extra_checks: Sequence[CheckResult] = (), probed: Sequence[str] | None = None,
             spec_digest: str | None = None, scope: RunScope = RunScope(),
             again: Mapping[str, ProbeDocument] | None = None,
             sampling: NetSampling | None = None) -> ClusterReport:
    """Every input judged; nodes in the order given; cluster-wide checks after the node results.

    `probed` names the nodes the probe was meant to run on (default: all); the others (a controller that
    is no compute node) get no slurm.srun and no fs.checksum check, only what extra_checks says about them;
    with `probed` given, only nodes whose probe ran read the other nodes' files (fs.checksum). The report names
    this tool's version and `spec_digest`, the spec's fingerprint (provision.spec.digest).

    A partial `scope`: the nodes are the controller and the nodes certified; the pairs also reach the scope's peers,
    which are in the matrix but get no check (judging.partial).

    `again`: the GPU benchmarks measured a second time (the probe's --bench-again documents, per node) where a
    benchmark figure failed; each is judged by the better of its figures (judging.confirm).

    `sampling`: which pairs the network matrix measured (all, or sampled with its seed), kept in the matrix."""
    names = [n.name for n in nodes]
    readers = names if probed is None else [n for n in probed if n in probes and probes[n].mode == "probe"]
    probed = names if probed is None else list(probed)
    per_node: dict[str, list[CheckResult]] = {name: [] for name in names}
    cluster_checks: list[CheckResult] = []
    measurements: list[Measurement] = []
    for node in nodes:
        if node.name not in probed:
            continue
        doc = probes.get(node.name)
        per_node[node.name] += _probe_checks(node, doc)
        if doc and doc.current:
            measurements += [replace(m, node=node.name) for m in doc.measurements]
    for result in judge_measurements(measurements, again):
        per_node[result.node].append(result)
    for result in _fs_checksums(readers, probes, fs_verify):
        per_node[result.node].append(result)
    for result in _judge_nccl(list(nccl), nodes, probes):
        (per_node[result.node] if result.node in per_node else cluster_checks).append(result)
    matrix = None
    if pairs:
        matrix, pair_checks, node_checks = _network(names, list(pairs), probes, scope, sampling)
        cluster_checks += pair_checks
        for result in node_checks:
            per_node[result.node].append(result)
    for result in extra_checks:
        (per_node[result.node] if result.node in per_node else cluster_checks).append(result)
    node_results = tuple(NodeResult(n.name, tuple(per_node[n.name]), n.gpu_model, n.group,
                                    node_inventory(probes.get(n.name)) if n.name in probed else None)
                         for n in nodes)
    return ClusterReport(cluster, level, started_at, finished_at, node_results, tuple(cluster_checks), matrix,
                         tool_version=__version__, spec_digest=spec_digest, scope=scope)


def judge_measurements(measurements: Sequence[Measurement],
                       again: Mapping[str, ProbeDocument] | None = None) -> list[CheckResult]:
    """Every measurement against its floor and its peers, in order; where `again` holds a node's second benchmark
    figures, each by the better of its two (a fail on the first alone is a warning naming both)."""
    measurements = list(measurements)
    first = [_peak_sanity(r, measurements) for r in judge(_samples(measurements))]
    seconds = {node: [replace(m, node=node) for m in doc.measurements] if doc.mode == "bench" and doc.current_version
               else [] for node, doc in (again or {}).items()}  # a second run without a document: no figure
    if not seconds:
        return first
    best, figures = confirm.better(measurements, seconds)
    judged = [_peak_sanity(r, best) for r in judge(_samples(best))]
    return [confirm.confirmed(b, f, pair) for b, f, pair in zip(judged, first, figures)]


def benchmark_fails(probes: Mapping[str, ProbeDocument]) -> list[str]:
    """The nodes whose GPU benchmark figures, judged once, fail: the runner measures them again."""
    measured = [replace(m, node=node) for node, doc in probes.items() if doc.current for m in doc.measurements]
    return confirm.to_measure_again(judge_measurements(measured)) if measured else []


def node_inventory(doc: ProbeDocument | None) -> NodeInventory | None:
    """Kernel, OS, Slurm and NCCL from the probe's software reading; driver, CUDA and VBIOS from its NVML
    snapshot ("n/a" where either is missing); None without a probe document of this version."""
    if not doc or doc.mode != "probe" or doc.probe_version != PROBE_VERSION:
        return None
    soft = SoftwareInventory.from_dict(doc.software)
    nvml = doc.nvml if isinstance(doc.nvml, dict) and doc.nvml.get("available") else {}
    vbios = tuple(str(g.get("vbios") or NA) for g in nvml.get("gpus") or [] if isinstance(g, dict))
    return NodeInventory(soft.kernel, soft.os, soft.slurm, soft.nccl, str(nvml.get("driver_version") or NA),
                         str(nvml.get("cuda_driver_version") or NA), vbios)


def _probe_checks(node: NodeInfo, doc: ProbeDocument | None) -> list[CheckResult]:
    """slurm.srun for whether the probe ran, then the probe's own checks."""
    if not doc or doc.mode != "probe":
        why = (doc.error if doc else None) or "no probe document (srun task failed, node down or not in the job)"
        return [CheckResult("slurm.srun", "fail", node=node.name, detail=why)]
    ran = CheckResult("slurm.srun", "pass", node=node.name, value=doc.hostname,
                      detail=f"probe level {doc.level} ran in {doc.duration_s} s")
    if doc.probe_version != PROBE_VERSION:
        return [ran, CheckResult("probe.version", "fail", node=node.name, value=doc.probe_version,
                                 threshold=PROBE_VERSION, detail="the node runs another probe version; "
                                                                 "rerun the certify role to reinstall it")]
    if doc.error:
        return [ran, CheckResult("probe.version", "fail", node=node.name, detail=doc.error)]
    return [ran] + [replace(c, node=node.name) for c in doc.checks]


def _samples(measurements: list[Measurement]) -> list[Sample]:
    """Measurements with their floors (as the catalogue says); peers are the same metric on the same GPU model."""
    out = []
    for m in measurements:
        entry = catalogue.lookup(m.metric)
        model = m.context.get("gpu_model")
        floor = _floor(entry, m) if entry else None
        compared = bool(entry and entry.fleet)
        group = str(model or "any") if compared else f"{m.node}:{m.subject}"  # not compared: no peers
        why_no_floor = thresholds.fleet_only_reason(m.metric, model) if floor is None else ""
        detail = "; ".join(filter(None, [m.detail, "" if compared else NOT_COMPARED, why_no_floor]))
        out.append(Sample(m.metric, m.node, m.value, m.unit, group, m.subject, floor, detail))
    return out


def _floor(entry: catalogue.Check, m: Measurement) -> thresholds.Threshold | None:
    """A probe measurement's absolute floor: its catalogue entry names the table and how the row is picked."""
    if entry.floor_by == "gpu_model":
        return thresholds.gpu_floor(entry.floor_table, m.context.get("gpu_model"))
    if entry.floor_by == "pcie":
        return thresholds.pcie_floor(entry.floor_table, m.context.get("pcie_gen"), m.context.get("pcie_width"))
    return None


def _peak_sanity(result: CheckResult, measurements: list[Measurement]) -> CheckResult:
    """A GEMM figure above the model's datasheet peak cannot be right: warn instead of passing it."""
    if result.check != "gpu.gemm_bf16" or not isinstance(result.value, (int, float)):
        return result
    model = next((m.context.get("gpu_model") for m in measurements
                  if m.node == result.node and m.subject == result.subject and m.metric == result.check), None)
    peak = thresholds.PEAK_BF16.get(model)
    if peak and result.value > peak * PEAK_MARGIN and result.verdict == "pass":
        return CheckResult(**{**result.to_dict(), "verdict": "warn",
                              "detail": f"above the datasheet peak {peak:g} TFLOP/s: check the measurement"})
    return result


def _fs_checksums(names: list[str], probes: Mapping[str, ProbeDocument],
                  fs_verify: Mapping[str, ProbeDocument] | None) -> list[CheckResult]:
    """fs.checksum per reading node: every written file present and identical to what its writer wrote."""
    writers = [n for n in names if n in probes and probes[n].fs_written]
    if not writers:
        return []
    if fs_verify is None:
        return [CheckResult("fs.checksum", "na", node=n, detail="cross-node verification was not run")
                for n in names]
    out = []
    for reader in names:
        doc = fs_verify[reader].fs_verify if reader in fs_verify else None
        if not doc:
            out.append(CheckResult("fs.checksum", "fail", node=reader, detail="no verification document"))
            continue
        files = doc.get("files", {})
        bad = [f"{w}: missing" for w in writers if w not in files]
        bad += [f"{w}: {f.get('error') or 'checksum differs'}" for w, f in files.items() if not f.get("ok")]
        out.append(CheckResult("fs.checksum", "fail" if bad else "pass", node=reader,
                               value=sum(bool(f.get("ok")) for f in files.values()), unit="files",
                               threshold=len(writers), source="SHA-256 recorded by each writer",
                               detail="; ".join(bad)))
    return out


def _nic_rate(probes: Mapping[str, ProbeDocument], names: Sequence[str] | None = None) -> float | None:
    """The slowest active RDMA port rate (Gb/s) of the named nodes (all by default), or None without RDMA."""
    docs = [probes[n] for n in names if n in probes] if names is not None else list(probes.values())
    rates = [p.rate_gbps for d in docs for p in d.active_rdma_ports() if p.rate_gbps]
    return min(rates) if rates else None


def _judge_nccl(jobs: list[NcclJob], nodes: Sequence[NodeInfo],
                probes: Mapping[str, ProbeDocument]) -> list[CheckResult]:
    """Node runs judged group by group (each group's model, GPU count, NICs; peers within the group); each
    run across nodes against the slowest of the groups it spans."""
    by_name = {n.name: n for n in nodes}
    out: list[CheckResult] = []
    for members in _groups(nodes).values():
        names = {m.name for m in members}
        mine = [j for j in jobs if j.scope == "node" and j.nodes[0] in names]
        out += judge_jobs(mine, _fabric(members, probes)) if mine else []
    grouped = {n.name for n in nodes}
    strays = [j for j in jobs if j.scope == "node" and j.nodes[0] not in grouped]
    out += judge_jobs(strays, Fabric(None, 0, "none", 0, None)) if strays else []
    for job in (j for j in jobs if j.scope != "node"):
        members = [by_name[n] for n in job.nodes if n in by_name]
        fabric = _cluster_fabric(members, probes)
        out += [_explain_cluster(r, fabric) for r in judge_jobs([job], fabric)]
    return out


def _groups(nodes: Sequence[NodeInfo]) -> dict[str, list[NodeInfo]]:
    """Nodes by spec node group, in order."""
    out: dict[str, list[NodeInfo]] = {}
    for node in nodes:
        out.setdefault(node.group, []).append(node)
    return out


def _fabric(members: Sequence[NodeInfo], probes: Mapping[str, ProbeDocument]) -> Fabric:
    """What one node group's floors depend on: its model, GPU count and NICs, the slowest port of its nodes."""
    first = members[0]
    return Fabric(first.gpu_model, first.gpu_count, first.interconnect, first.interconnect_nics,
                  _nic_rate(probes, [m.name for m in members]))


def _cluster_fabric(members: Sequence[NodeInfo], probes: Mapping[str, ProbeDocument]) -> Fabric:
    """A run across nodes is as fast as its slowest node: the group whose GPUs PCIe joins (no floor), else the
    lowest single-node floor; the fewest NICs and the slowest port of the nodes it spans."""
    gpu_nodes = [m for m in members if m.gpu_count] or list(members)
    if not gpu_nodes:
        return Fabric(None, 0, "none", 0, None)

    def ceiling(node: NodeInfo) -> tuple[int, float]:
        if not thresholds.nvswitched(node.gpu_model, node.gpu_count):
            return 0, 0.0
        floor = thresholds.nccl_node_floor(node.gpu_model, node.gpu_count)
        return 1, floor.value if floor else float("inf")

    slowest = min(gpu_nodes, key=ceiling)
    kinds = {m.interconnect for m in gpu_nodes}
    return Fabric(slowest.gpu_model, slowest.gpu_count, kinds.pop() if len(kinds) == 1 else "mixed",
                  min(m.interconnect_nics for m in gpu_nodes), _nic_rate(probes, [m.name for m in gpu_nodes]))


def _explain_cluster(result: CheckResult, fabric: Fabric) -> CheckResult:
    """Say why a run across nodes has no floor when PCIe, not NVSwitch, joins the GPUs of a node it spans."""
    if result.threshold is not None or fabric.interconnect in ("none", "mixed") or \
            thresholds.nvswitched(fabric.gpu_model, fabric.gpu_count):
        return result
    why = (f"{fabric.gpu_model} x{fabric.gpu_count} nodes take part and no NVSwitch joins their GPUs: PCIe, not "
           "the NICs, bounds busbw and no figure for it is published; fleet-relative only")
    return CheckResult(**{**result.to_dict(), "detail": "; ".join(filter(None, [result.detail, why]))})


def _network(names: list[str], pairs: list[PairResult], probes: Mapping[str, ProbeDocument],
             scope: RunScope, sampling: NetSampling | None) -> tuple[NetMatrix, list[CheckResult],
                                                                   list[CheckResult]]:
    """The matrix and its checks; in a partial run over the peers too, each certified node judged in aggregate."""
    rdma = all(p.tool == "ib_write_bw" for p in pairs)
    floor = thresholds.link_floor(_nic_rate(probes)) if rdma else None
    everyone = names + [p for p in scope.peers if p not in names]
    pair_checks, node_checks = netmatrix.judge_network(everyone, pairs, floor)
    if scope.partial:
        pair_checks, node_checks = partial.judge_network(list(scope.nodes), pairs, pair_checks, node_checks,
                                                         netmatrix.suspects(everyone, pairs))
    return netmatrix.build(everyone, pairs, sampling), pair_checks, node_checks


__all__ = ["NcclJob", "PairResult", "assemble", "parse_probe_output"]
