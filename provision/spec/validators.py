"""Semantic checks on a structurally valid spec; each returns every finding it has, never raises."""
from __future__ import annotations

import difflib
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from ipaddress import IPv4Address, ip_address

from provision import hostlist
from provision.certify.probe.gpus import GPU_MODELS
from provision.errors import SpecError
from provision.files import FileKind, UnreadableFile, check_regular
from provision.node import compat
from provision.providers import registry
from provision.spec import health_checks, monitoring_checks, os_checks, people_checks, reserved, topology
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec
from provision.spec.section import ProviderSection
from provision.spec.shapes import normal_path
from provision.spec.slurm_source import check_slurm_source

Validator = Callable[[ClusterSpec], list[Finding]]

# A DNS label Slurm also takes as a NodeName: ASCII lower case, a letter first, no '-' at the end, at most 63.
_HOSTNAME = re.compile(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?")
_SYSTEM_PATHS = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/root", "/run", "/sbin",
                 "/sys", "/tmp", "/usr", "/var")


_names = topology.names_per_group


def _providers(has: Callable[[type[ProviderSection]], bool]) -> str:
    """The names of the providers whose spec section has a property (e.g. "static"), for a message."""
    return " or ".join(name for name, entry in registry.PROVIDERS.items() if has(entry.config))


def check_group_size(spec: ClusterSpec) -> list[Finding]:
    """A group needs count or hosts, and they must agree; addresses must match the names."""
    out = []
    for i, group in enumerate(spec.node_groups):
        path = f"node_groups[{i}]"
        if group.count is None and group.hosts is None:
            out.append(Finding("error", path, f"group '{group.name}' has neither count nor hosts",
                               "add count: N or hosts: name[01-N]"))
            continue
        try:
            names = topology.group_names(group)
            addresses = topology.group_addresses(group)
        except SpecError as exc:
            field = "hosts" if group.hosts and not _expands(group.hosts) else "addresses"
            out.append(Finding("error", f"{path}.{field}", exc.message, exc.hint or ""))
            continue
        if group.count is not None and group.hosts is not None and group.count != len(names):
            out.append(Finding("error", f"{path}.count", f"{group.count} does not match the {len(names)} names "
                               f"in hosts '{group.hosts}'", "drop count or make it equal to the number of hosts"))
        if addresses and len(addresses) != len(names):
            out.append(Finding("error", f"{path}.addresses", f"{len(addresses)} addresses for {len(names)} hosts",
                               "give one address per host, in the order of hosts"))
    return out


def _expands(expression: str) -> bool:
    """Whether a hostlist expression parses."""
    try:
        hostlist.expand(expression)
        return True
    except SpecError:
        return False


def check_host_names(spec: ClusterSpec) -> list[Finding]:
    """Host names must be valid DNS labels and unique across the cluster."""
    names = _names(spec)
    if names is None:
        return []
    out = []
    seen: dict[str, int] = {}
    for i, group_names in enumerate(names):
        for name in group_names:
            if not _HOSTNAME.fullmatch(name):
                out.append(Finding("error", f"node_groups[{i}].hosts", f"'{name}' is not a valid host name",
                                   "use lower-case letters, digits and '-', starting with a letter"))
            if name in seen:
                out.append(Finding("error", f"node_groups[{i}]", f"host name '{name}' is also in "
                                   f"node_groups[{seen[name]}]", "give every host a unique name"))
            seen.setdefault(name, i)
    return out


def check_group_names(spec: ClusterSpec) -> list[Finding]:
    """Node group names must be unique."""
    counts = Counter(g.name for g in spec.node_groups)
    return [Finding("error", f"node_groups[{i}].name", f"'{g.name}' names more than one group",
                    "give every node group its own name")
            for i, g in enumerate(spec.node_groups) if counts[g.name] > 1]


