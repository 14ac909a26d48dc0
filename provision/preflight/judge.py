"""Turn the facts a node reported into verdicts (pure: no I/O, table-testable)."""
from __future__ import annotations

from collections import Counter

from provision import hostlist
from provision.certify.probe.gpus import model_for_pci_device
from provision.node import platforms
from provision.node.hardware import NodeHardware, excesses
from provision.node.platforms import Platform
from provision.preflight.records import Check, os_of
from provision.records import NodeInfo

MIN_DISK_KB = {"fail": 2 * 1024 * 1024, "warn": 10 * 1024 * 1024}
CLOCK_WARN_S = 1.0
CLOCK_FAIL_S = 30.0


def parse_facts(text: str) -> dict[str, str]:
    """key=value lines -> dict (the last value wins)."""
    facts = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts[key.strip()] = value.strip()
    return facts


def judge(node: NodeInfo, facts: dict[str, str], sandbox: bool = False) -> list[Check]:
    """Every fact-based check for one node (a sandbox node's GPUs are stand-in device files, not PCI devices)."""
    gpus = _sandbox_gpus(node, facts) if sandbox else _gpus(node, facts)
    builds_driver = bool(node.gpu_count) and not sandbox  # the driver roles skip stand-in GPUs
    return [_privilege(facts), _os(node, facts), _headers(facts, builds_driver),
            _disk(facts, "/", "disk_root_kb", "disk_root"),
            _disk(facts, "/var", "disk_var_kb", "disk_var"), _python(facts), _resources(node, facts), gpus,
            _fabric(node, facts), _hostname(facts)]


def _privilege(facts: dict) -> Check:
    if facts.get("privilege") == "yes":
        return Check("privilege", "pass", "root" if facts.get("uid") == "0" else "passwordless sudo")
    return Check("privilege", "fail", "neither root nor passwordless sudo; grant NOPASSWD sudo or log in as root")


def _os(node: NodeInfo, facts: dict) -> Check:
    """A supported OS passes (an untested one warns), any other fails in the platform role's words."""
    found = os_of(facts)
    platform = platforms.match(found)
    if platform is None:
        return Check("os", "fail", platforms.refusal(node.name, found))
    shown = f"{platform.title} ({platform.codename}), Slurm {platform.slurm_series}"
    if not platform.tested:
        return Check("os", "warn", f"{shown}: supported but untested (the roles are written for it; no test "
                                   "deploys it)")
    return Check("os", "pass", shown)


def _headers(facts: dict, builds_driver: bool) -> Check:
    kernel, state = facts.get("kernel", "?"), facts.get("headers", "missing")
    if state in ("installed", "installable"):
        return Check("kernel_headers", "pass", f"{kernel}: headers {state}")
    detail = f"{kernel}: no linux-headers-{kernel} installed or available"
    if builds_driver:
        return Check("kernel_headers", "fail", f"{detail}; the NVIDIA driver cannot be built for the running kernel")
    return Check("kernel_headers", "warn", f"{detail} (only GPU nodes need them)")


def _disk(facts: dict, mount: str, key: str, check_id: str) -> Check:
    free_kb = int(facts.get(key) or 0)
    shown = f"{mount}: {free_kb / 1024 / 1024:.1f} GiB free"
    if free_kb < MIN_DISK_KB["fail"]:
        return Check(check_id, "fail", f"{shown}; need at least 2 GiB")
    return Check(check_id, "warn" if free_kb < MIN_DISK_KB["warn"] else "pass", shown)


def _python(facts: dict) -> Check:
    version = facts.get("python3", "none")
    if version == "none":
        return Check("python3", "fail", "python3 is missing; Ansible needs it (apt-get install python3)")
    return Check("python3", "pass", version)


def _gpus(node: NodeInfo, facts: dict) -> Check:
    devices = [d for d in facts.get("gpus", "").split(",") if d]
    if not node.gpu_count and not devices:
        return Check("gpus", "n/a", "no GPU expected, none found")
    models = [model_for_pci_device(d) for d in devices]
    names = sorted({m.key if m else f"10de:{d}" for m, d in zip(models, devices)})
    seen = f"{len(devices)} x {', '.join(names) or 'none'} ({facts.get('gpu_source', '?')})"
    if len(devices) != node.gpu_count:
        return Check("gpus", "fail", f"{seen}; the spec expects {node.gpu_count} x {node.gpu_model or 'none'}")
    if any(m is None or m.key != node.gpu_model for m in models):
        return Check("gpus", "fail", f"{seen}; the spec expects {node.gpu_model}")
    return Check("gpus", "pass", seen)


