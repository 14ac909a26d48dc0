"""A repository's signing key as the spec names it (a key file on this machine and, optionally, its fingerprint):
the file must hold exactly one OpenPGP public key, the one the fingerprint names. Shared by every APT repository the
spec may add (software.slurm's site repository, monitoring.grafana's)."""
from __future__ import annotations

from pathlib import Path

from provision import openpgp
from provision.spec.findings import Finding


def key_findings(key_field: str, key: Path, fingerprint_field: str, expected: str | None) -> list[Finding]:
    """The findings of one key file against its fingerprint; an unset fingerprint is a warning (the file is
    trusted as it is)."""
    try:
        found = openpgp.read_public_key(key.expanduser())
    except openpgp.KeyFileError as exc:
        return [Finding("error", key_field, exc.message, exc.hint or "")]
    if expected is None:
        return [Finding("warning", fingerprint_field, f"is not set, so the key in '{key}' is trusted as the file "
                        "holds it", f"check the key with the repository's owner and write {fingerprint_field.rsplit('.', 1)[-1]}: "
                        f"{found.fingerprint}; a swapped key file is then refused")]
    if found.fingerprint != expected:
        return [Finding("error", fingerprint_field, f"'{key}' holds the key {found.fingerprint}, not {expected}",
                        "give the file of the key with this fingerprint, or correct the fingerprint")]
    return []


def signing_key(key_field: str, key: Path, expected: str | None) -> openpgp.PublicKey:
    """The key from its file, refused (KeyFileError) unless it is the key the fingerprint names."""
    found = openpgp.read_public_key(key.expanduser())
    if expected and found.fingerprint != expected:
        raise openpgp.KeyFileError(f"{key_field}: '{key}' holds the key {found.fingerprint}, not {expected}",
                                   hint="give the file of the key with this fingerprint, or correct the fingerprint")
    return found