def check_addresses(spec: ClusterSpec) -> list[Finding]:
    """Addresses must be IPv4, unique, inside the declared subnet; a provider that does not assign them needs them."""
    out = []
    seen: dict[str, str] = {}
    subnet = spec.provider.address_subnet
    for i, group in enumerate(spec.node_groups):
        path = f"node_groups[{i}].addresses"
        try:
            addresses = topology.group_addresses(group)
        except SpecError:
            continue
        if spec.provider.addresses == "declared" and not addresses:
            out.append(Finding("error", path, f"{spec.provider.type} group '{group.name}' has no addresses",
                               "list one address per host, e.g. addresses: 10.0.0.[11-14]"))
        if spec.provider.addresses == "assigned" and addresses:
            declaring = _providers(lambda c: c.addresses == "declared")
            out.append(Finding("error", path, f"the {spec.provider.type} provider assigns addresses itself",
                               f"remove addresses, or use provider type {declaring}"))
            continue
        for address in addresses:
            try:
                parsed = ip_address(address)
            except ValueError:
                out.append(Finding("error", path, f"'{address}' is not an IP address",
                                   "use a dotted quad such as 10.0.0.12"))
                continue
            if not isinstance(parsed, IPv4Address):
                out.append(Finding("error", path, f"'{address}' is IPv6", "use an IPv4 address"))
            elif subnet is not None and parsed not in subnet:
                out.append(Finding("error", path, f"'{address}' is outside the declared subnet {subnet}",
                                   f"use an address in {subnet} or widen provider.subnet"))
            if address in seen:
                out.append(Finding("error", path, f"address '{address}' is also used by group '{seen[address]}'",
                                   "give every host its own address"))
            seen.setdefault(address, group.name)
    return out


def check_roles(spec: ClusterSpec) -> list[Finding]:
    """Exactly one controller node; at least one compute node; no role twice in a group."""
    names = _names(spec) or [[]] * len(spec.node_groups)
    controllers = sum(len(n) for g, n in zip(spec.node_groups, names) if "controller" in g.roles)
    out = []
    if controllers != 1:
        out.append(Finding("error", "node_groups", f"{controllers} controller nodes",
                           "give exactly one node the controller role (a group with roles: [controller], count: 1)"))
    if not any("compute" in g.roles for g in spec.node_groups):
        out.append(Finding("error", "node_groups", "no group has the compute role",
                           "add a group with roles: [compute]"))
    for i, group in enumerate(spec.node_groups):
        if len(set(group.roles)) != len(group.roles):
            out.append(Finding("error", f"node_groups[{i}].roles", f"{group.roles} repeats a role",
                               "list each role once"))
    return out


def check_gpus(spec: ClusterSpec) -> list[Finding]:
    """GPU models must be known, only on compute groups, and supported by the driver branch."""
    out = []
    for i, group in enumerate(spec.node_groups):
        if group.gpu is None:
            continue
        path = f"node_groups[{i}].gpu"
        if "compute" not in group.roles:
            out.append(Finding("error", path, f"group '{group.name}' has GPUs but not the compute role",
                               "add compute to roles, or move the GPUs to a compute group"))
        model = GPU_MODELS.get(group.gpu.model)
        if model is None:
            close = difflib.get_close_matches(group.gpu.model, list(GPU_MODELS), n=1, cutoff=0.5)
            fix = f"did you mean '{close[0]}'?" if close else f"use one of {', '.join(GPU_MODELS)}"
            out.append(Finding("error", f"{path}.model", f"'{group.gpu.model}' is not a known GPU model", fix))
        elif spec.software.nvidia_driver.branch < model.min_driver_branch:
            out.append(Finding("error", "software.nvidia_driver.branch",
                               f"{spec.software.nvidia_driver.branch} does not support {model.key}",
                               f"use branch {model.min_driver_branch} or newer"))
    return out


