"""The per-cluster SSH key pair, generated locally and never printed."""
from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from provision.state import write_private


def ensure_key_pair(private_path: Path, comment: str) -> Path:
    """Create an Ed25519 key pair (private 0600) unless one exists; return the private key path."""
    public_path = private_path.with_suffix(".pub")
    if private_path.exists() and public_path.exists():
        os.chmod(private_path, 0o600)
        return private_path
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    write_private(private_path, private.decode())
    public_path.write_text(f"{public.decode()} {comment}\n")
    return private_path


def public_key(private_path: Path) -> str:
    """The one-line OpenSSH public key that goes into authorized_keys or a cloud key pair."""
    return private_path.with_suffix(".pub").read_text().strip()
