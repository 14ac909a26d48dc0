"""Configuration consistency: the cluster-wide files on every node against the controller's, and the stack's
package versions across the nodes of a group.

Pure: `command()` is the shell each node runs (inside certify's one pre-check SSH command per node); its
output is parsed and judged here. Only SHA-256 digests leave the nodes, never file contents (the munge key
included), and the report shows the first 12 hex digits of a digest.
- config.files (every node): each file's digest equals the controller's; a node that differs fails with the
  files named. /etc/hosts is compared on the block gpu-provision manages (the rest is the node's own).
- config.packages (every node): each installed package of the stack has the version most nodes of the node's
  group have; a node that differs (or lacks one the others have) fails with the packages named.
"""
from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from provision.certify.probe.records import CheckResult

CLUSTER_FILES = ("/etc/slurm/slurm.conf", "/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf", "/etc/slurm/mpi.conf",
                 "/etc/munge/munge.key")
HOSTS_FILE = "/etc/hosts"
HOSTS_BLOCK = "/^# BEGIN gpu-provision/,/^# END gpu-provision/p"  # the common role's blockinfile markers
# The stack's packages (dpkg-query patterns): Slurm, munge, MPI, the filesystem client, the GPU stack.
PACKAGE_PATTERNS = ("slurm*", "libslurm*", "munge", "libmunge*", "openmpi-bin", "libopenmpi*", "libpmix*",
                    "glusterfs-*", "nvidia-*", "libnvidia-*", "libcuda*", "cuda-*", "libnccl*",
                    "datacenter-gpu-manager*")
FILE_MARK, PACKAGE_MARK = "cfg|", "pkg|"
SHOWN = 12  # digest characters shown in the report
_NO_MAJORITY = object()  # a tie between versions: no node is the odd one out


@dataclass(frozen=True)
class NodeConfig:
    """What one node reported: file -> digest (None: absent), package -> version (installed ones)."""

    files: dict[str, str | None] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)


def command() -> str:
    """Shell lines printing `cfg|FILE|DIGEST` (or `cfg|FILE|-` when absent) and `pkg|NAME|VERSION|STATUS`."""
    lines = [f'if [ -r {f} ]; then echo "{FILE_MARK}{f}|$(sha256sum < {f} | cut -c1-64)"; '
             f'else echo "{FILE_MARK}{f}|-"; fi' for f in CLUSTER_FILES]
    lines.append(f'echo "{FILE_MARK}{HOSTS_FILE}|$(sed -n {shlex.quote(HOSTS_BLOCK)} {HOSTS_FILE} | sha256sum '
                 '| cut -c1-64)"')
    patterns = " ".join(shlex.quote(p) for p in PACKAGE_PATTERNS)
    lines.append(f"dpkg-query -W -f='{PACKAGE_MARK}${{Package}}|${{Version}}|${{db:Status-Abbrev}}\\n' "
                 f"{patterns} 2>/dev/null")
    return "\n".join(lines)


def parse(text: str) -> NodeConfig:
    """The marked lines of a node's pre-check output (other lines are ignored)."""
    config = NodeConfig()
    for line in text.splitlines():
        parts = line.strip().split("|")
        if line.startswith(FILE_MARK) and len(parts) == 3:
            config.files[parts[1]] = parts[2] if parts[2] not in ("", "-") else None
        elif line.startswith(PACKAGE_MARK) and len(parts) == 4 and parts[3].startswith("ii"):
            config.packages[parts[1]] = parts[2]
    return config


def file_checks(configs: Mapping[str, NodeConfig], controller: str) -> list[CheckResult]:
    """config.files per node against the controller's copies."""
    source = "SHA-256 of each file against the controller's"
    reference = configs.get(controller)
    if reference is None or not reference.files:
        return [CheckResult("config.files", "na", node=node, source=source,
                            detail=f"no reference: {controller} did not report its files") for node in configs]
    out = []
    for node, config in configs.items():
        wrong = [_file_difference(path, digest, config.files.get(path)) for path, digest in reference.files.items()
                 if digest is not None and config.files.get(path) != digest]
        base = dict(node=node, source=source, threshold=f"identical to {controller}")
        if wrong:
            out.append(CheckResult("config.files", "fail", **base, value=f"{len(wrong)} differ",
                                   detail="; ".join(wrong) + ": rerun `provision deploy` (or `--limit "
                                          f"{node}`) to put the cluster's files back"))
        else:
            compared = sum(1 for d in reference.files.values() if d is not None)
            detail = "the reference" if node == controller else f"{compared} files identical to {controller}'s"
            out.append(CheckResult("config.files", "pass", **base, value=f"{compared} identical", detail=detail))
    return out


def _file_difference(path: str, expected: str, found: str | None) -> str:
    what = f"{path} (the gpu-provision block)" if path == HOSTS_FILE else path
    if found is None:
        return f"{what} is missing"
    return f"{what} differs ({found[:SHOWN]} against {expected[:SHOWN]})"


def package_checks(configs: Mapping[str, NodeConfig], groups: Mapping[str, str]) -> list[CheckResult]:
    """config.packages per node: the stack's versions agree within the node's group."""
    members: dict[str, list[str]] = {}
    for node in configs:
        members.setdefault(groups.get(node, node), []).append(node)
    out = []
    for group, nodes in members.items():
        odd = _odd_packages({n: configs[n].packages for n in nodes})
        for node in nodes:
            base = dict(node=node, source=f"dpkg versions across group '{group}' ({len(nodes)} nodes)",
                        threshold="same as the group")
            installed = len(configs[node].packages)
            if odd.get(node):
                out.append(CheckResult("config.packages", "fail", **base, value=f"{len(odd[node])} differ",
                                       detail="; ".join(odd[node][:8]) + (" ..." if len(odd[node]) > 8 else "")
                                              + f": reinstall them, e.g. `provision deploy --limit {node}`"))
            elif len(nodes) == 1:
                out.append(CheckResult("config.packages", "pass", **base, value=f"{installed} packages",
                                       detail="the only node of its group: nothing to compare with"))
            else:
                out.append(CheckResult("config.packages", "pass", **base, value=f"{installed} packages",
                                       detail=f"{installed} packages of the stack, same versions as the group"))
    return out


def _odd_packages(installed: Mapping[str, Mapping[str, str]]) -> dict[str, list[str]]:
    """node -> ["slurmd 22.05.8-1 (the group has 22.05.8-4)", ...] for every package the nodes disagree on.

    The version most nodes have (absence counts as a value) is the reference; a tie has none, and then every
    node that has a version of its own is named."""
    names = sorted({name for packages in installed.values() for name in packages})
    odd: dict[str, list[str]] = {}
    for name in names:
        values = {node: packages.get(name) for node, packages in installed.items()}
        ranked = Counter(values.values()).most_common()
        reference = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else _NO_MAJORITY
        for node, version in values.items():
            if version == reference:
                continue
            if reference is _NO_MAJORITY:
                others = sorted({str(v or "absent") for n, v in values.items() if n != node})
                odd.setdefault(node, []).append(f"{name} {version or 'absent'} (others: {', '.join(others)})")
            else:
                odd.setdefault(node, []).append(f"{name} {version or 'absent'} (the group has "
                                                f"{reference or 'none'})")
    return odd