def check_partitions(spec: ClusterSpec) -> list[Finding]:
    """A partition must not mix GPU models; at most one default partition."""
    out = []
    models: dict[str, set] = defaultdict(set)
    for group in spec.node_groups:
        if "compute" in group.roles:
            models[group.partition or group.name].add(group.gpu.model if group.gpu else None)
    for partition, kinds in models.items():
        if len(kinds) > 1:
            shown = ", ".join(sorted(k or "no GPU" for k in kinds))
            out.append(Finding("error", "node_groups", f"partition '{partition}' mixes {shown}",
                               "give heterogeneous groups separate partitions"))
    defaults = [i for i, g in enumerate(spec.node_groups) if g.default_partition]
    if len(defaults) > 1:
        out.append(Finding("error", f"node_groups[{defaults[1]}].default_partition",
                           f"groups {defaults} all claim the default partition", "set default_partition on one group"))
    return out


def check_versions(spec: ClusterSpec) -> list[Finding]:
    """Driver branch, CUDA and NCCL must form a coherent set (provision.node.compat)."""
    out = []
    software = spec.software
    branch = software.nvidia_driver.branch
    max_cuda = compat.max_cuda_for_branch(branch)
    if max_cuda is None:
        known = ", ".join(map(str, compat.known_driver_branches()))
        out.append(Finding("error", "software.nvidia_driver.branch", f"{branch} is not a known driver branch",
                           f"use one of {known}"))
    if software.nvidia_driver.version and max_cuda:
        problem = compat.driver_version_problem(branch, software.nvidia_driver.version)
        if problem:
            out.append(Finding("error", "software.nvidia_driver.version", problem,
                               f"give a full version on branch {branch} ({branch}.MINOR[.PATCH]), "
                               f"or leave version out to take the newest {branch} driver"))
    for j, cuda in enumerate(software.cuda.versions):
        if max_cuda and compat.version_tuple(cuda) > compat.version_tuple(max_cuda):
            need = compat.min_branch_for_cuda(cuda)
            fix = f"use driver branch {need} or newer, or CUDA {max_cuda} or older" if need else \
                f"use CUDA {max_cuda} or older"
            out.append(Finding("error", f"software.cuda.versions[{j}]",
                               f"CUDA {cuda} is too new for driver branch {branch} (supports up to {max_cuda})", fix))
    default = software.cuda.default or software.cuda.versions[-1]
    if default not in software.cuda.versions:
        out.append(Finding("error", "software.cuda.default", f"'{default}' is not in cuda.versions "
                           f"{software.cuda.versions}", "add it to versions or pick one of them"))
    elif not compat.nccl_supports_cuda(software.nccl.version, default):
        out.append(Finding("error", "software.nccl.version",
                           f"NCCL {software.nccl.version} has no build for CUDA {default}",
                           f"use an NCCL release built for CUDA {default.split('.')[0]} "
                           f"({compat.NCCL_CUDA_MAJORS.get(default.split('.')[0], compat.Rule('', 'none', '')).value})"))
    out += _fabric_manager_findings(spec)
    return out


def _fabric_manager_findings(spec: ClusterSpec) -> list[Finding]:
    """NVSwitch GPUs need fabric manager at exactly the driver version; Debian's archive has none."""
    driver = spec.software.nvidia_driver
    if driver.source != "distribution":
        return []
    for group in spec.node_groups:
        model = GPU_MODELS.get(group.gpu.model) if group.gpu else None
        if model and model.nvswitch:
            return [Finding("warning", "software.nvidia_driver.source",
                            f"'distribution' drivers have no fabric manager at the same version, and group "
                            f"'{group.name}' ({model.key}) has NVSwitches that need one "
                            f"({compat.FABRIC_MANAGER_EQUALS_DRIVER.key} must equal the driver version)",
                            f"use source cuda-repo, where nvidia-fabricmanager-{driver.branch} is published "
                            f"for every {driver.branch} driver")]
    return []


