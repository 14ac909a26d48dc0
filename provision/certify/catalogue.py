"""One catalogue of certification check ids: what each proves, its unit, where its threshold comes from.

Check ids are stable strings in reports (other tools parse them): never rename one. The judge takes each
measurement's floor and fleet treatment from here, the HTML report its charts, the README its table
(`python -m provision.certify.catalogue` prints it). A unit test fails when a check emitted anywhere is missing
here, or when an entry has no threshold source.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

Per = Literal["gpu", "node", "cluster", "pair"]
FloorBy = Literal["gpu_model", "pcie"]  # how a probe measurement's context picks its row of the floor table

# Where thresholds come from, named once (each entry says which, and what exactly).
FLOORS = "floor table (certify/judging/thresholds.py, from published figures)"
FLEET = "the fleet: median and MAD of the same metric on the same GPU model (certify/judging/judge.py)"
SPEC = "the spec, through the node's expectation"
NVML = "the GPU's own limit as NVML reports it"
CONTROLLER = "the controller (reference copy)"
DCGM = "DCGM's own verdict"


@dataclass(frozen=True)
class Check:
    """One check id and what it means."""

    id: str  # e.g. "gpu.gemm_bf16"; a family ends in ".<name>" (dcgm.<test>)
    per: Per
    unit: str | None
    meaning: str
    threshold: str  # where the threshold comes from; required
    floor_table: str | None = None  # the thresholds.TABLE metric whose rows give its absolute floor
    floor_by: FloorBy | None = None  # probe measurements: how the floor row is picked
    fleet: bool = False  # also judged against its peers
    chart: str | None = None  # bar chart title in the HTML report

    @property
    def family(self) -> bool:
        """An id pattern (dcgm.<test>) rather than one id."""
        return self.id.endswith(">")


def _gpu(id: str, unit: str | None, meaning: str, threshold: str) -> Check:
    return Check(id, "gpu", unit, meaning, threshold)


def _node(id: str, unit: str | None, meaning: str, threshold: str, **more) -> Check:
    return Check(id, "node", unit, meaning, threshold, **more)


ENTRIES: tuple[Check, ...] = (
    # node: reachability, Slurm, munge, the probe itself
    _node("node.reachable", None, "an SSH session opens with the cluster key, host key verified", "SSH login works"),
    _node("munge.credential", None, "a credential made on the controller decodes on the node",
          f"{CONTROLLER}: STATUS Success"),
    _node("slurm.slurmd", None, "systemd reports slurmd active", "active"),
    _node("slurm.node_state", None, "Slurm lists the node as usable by jobs", "idle, mixed, allocated or completing"),
    _node("probe.installed", None, "the node runs exactly the probe this gpu-provision ships",
          "the bundle's digest (certify/bundle.py)"),
    _node("probe.version", None, "the probe's document has this code's version and readable checks",
          "PROBE_VERSION (certify/probe/__init__.py)"),
    _node("slurm.srun", None, "the probe ran on the node in the cluster-wide srun step", "a document came back"),
    # GPU health (probe, NVML)
    _node("gpu.nvml", None, "NVML initialises on the node", "available"),
    _node("gpu.count", "GPUs", "NVML sees the node group's GPU count", f"{SPEC}: gpu.count"),
    _node("gpu.driver.version", None, "the driver is on the pinned branch (and version)",
          f"{SPEC}: software.nvidia_driver"),
    _node("gpu.driver.cuda_version", None, "the driver supports the newest CUDA deployed", f"{SPEC}: software.cuda"),
    _gpu("gpu.readable", None, "NVML returns a handle for the GPU", "readable"),
    _gpu("gpu.model", None, "the GPU is the node group's model (NVML name)",
         f"{SPEC}: gpu.model, names from certify/probe/gpus.py"),
    _gpu("gpu.persistence_mode", None, "persistence mode is on", f"{SPEC}: enabled (the driver role)"),
    _gpu("gpu.ecc.mode", None, "ECC is on and stays on after a reset", f"{SPEC}: enabled for datacenter GPUs"),
    _gpu("gpu.ecc.volatile_uncorrected", "errors", "no uncorrectable ECC error since the driver loaded", "== 0"),
    _gpu("gpu.row_remap.pending", None, "no row remap waiting for a GPU reset", "false"),
    _gpu("gpu.row_remap.failure", None, "row remapping has not failed", "false"),
    _gpu("gpu.retired_pages", "pages", "retired pages below the replacement limit",
         "< 60 (DCGM_LIMIT_MAX_RETIRED_PAGES)"),
    _gpu("gpu.pcie.link", None, "the PCIe link trains to its maximum generation and width (under load)",
         f"{NVML}: maximum generation and width"),
    _gpu("gpu.nvlink.links", "links", "every NVLink is up where the node has NVLink",
         "all up where NVSwitches or NVML's fabric say NVLink (certify/probe/health/topology.py)"),
    _gpu("gpu.nvlink.errors", "errors", "no NVLink replay, recovery or CRC errors", "== 0"),
    _gpu("gpu.nvlink.fabric", None, "the GPU registered with the NVLink fabric", "registration completed, healthy"),
    _gpu("gpu.throttle", None, "no hardware slowdown, thermal slowdown or power brake", "no HW slowdown"),
    _gpu("gpu.temperature", "C", "the hottest reading stays below the slowdown threshold",
         f"{NVML}: slowdown threshold, warn within 5 C"),
    _gpu("gpu.power", "W", "the highest draw stays within the enforced power limit",
         f"{NVML}: enforced limit, warn above x1.02, fail above x1.10"),
    _gpu("gpu.processes", "processes", "no compute process left on the GPU", "== 0"),
    _gpu("gpu.mig", None, "MIG mode as expected, no change pending", f"{SPEC}: disabled"),
    _node("gpu.xid", "Xids", "Xids since boot, each judged by its immediate action",
          "NVIDIA's Xid catalogue (certify/probe/health/xid_catalog.py)"),
    _node("gpu.bench", None, "the GPU benchmark (gpubench) ran on every GPU", "ran without error"),
    Check("gpu.gemm_bf16", "gpu", "TFLOP/s", "dense BF16 GEMM throughput", f"{FLOORS} by GPU model; {FLEET}",
          floor_table="gpu.gemm_bf16", floor_by="gpu_model", fleet=True, chart="Dense BF16 GEMM (worst GPU)"),
    Check("gpu.copy_bw", "gpu", "GB/s", "device memory copy bandwidth, bytes read + written",
          f"{FLOORS} by GPU model; {FLEET}", floor_table="gpu.copy_bw", floor_by="gpu_model", fleet=True,
          chart="Device copy bandwidth, read + write (worst GPU)"),
    Check("gpu.h2d_bw", "gpu", "GB/s", "host to device copy bandwidth (pinned)",
          f"{FLOORS} by PCIe generation, scaled by width; {FLEET}", floor_table="gpu.h2d_bw", floor_by="pcie",
          fleet=True, chart="Host to device (worst GPU)"),
    Check("gpu.d2h_bw", "gpu", "GB/s", "device to host copy bandwidth (pinned)",
          f"{FLOORS} by PCIe generation, scaled by width; {FLEET}", floor_table="gpu.d2h_bw", floor_by="pcie",
          fleet=True, chart="Device to host (worst GPU)"),
    _node("dcgm.diag", None, "DCGM's diagnostic could run (n/a without dcgmi or GPUs)", DCGM),
    _node("dcgm.<test>", None, "one DCGM test (memory, pcie, diagnostic, targeted_stress, ...), 3.x names mapped "
          "to 4.x", f"{DCGM}: Skip and Not Run are n/a"),
    # NCCL, fabric and network
    Check("nccl.node_busbw", "node", "GB/s", "nccl-tests all_reduce busbw across the node's GPUs",
          f"{FLOORS} for 8-GPU NVSwitch boards; {FLEET}", floor_table="nccl.node_busbw", fleet=True,
          chart="NCCL all_reduce busbw within the node"),
    Check("nccl.cluster_busbw", "cluster", "GB/s", "nccl-tests all_reduce busbw across every GPU node (RING)",
          f"{FLOORS} per NIC x NICs x line rate, capped by the node floor", floor_table="nccl.nic_busbw"),
    _node("net.rdma.ports", "ports", "the node's RDMA ports are active, as many as the spec's NICs",
          f"{SPEC}: interconnect.nics"),
    Check("net.pairwise_bw", "pair", "Gb/s", "bandwidth from one node to another (ib_write_bw, else iperf3)",
          f"{FLOORS} by link rate for ib_write_bw; none for iperf3", floor_table="net.rdma_bw"),
    Check("net.node_bw", "node", "Gb/s", "the node's median link in the pairwise matrix against the others",
          "the other nodes' links (leave-one-out median)", chart="Pairwise network, median link"),
    # Slurm as users use it
    Check("slurm.controller", "cluster", None, "scontrol ping: the primary slurmctld is UP", "slurmctld UP"),
    Check("slurm.srun_all", "cluster", "nodes", "one srun step reached every compute node", "every compute node"),
    Check("slurm.sbatch", "cluster", None, "a batch job reached COMPLETED in the accounting database", "COMPLETED"),
    _node("slurm.node_definition", None, "the controller's view (CPUs, memory, GPU gres) claims no more than the "
          "node has", "what the node reports (slurmd -C, NVML or /dev/nvidiaN)"),
    _node("slurm.user_job", None, "a job of certify's own user runs on the node as that user: its uid resolves, "
          "its home is there and writable, /tmp is writable (the user-shaped checks run as it)",
          "runs as certify.user"),
    _node("slurm.enforce_memory", "MiB", "a job filling four times its --mem is stopped for memory, or held below it "
          "(n/a where Slurm does not confine jobs: cgroups off, as on the sandbox)", "stopped or held at --mem"),
    _node("slurm.enforce_procs", None, "a process that leaves its job with setsid is gone when the job ends (n/a "
          "where Slurm does not confine jobs)", "gone when its job ends"),
    _node("slurm.node_resources", "CPUs", "a job asking for the whole node runs", "every CPU, 90 % of RealMemory"),
    _node("slurm.gres", "GPUs", "a job asking for all the node's GPUs sees each once", f"{SPEC}: gpu.count"),
    _node("slurm.gres_single", "GPUs", "a one-GPU job sees exactly one GPU", "1 GPU"),
    _node("mpi.start", "ranks", "MPI starts on the node through srun --mpi=pmix", "2 ranks a node, correct sums"),
    Check("mpi.allreduce", "cluster", "s", "an 8-byte and an 8 MiB allreduce across every compute node",
          "every element correct"),
    Check("mpi.bisect", "cluster", "jobs", "when the MPI job across the nodes keeps failing while every node starts "
          "alone: bisection runs it on halves of the nodes and across them (O(log N) jobs) and names the pair whose "
          "job alone fails; the detail lists every job it ran", "a job on every subset of the nodes passes"),
    _node("mpi.pair", None, "the node is one of the pair bisection located: MPI fails between it and the peer it names",
          "a job with every other node passes"),
    _node("mpi.peers", "peers", "a partial run: MPI runs across the certified nodes and up to 3 peers in service (one "
          "rank a node); when it fails, the node is judged by its runs with each peer", "runs with more than half of "
          "the peers"),
    _node("config.files", None, "slurm.conf, gres.conf, cgroup.conf, mpi.conf, the munge key, /etc/hosts block match",
          f"{CONTROLLER}: identical SHA-256"),
    _node("config.packages", None, "the stack's package versions match the node's group", "same as the group"),
    # shared filesystem
    _node("fs.mount", None, "the spec's filesystem type is mounted at the mount point",
          f"{SPEC}: filesystem.type (/proc/self/mounts)"),
    _node("fs.write", "bytes", "the node wrote its file to the shared filesystem", "written"),
    _node("fs.readback", None, "the node reads back what it wrote", "SHA-256 of the written content"),
    _node("fs.checksum", "files", "every node's file of the run is present and identical here",
          "SHA-256 recorded by each writer"),
    Check("fs.write_bw", "node", "MB/s", "shared filesystem write throughput",
          "none: reported, not compared across nodes (they share the servers)", chart="Shared filesystem write"),
    Check("fs.read_bw", "node", "MB/s", "shared filesystem read throughput",
          "none: reported, not compared across nodes (they share the servers)", chart="Shared filesystem read"),
    # The node health program (probe/nodehealth): a failure drains the node, a pass resumes what it drained.
    _node("health.munge", None, "munged answers on the node (a credential made there decodes there)",
          "munge -n | unmunge exits 0"),
    _node("health.slurmd", None, "slurmd runs on the node", "/run/slurmd.pid names a live slurmd"),
    _node("health.mount", None, "a shared filesystem is mounted and answers a stat within the pass's deadline",
          f"{SPEC}: filesystem.mount_point"),
    _node("health.config", "files differ", "the cluster-wide Slurm files are the ones the last deploy rendered",
          "SHA-1 of each file as rendered by the slurm role (/etc/gpu-provision/health.json)"),
    _node("health.xid", "new Xids", "no Xid since the last pass whose catalogue action is a reset, reboot or "
          "inspection (it stays failed until the node boots again)", "NVIDIA Xid catalogue (see gpu.xid)"),
    _node("health.<test>", None, "an NVML check of the health pass (health.gpu.count, health.gpu.ecc."
          "volatile_uncorrected, ...): the same judgement as the gpu.* check of that name",
          "as the gpu.* check of the same name"),
    # The active checks (probe/nodehealth/measure.py, health.active): a figure below its floor twice drains the node.
    _node("active.net", "Gb/s", "the median of the node's links, iperf3 TCP both ways to a few other compute nodes",
          f"{SPEC}: health.active.net_min_gbps (derived by provider when unset: README \"Active checks\")"),
    _node("active.memory_bw", "GB/s", "host memory copy bandwidth, best of three in-place copies",
          "a coarse floor (1 GB/s): a node swapping or throttled to a crawl"),
    _node("active.fs", "MB/s", "write, fsync and read back a file on each shared filesystem, checksum compared",
          "a coarse floor (5 MB/s) on the slower rate; an error or other bytes read back fail"),
    _node("active.gpu_gemm", "TFLOP/s", "bf16 GEMM of each GPU (gpubench), on an idle node",
          f"{FLOORS}: the GPU model's gpu.gemm_bf16 floor"),
    _node("active.dcgm", None, "dcgmi is installed where the active checks run DCGM's diagnostic", "n/a when not"),
    _node("active.dcgm.<test>", None, "one DCGM diagnostic test (level 1, standard 2) on an idle node, or whether it "
          "could run (active.dcgm.run)", DCGM),
)

CHECKS: dict[str, Check] = {entry.id: entry for entry in ENTRIES}


def lookup(check_id: str) -> Check | None:
    """The entry of a check id, a family's entry for its members (dcgm.memory -> dcgm.<test>), else None."""
    if check_id in CHECKS:
        return CHECKS[check_id]
    return next((c for c in ENTRIES if c.family and check_id.startswith(c.id.split("<")[0])), None)


def problems(entries: tuple[Check, ...] = ENTRIES) -> list[str]:
    """What is wrong with a catalogue: an entry without a threshold source or meaning, an id twice."""
    out = [f"{c.id}: no threshold source" for c in entries if not c.threshold.strip()]
    out += [f"{c.id}: no meaning" for c in entries if not c.meaning.strip()]
    seen = [c.id for c in entries]
    out += [f"{i}: listed twice" for i in sorted({i for i in seen if seen.count(i) > 1})]
    return out


def charts() -> tuple[tuple[str, str], ...]:
    """(check id, title) of every check the HTML report draws as a bar chart, in catalogue order."""
    return tuple((c.id, c.chart) for c in ENTRIES if c.chart)


def markdown_table() -> str:
    """The README's table of checks."""
    rows = ["| check | per | unit | what it proves | threshold from |", "|---|---|---|---|---|"]
    rows += [f"| `{c.id}` | {c.per} | {c.unit or ''} | {c.meaning} | {c.threshold} |" for c in ENTRIES]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
