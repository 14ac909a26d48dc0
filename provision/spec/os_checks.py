"""Checks of the node OS a spec declares: a supported release per group, and one Slurm series per cluster."""
from __future__ import annotations

from provision.node import platforms
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec


def os_name(platform: platforms.Platform) -> str:
    """How a spec names a release: os-release ID and VERSION_ID ("debian-13", "ubuntu-24.04")."""
    return f"{platform.os_id}-{platform.release}"


def declared(spec: ClusterSpec) -> list[tuple[int, str | None]]:
    """(group index, OS name) for every group: its own `os`, else the one the provider builds (sandbox), else None."""
    default = getattr(spec.provider, "os", None)
    return [(i, group.os or default) for i, group in enumerate(spec.node_groups)]


def check_os(spec: ClusterSpec) -> list[Finding]:
    """Each declared OS is supported; with the distribution's Slurm, all of them ship the same Slurm series
    (slurmctld and slurmd two majors apart do not talk; one series per cluster)."""
    known = {os_name(p): p for p in platforms.supported()}
    choices = ", ".join(known)
    out, series = [], {}
    for i, name in declared(spec):
        if name is None:
            continue
        if name not in known:
            out.append(Finding("error", f"node_groups[{i}].os", f"'{name}' is not a supported OS",
                               f"use one of {choices}"))
            continue
        series.setdefault(known[name].slurm_series, []).append((i, name))
    if len(series) > 1 and spec.software.slurm.source == "distribution":
        shown = "; ".join(f"{', '.join(sorted({n for _, n in groups}))}: Slurm {s}" for s, groups in series.items())
        first = min(groups[0][0] for groups in list(series.values())[1:])  # the first group that differs
        out.append(Finding("error", f"node_groups[{first}].os", f"the groups' OS releases ship different Slurm "
                           f"majors ({shown}); one Slurm series per cluster",
                           "run every group on one release, or set software.slurm.source: repository with one "
                           "site build for all"))
    return out


def check_sandbox_os(spec: ClusterSpec) -> list[Finding]:
    """The sandbox builds every node from one release: a group cannot ask for another."""
    default = getattr(spec.provider, "os", None)
    if spec.provider.type != "sandbox":
        return []
    return [Finding("error", f"node_groups[{i}].os", f"sandbox nodes all run provider.os ({default}), "
                    f"the group asks for {group.os}", f"drop the group's os, or set provider.os: {group.os}")
            for i, group in enumerate(spec.node_groups) if group.os is not None and group.os != default]