def check_filesystem(spec: ClusterSpec) -> list[Finding]:
    """Mount point not a system path; glusterfs needs storage nodes; client filesystems need a server."""
    fs = spec.filesystem
    out = []
    mount = normal_path(fs.mount_point)  # judged as the kernel resolves it: /shared/../etc is /etc
    shown = f"'{fs.mount_point}'" + (f" (that is {mount})" if mount != fs.mount_point.rstrip("/") else "")
    if not fs.mount_point.startswith("/"):
        out.append(Finding("error", "filesystem.mount_point", f"'{fs.mount_point}' is not an absolute path",
                           "use a path such as /shared"))
    elif mount in _SYSTEM_PATHS or any(mount.startswith(p + "/") for p in _SYSTEM_PATHS if p not in ("/",)):
        out.append(Finding("error", "filesystem.mount_point", f"{shown} is a system path",
                           "mount the shared filesystem at its own path, such as /shared"))
    elif mount != fs.mount_point.rstrip("/"):
        out.append(Finding("error", "filesystem.mount_point", f"{shown} is not written in normal form",
                           f"write {mount}"))
    names = _names(spec)
    if fs.type == "glusterfs" and names is not None:
        storage = sum(len(n) for g, n in zip(spec.node_groups, names) if "storage" in g.roles)
        if storage == 0:
            out.append(Finding("error", "filesystem.type", "glusterfs needs nodes with the storage role",
                               "add a group with roles: [storage]"))
        elif fs.replica and fs.replica > storage:
            out.append(Finding("error", "filesystem.replica", f"{fs.replica} is more than the {storage} storage nodes",
                               f"use a replica count of at most {storage}"))
        elif fs.replica and storage % fs.replica:
            out.append(Finding("error", "filesystem.replica", f"{fs.replica} does not divide the {storage} storage "
                               "nodes (one brick each; GlusterFS makes replica sets of that many bricks)",
                               f"use a replica count that divides {storage}, or change the number of storage nodes"))
        else:
            out += _unreplicated(fs.replica, storage, bool(spec.users))
    if fs.type in ("lustre", "beegfs", "nfs") and not fs.server and not spec.provider.checks_filesystem_server:
        out.append(Finding("error", "filesystem.server", f"{fs.type} needs the server to mount from",
                           "set filesystem.server (Lustre MGS or FSx DNS name, BeeGFS management host, NFS server)"))
    return out


def _unreplicated(replica: int | None, storage: int, homes: bool) -> list[Finding]:
    """A GlusterFS volume without a second copy of each file loses files with any one storage node."""
    if replica and replica > 1:
        return []
    held = "the files on it, the users' homes among them" if homes else "the files on it"
    if storage == 1:
        return [Finding("warning", "filesystem", f"one storage node holds the whole volume: losing it loses {held}",
                        "add a second storage node and set filesystem.replica: 2")]
    fits = [n for n in (3, 2) if storage % n == 0]
    fix = (f"set filesystem.replica: {fits[0]}" if fits else
           f"make the storage nodes a multiple of 2 or 3 (there are {storage}) and set filesystem.replica")
    return [Finding("warning", "filesystem.replica", f"is {replica or 'not set'}, so the volume is plain distribute "
                    f"(each file on one of the {storage} storage nodes): losing one loses {held}", fix)]


def check_interconnect(spec: ClusterSpec) -> list[Finding]:
    """EFA only where the provider has it; a fabric needs a NIC count; GPU certify levels need GPUs."""
    out = []
    for i, group in enumerate(spec.node_groups):
        kind = group.interconnect.type
        path = f"node_groups[{i}].interconnect"
        if kind == "efa" and not spec.provider.efa:
            out.append(Finding("error", f"{path}.type", f"efa is only available on the {_providers(lambda c: c.efa)} "
                               "provider", "use infiniband or none"))
        if kind != "none" and group.interconnect.nics == 0:
            out.append(Finding("error", f"{path}.nics", f"0 NICs for a {kind} fabric",
                               "set nics to the fabric NICs per node (e.g. 8 for 8x NDR)"))
    if spec.certify.level != "quick" and not any(g.gpu for g in spec.node_groups):
        out.append(Finding("warning", "certify.level", f"'{spec.certify.level}' runs GPU tests but no group has GPUs",
                           "use level quick, or add gpu to a compute group"))
    return out


