"""Semantic checks of software.slurm's package source: a site repository needs its URL, a signing key that is one
OpenPGP public key (with the fingerprint the spec expects, when it names one), a pinned version, and package names
from one family; with Debian's own packages those fields are unused."""
from __future__ import annotations

from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec, Slurm
from provision.spec.signing_keys import key_findings

_PATH = "software.slurm"
_DEBIAN_DAEMONS = ("slurm-client", "slurmctld", "slurmd", "slurmdbd")
_SCHEDMD_PREFIX = "slurm-smd"


def check_slurm_source(spec: ClusterSpec) -> list[Finding]:
    """Every finding about where the Slurm packages come from."""
    slurm = spec.software.slurm
    if slurm.source == "distribution":
        return _unused(slurm)
    return _required(slurm) + _key_findings(slurm) + _layout_findings(slurm) + _package_findings(slurm)


def _unused(slurm: Slurm) -> list[Finding]:
    """Repository fields written for Debian's own packages: a warning each, they change nothing."""
    return [Finding("warning", f"{_PATH}.{name}", "is set but source is 'distribution', so it is not used",
                    "remove it, or set source: repository to install Slurm from the site's repository")
            for name in Slurm.REPOSITORY_FIELDS if name in slurm.model_fields_set]


def _required(slurm: Slurm) -> list[Finding]:
    """The URL, key and version a site repository cannot do without."""
    out = []
    if not slurm.repository_url:
        out.append(Finding("error", f"{_PATH}.repository_url", "is missing while source is 'repository'",
                           "set repository_url to the site's Slurm APT repository, or use source: distribution"))
    if slurm.repository_key is None:
        out.append(Finding("error", f"{_PATH}.repository_key", "is missing while source is 'repository'",
                           "give the path of the repository's signing key on this machine (an OpenPGP public key, "
                           "armored or binary): apt trusts that key, and only it, for the repository"))
    if not slurm.version:
        out.append(Finding("error", f"{_PATH}.version", "is missing while source is 'repository'",
                           "pin the Slurm version the site's repository holds, as `apt-cache policy slurmd` shows "
                           "it (e.g. 24.11.5-1)"))
    return out


def _key_findings(slurm: Slurm) -> list[Finding]:
    """The key file holds exactly one usable public key, the one the fingerprint names."""
    if slurm.repository_key is None:
        return []
    return key_findings(f"{_PATH}.repository_key", slurm.repository_key, f"{_PATH}.repository_key_fingerprint",
                        slurm.repository_key_fingerprint)


def _layout_findings(slurm: Slurm) -> list[Finding]:
    """A flat repository (suite ending in '/') has no components."""
    suite = slurm.repository_suite or ""
    if suite.endswith("/") and slurm.repository_components:
        return [Finding("error", f"{_PATH}.repository_components",
                        f"are set, but suite '{suite}' is a flat repository, which has none",
                        "remove repository_components, or name a suite (e.g. bookworm)")]
    return []


def _package_findings(slurm: Slurm) -> list[Finding]:
    """Debian's and SchedMD's names conflict: one family for every role."""
    names = slurm.packages.every()
    schedmd = [n for n in names if n.startswith(_SCHEDMD_PREFIX)]
    debian = [n for n in names if n in _DEBIAN_DAEMONS]
    if schedmd and debian:
        return [Finding("error", f"{_PATH}.packages",
                        f"mix SchedMD's names ({', '.join(schedmd)}) with Debian's ({', '.join(debian)}), whose "
                        "packages conflict", "name every role's packages from one family, e.g. slurm-smd-client, "
                        "slurm-smd-slurmctld, slurm-smd-slurmd and slurm-smd-slurmdbd")]
    return []
