"""The per-cluster SSH key pair, generated locally and never printed.

A key pair found in the state is used only if it is this user's own: both halves regular files owned by this user,
not links, the private key closed to others and the public key not writable by them (provision.owned). A pair
planted by someone else would otherwise become the cluster's key (on AWS, the imported EC2 key pair).
"""
from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from provision.owned import owned_file
from provision.state import write_private


def ensure_key_pair(private_path: Path, comment: str) -> Path:
    """Create an Ed25519 key pair (both 0600, atomically) unless this user's own pair is there; return the private
    key path. The directory must exist and be checked already (ClusterState.ensure("ssh"))."""
    public_path = private_path.with_suffix(".pub")
    if owned_file(private_path) and owned_file(public_path, public=True):
        return private_path
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    write_private(private_path, private.decode())
    write_private(public_path, f"{public.decode()} {comment}\n")
    return private_path


def public_key(private_path: Path) -> str:
    """The one-line OpenSSH public key that goes into authorized_keys or a cloud key pair (checked to be ours)."""
    public_path = private_path.with_suffix(".pub")
    owned_file(public_path, public=True)
    return public_path.read_text().strip()
