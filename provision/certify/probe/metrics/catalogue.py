"""Every metric name the cluster's Prometheus holds that a rule or a dashboard of ours may query.

OURS: the series gpu-provision writes into node exporter's textfile directory (node side: the Slurm collector on the
controller, the node health program on every compute node; control side: certify's and deploy's last results,
written to the monitoring node). Each name has its type, its labels and a help line; a writer refuses a name or a label
that is not here.
EXTERNAL: the series of the exporters we install and do not write (Prometheus itself, node exporter, NVIDIA's DCGM
exporter with our counters file), each with where it comes from. The e2e test checks every OURS name and every
node-exporter name a rule or dashboard uses against the live Prometheus of a sandbox cluster.

Labels: every series scraped from a node carries `node` (its host name, as Slurm and users name it), set by the
scrape configuration; the controller's series that are about another node (Slurm's view, certify's verdicts) carry
their own `node`, kept because the scrape honours the series' labels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["gauge", "counter"]


@dataclass(frozen=True)
class Metric:
    """One series name we write: its type, its labels (besides `node` added by the scrape) and its help line."""

    name: str
    kind: Kind
    labels: tuple[str, ...]
    help: str


def _m(name: str, labels: tuple[str, ...], help: str, kind: Kind = "gauge") -> Metric:
    return Metric(name, kind, labels, help)


SLURM = (
    # per node, from sinfo on the controller; `node` is the Slurm node's name
    _m("slurm_node_state", ("node", "state"), "1 for the node's Slurm state: its base state (idle, allocated, mixed, "
       "down, ...) with drain shown as drained or draining"),
    _m("slurm_node_drained", ("node", "reason"), "1 when the node is drained or draining, with Slurm's reason"),
    _m("slurm_node_cpus", ("node", "status"), "CPUs of the node by status: total, allocated, idle"),
    _m("slurm_node_memory_bytes", ("node", "status"), "memory of the node in bytes by status: total, allocated"),
    _m("slurm_node_gpus", ("node", "status"), "GPUs (gres gpu) of the node by status: total, allocated"),
    # jobs, from squeue
    _m("slurm_jobs", ("state", "partition", "user", "account"), "jobs by state, partition, user and account"),
    _m("slurm_jobs_pending", ("partition", "reason"), "pending jobs by partition and Slurm's pending reason"),
    # daemons, from sdiag and sacctmgr
    _m("slurm_controller_up", (), "1 when slurmctld answered sdiag within the collector's timeout"),
    _m("slurm_dbd_up", (), "1 when slurmdbd answered (sacctmgr) within the collector's timeout; absent without "
       "accounting"),
    _m("slurm_scheduler_threads", (), "slurmctld's server thread count (sdiag)"),
    _m("slurm_scheduler_agent_queue", (), "slurmctld's agent queue size (sdiag)"),
    _m("slurm_scheduler_last_cycle_seconds", (), "the main scheduler's last cycle in seconds (sdiag)"),
    _m("slurm_scheduler_backfill_last_cycle_seconds", (), "the backfill scheduler's last cycle in seconds (sdiag)"),
    # the collector itself
    _m("slurm_collector_command_ok", ("command",), "1 when the command (sinfo, squeue, sdiag, sacctmgr) answered "
       "in time and was parsed"),
    _m("slurm_collector_duration_seconds", (), "how long the collector's last run took"),
    _m("slurm_collector_last_run_timestamp_seconds", (), "when the collector last wrote its file (Unix time)"),
)

HEALTH = (
    # the node health program's last pass on this compute node (its own node label comes from the scrape)
    _m("gpu_provision_health_check_ok", ("check",), "1 when the check passed in the node health program's last pass"),
    _m("gpu_provision_health_pass_ok", (), "1 when every check of the last pass passed"),
    _m("gpu_provision_health_last_pass_timestamp_seconds", (), "when the node health program's last pass ended"),
    # the active checks' last pass on this node (README "Active checks")
    _m("gpu_provision_active_check_ok", ("check",), "1 when the active check passed in the node's last active pass"),
    _m("gpu_provision_active_check_value", ("check", "unit"), "the figure the active check measured"),
    _m("gpu_provision_active_last_pass_timestamp_seconds", (), "when the node's last active pass ended"),
)

CERTIFY = (
    # certify's last run, written to the monitoring node by the control side; `node` is the node judged. The cluster's
    # series are the last whole run's, a node's the last run's that judged it (a partial run judges some nodes only)
    _m("gpu_provision_certify_ok", (), "1 when the last whole certify passed the cluster"),
    _m("gpu_provision_certify_last_run_timestamp_seconds", (), "when the last whole certify ended"),
    _m("gpu_provision_certify_node_ok", ("node",), "1 when the last certify passed every check of the node"),
    _m("gpu_provision_certify_check_ok", ("node", "check"), "1 pass, 0 fail, per node and check of the last certify"),
    _m("gpu_provision_certify_figure", ("node", "check", "unit"), "the figure a check of the last certify measured"),
)

DEPLOY = (
    _m("gpu_provision_deploy_ok", (), "1 when the last deploy ended without a failed or unreachable node"),
    _m("gpu_provision_deploy_last_run_timestamp_seconds", (), "when the last deploy ended"),
    # per node: the last deploy that ran on the node (a --limit run leaves the others' as they were)
    _m("gpu_provision_deploy_node_ok", ("node",), "1 when the last deploy that ran on the node converged it"),
    _m("gpu_provision_deploy_node_last_run_timestamp_seconds", ("node",),
       "when the last deploy that ran on the node ended"),
)

OURS: dict[str, Metric] = {m.name: m for m in SLURM + HEALTH + CERTIFY + DEPLOY}

# Textfile names in node exporter's directory, one per writer (a writer replaces only its own file, atomically).
TEXTFILES = {"slurm": "gpu_provision_slurm.prom", "health": "gpu_provision_health.prom",
             "active": "gpu_provision_active.prom", "certify": "gpu_provision_certify.prom",
             "deploy": "gpu_provision_deploy.prom"}
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"  # Debian's prometheus-node-exporter default (--collector.textfile)

# Series of the exporters we install, that our rules or dashboards may query, with their source.
EXTERNAL: dict[str, str] = {
    "up": "Prometheus: 1 when the target's last scrape succeeded",
    "ALERTS": "Prometheus: the alerts pending or firing",
    "node_load1": "node exporter (loadavg collector)",
    "node_cpu_seconds_total": "node exporter (cpu collector)",
    "node_memory_MemTotal_bytes": "node exporter (meminfo collector)",
    "node_memory_MemAvailable_bytes": "node exporter (meminfo collector)",
    "node_filesystem_avail_bytes": "node exporter (filesystem collector)",
    "node_filesystem_size_bytes": "node exporter (filesystem collector)",
    "node_network_receive_bytes_total": "node exporter (netdev collector)",
    "node_network_transmit_bytes_total": "node exporter (netdev collector)",
    "node_textfile_scrape_error": "node exporter (textfile collector): 1 when a textfile could not be read",
    "node_time_seconds": "node exporter (time collector)",
    "node_boot_time_seconds": "node exporter (stat collector)",
}

# NVIDIA dcgm-exporter's names for the fields of our counters file (playbooks/roles/dcgm/files/
# dcgm-exporter-counters.csv); a test checks the file holds each.
DCGM: dict[str, str] = {
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilisation (%)",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "memory copy utilisation (%)",
    "DCGM_FI_DEV_FB_USED": "framebuffer memory used (MiB)",
    "DCGM_FI_DEV_FB_FREE": "framebuffer memory free (MiB)",
    "DCGM_FI_DEV_GPU_TEMP": "GPU temperature (C)",
    "DCGM_FI_DEV_MEMORY_TEMP": "memory temperature (C)",
    "DCGM_FI_DEV_POWER_USAGE": "power draw (W)",
    "DCGM_FI_DEV_SM_CLOCK": "SM clock (MHz)",
    "DCGM_FI_DEV_MEM_CLOCK": "memory clock (MHz)",
    # DCGM 3.3 renamed CLOCK_THROTTLE_REASONS (kept as a deprecated #define); exporters 4.4.2-4.7.1 to 4.5.2-4.8.1
    # (go-dcgm 2025-12 to 2026-04) no longer resolve the old name and refuse to start with it in the counters file.
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "clock event (throttle) reasons (bitmask)",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "single-bit ECC errors since the driver loaded",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "double-bit ECC errors since the driver loaded",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "1 when a row remap failed",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "rows remapped for uncorrectable errors",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "rows remapped for correctable errors",
    "DCGM_FI_DEV_XID_ERRORS": "the last Xid error's number",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "NVLink flit CRC errors",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "PCIe replays",
}


def known(name: str) -> bool:
    """Whether a series name is one the cluster's Prometheus may hold (ours, an exporter's, or a rule's own)."""
    return name in OURS or name in EXTERNAL or name in DCGM
