"""The slurm role's package variables for a site repository (software.slurm.source: repository), from the spec.

Debian's own packages need nothing here: the role's defaults name them. A site repository brings its signing key
(read from the control machine, checked against the spec's fingerprint and written into the inventory armored, so a
deploy needs no file outside the cluster's state), its pinned version and the package names of each node role.
"""
from __future__ import annotations

from provision import openpgp
from provision.spec import signing_keys
from provision.spec.model import Slurm

# The slurm role installs MariaDB for slurmdbd from the distribution: its slurm_accounting_packages end with these, and
# its slurm_repository_unpinned_packages keep them out of the pin (playbooks/roles/slurm/defaults/main.yml).
ACCOUNTING_DATABASE_PACKAGES = ("mariadb-server",)


def repository_vars(slurm: Slurm) -> dict[str, object]:
    """Role variables (name -> value, in the inventory's order); empty with Debian's own packages."""
    if slurm.source != "repository" or slurm.repository_key is None:
        return {}
    key = signing_key(slurm)
    out: dict[str, object] = {
        "slurm_repository_key": key.armored(),
        "slurm_repository_key_fingerprint": key.fingerprint if slurm.repository_key_fingerprint else "",
        "slurm_repository_version": slurm.version or "",
    }
    if slurm.repository_suite:
        out["slurm_repository_suite"] = slurm.repository_suite
    if slurm.repository_components is not None:
        out["slurm_repository_components"] = list(slurm.repository_components)
    packages = slurm.packages
    out.update({
        "slurm_client_packages": list(packages.client),
        "slurm_controller_packages": list(packages.controller),
        "slurm_compute_packages": list(packages.compute),
        "slurm_pam_adopt_packages": list(packages.pam_adopt),
        "slurm_accounting_packages": list(packages.accounting) + [
            p for p in ACCOUNTING_DATABASE_PACKAGES if p not in packages.accounting],
    })
    return out


def signing_key(slurm: Slurm) -> openpgp.PublicKey:
    """The repository's key from its file, refused unless it is the key the spec's fingerprint names."""
    return signing_keys.signing_key("software.slurm.repository_key", slurm.repository_key,
                                    slurm.repository_key_fingerprint)