_SSH_KEY = FileKind("a private key", "give the path of the private key, or omit key_path to use the generated "
                    "cluster key", "")


def check_ssh(spec: ClusterSpec) -> list[Finding]:
    """A given key must be a regular file this user can open (a FIFO or a device is refused, never read)."""
    path = spec.ssh.key_path
    if path is None:
        return []
    if not os.path.lexists(path.expanduser()):
        return [Finding("error", "ssh.key_path", f"'{path}' does not exist", _SSH_KEY.fix)]
    try:
        check_regular(path.expanduser(), _SSH_KEY)
    except UnreadableFile as exc:
        return [Finding("error", "ssh.key_path", exc.message, exc.hint or "")]
    return []


VALIDATORS: tuple[Validator, ...] = (
    check_group_names, check_group_size, check_host_names, check_addresses, check_roles, check_gpus,
    check_partitions, check_versions, check_slurm_source, check_filesystem, check_interconnect, check_ssh,
    os_checks.check_os, os_checks.check_sandbox_os, reserved.check_reserved_names,
    people_checks.check_users, people_checks.check_user_accounts, people_checks.check_accounting,
    people_checks.check_directory_users, people_checks.check_homes, people_checks.check_directory,
    people_checks.check_login_nodes, people_checks.check_certify_user, health_checks.check_active,
    monitoring_checks.check_monitoring,
)


EVERY_SECTION = "*"
# The top-level sections of the spec each validator reads (tests/unit/spec/test_partial_validation.py checks them):
# when a section had a structural error, the validators that read it do not run (provision.spec.partial).
READS: dict[Validator, tuple[str, ...]] = {
    check_group_names: ("node_groups",), check_group_size: ("node_groups",), check_host_names: ("node_groups",),
    check_addresses: ("node_groups", "provider"), check_roles: ("node_groups",), check_gpus: ("node_groups", "software"),
    check_partitions: ("node_groups",), check_versions: ("node_groups", "software"),
    check_slurm_source: ("software",), check_filesystem: ("filesystem", "node_groups", "provider", "users"),
    check_interconnect: ("node_groups", "provider", "certify"), check_ssh: ("ssh", "provider"),
    os_checks.check_os: ("node_groups", "provider", "software"), os_checks.check_sandbox_os: ("node_groups", "provider"),
    reserved.check_reserved_names: ("node_groups",),
    people_checks.check_users: ("users",), people_checks.check_user_accounts: ("users", "accounting"),
    people_checks.check_accounting: ("accounting", "software"),
    people_checks.check_directory_users: ("accounting", "users", "directory"),
    people_checks.check_homes: ("homes", "filesystem", "users"), people_checks.check_directory: ("directory",),
    people_checks.check_login_nodes: ("users", "directory", "node_groups"),
    people_checks.check_certify_user: ("certify", "users", "accounting"),
    health_checks.check_active: ("health", "software", "node_groups"),
    monitoring_checks.check_monitoring: ("monitoring", "node_groups", "ssh", "health", "provider"),
}


def semantic_findings(spec: ClusterSpec, damaged: frozenset[str] = frozenset()) -> list[Finding]:
    """Run every validator, then the provider's own checks, and return all findings, errors first. `damaged`: the
    sections whose structural errors were taken out of `spec`; the validators that read one of them are skipped
    (the provider's checks read everything)."""
    checks = [(check, READS.get(check, (EVERY_SECTION,))) for check in VALIDATORS]
    checks.append((registry.checks(spec.provider.type), (EVERY_SECTION,)))
    findings = [f for check, reads in checks if not _touches(reads, damaged) for f in check(spec)]
    return sorted(findings, key=lambda f: f.level != "error")


def _touches(reads: tuple[str, ...], damaged: frozenset[str]) -> bool:
    """Whether a validator reading `reads` would see a damaged section."""
    return bool(damaged) and (EVERY_SECTION in reads or bool(damaged.intersection(reads)))