def _resources(node: NodeInfo, facts: dict) -> Check:
    """CPUs and memory as Slurm will be told; a spec override above what the node has fails."""
    hw = NodeHardware.from_facts(facts)
    if hw is None:
        return Check("resources", "fail" if node.has_role("compute") else "warn",
                     "could not read the CPU topology (lscpu -p) and MemTotal; Slurm's node definition needs them")
    over = excesses(node, hw)
    if over:
        asked = "; ".join(f"node group '{node.group}' {e.field}: {e.asked} asked, {e.found} found on {node.name}"
                          for e in over)
        return Check("resources", "fail", f"{asked}; lower the value in the spec or drop it to use what the node has")
    return Check("resources", "pass", hw.describe())


def _sandbox_gpus(node: NodeInfo, facts: dict) -> Check:
    """Sandbox GPU nodes carry stand-in device files (/dev/nvidiaN) so Slurm schedules gres; no PCI GPU."""
    files = int(facts.get("gpu_device_files") or 0)
    if files != node.gpu_count:
        return Check("gpus", "fail", f"{files} stand-in GPU device files; the spec expects {node.gpu_count}")
    if not files:
        return Check("gpus", "n/a", "no GPU expected, none found")
    return Check("gpus", "pass", f"{files} x {node.gpu_model} stand-in device files (sandbox test hook)")


def _fabric(node: NodeInfo, facts: dict) -> Check:
    devices = [d.split(":") for d in facts.get("rdma", "").split(",") if d]
    if node.interconnect == "none":
        return Check("fabric", "n/a", f"none expected ({len(devices)} RDMA devices present)")
    wanted = "efa" if node.interconnect == "efa" else "mlx"
    matching = [name for name, driver in devices if driver.startswith(wanted)]
    shown = f"{len(matching)} {node.interconnect} devices"
    if len(matching) < node.interconnect_nics:
        return Check("fabric", "fail", f"{shown}; the spec expects {node.interconnect_nics}")
    return Check("fabric", "pass", shown)


def _hostname(facts: dict) -> Check:
    if facts.get("resolves") == "yes":
        return Check("hostname", "pass", f"{facts.get('hostname', '?')} resolves")
    return Check("hostname", "warn", f"{facts.get('hostname', '?')} does not resolve yet (deploy writes /etc/hosts)")


def clock_check(offset_s: float | None, reference: str) -> Check:
    """Clock offset against the controller: warn above 1 s, fail above 30 s."""
    if offset_s is None:
        return Check("clock", "n/a", f"no reading from {reference}")
    shown = f"{offset_s:+.3f} s against {reference}"
    if abs(offset_s) > CLOCK_FAIL_S:
        return Check("clock", "fail", f"{shown}; fix time sync before deploying (munge rejects skewed clocks)")
    return Check("clock", "warn" if abs(offset_s) > CLOCK_WARN_S else "pass", shown)


def slurm_series(nodes: dict[str, Platform], reference: str) -> dict[str, Check]:
    """With Slurm from the OS archive, every Slurm node must ship the same Slurm series: a failed check on each node
    whose release ships another series than the reference node's (the controller's; else the most common)."""
    series = {name: platform.slurm_series for name, platform in nodes.items()}
    if len(set(series.values())) < 2:
        return {}
    wanted = series.get(reference) or Counter(series.values()).most_common(1)[0][0]
    groups: dict[tuple[str, str], list[str]] = {}
    for name in sorted(nodes, key=lambda n: (series[n] != wanted, n != reference, n)):
        groups.setdefault((nodes[name].title, series[name]), []).append(name)
    parts = [_series_group(names, title, found, first=i == 0)
             for i, ((title, found), names) in enumerate(groups.items())]
    detail = (f"{', '.join(parts)}: one Slurm major per cluster; run one OS release on the Slurm nodes, or set "
              "software.slurm.source: repository with one Slurm version for every release")
    return {name: Check("slurm_series", "fail", detail) for name, found in series.items() if found != wanted}


def _series_group(names: list[str], title: str, series: str, first: bool) -> str:
    """"compute[01-02] run Debian 12 (Slurm 22.05)"; the verb only in the first group."""
    verb = ("runs " if len(names) == 1 else "run ") if first else ""
    return f"{hostlist.compress(names)} {verb}{title} (Slurm {series})"
