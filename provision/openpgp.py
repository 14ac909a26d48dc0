"""OpenPGP public keys as APT uses them: read one from a file (ASCII-armored or binary), name its fingerprint, armor it.

GnuPG reads the key, not us: `gpg --show-keys --with-colons` lists what the data holds (public and secret keys, each
with its fingerprint), and an import into a throw-away home followed by `gpg --export --armor` gives the armored block
the inventory carries. Debian 12's apt verifies with gpgv 2.2, which reads version 4 keys only (40-digit
fingerprints), so other versions are refused here rather than on the nodes.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from provision.errors import UsageError
from provision.files import FileKind, UnreadableFile, read_regular

MAX_KEY_FILE_BYTES = 1 << 20
GPG_TIMEOUT_S = 30
KEY_FILE = FileKind("a signing key", "give the path of the repository's signing key on this machine",
                    "export the repository's signing key alone (gpg --export KEYID)")
_V4_DIGITS = 40
_ONE_KEY_HINT = ("export the repository's signing key alone (gpg --export KEYID), so that apt trusts that key and "
                 "no other for the repository")
_EXPORT_HINT = "give an OpenPGP public key file, armored or binary, as `gpg --export [--armor] KEYID` writes it"
_SECRET_HINT = ("give the public key only (gpg --export, not --export-secret-keys); the secret key never leaves the "
                "machine that signs")


class KeyFileError(UsageError):
    """A signing key file cannot be used: unreadable, not an OpenPGP public key, or not exactly one key."""


@dataclass(frozen=True)
class PublicKey:
    """One transferable public key: its fingerprint and the key as an ASCII-armored block, both as gpg gives them."""

    fingerprint: str  # 40 upper-case hex digits
    armor: str

    def armored(self) -> str:
        """The key as an ASCII-armored block (what apt reads from a keyring file ending in .asc)."""
        return self.armor


@dataclass(frozen=True)
class _Listing:
    """What `gpg --show-keys --with-colons` says a file holds."""

    public: list[str]  # the fingerprint of each primary public key
    secret: int  # how many secret keys


def read_public_key(path: Path) -> PublicKey:
    """The one public key in a file; KeyFileError says what is wrong and how to fix it (the file is read within
    limits: a FIFO or a device is refused at once, never read)."""
    try:
        data = read_regular(path, MAX_KEY_FILE_BYTES, KEY_FILE)
    except UnreadableFile as exc:
        raise KeyFileError(exc.message, hint=exc.hint) from None
    return parse_public_key(data, f"'{path}'")


@functools.lru_cache(maxsize=32)
def parse_public_key(data: bytes, name: str = "the key") -> PublicKey:
    """The one public key in armored or binary OpenPGP data (a key read once is not read by gpg again: every
    command of a run reads the spec, and the answer depends on the bytes alone; errors are never cached)."""
    if not data.strip():
        raise KeyFileError(f"{name} holds no OpenPGP data", hint=_EXPORT_HINT)
    if b"PRIVATE KEY BLOCK-----" in data:
        raise KeyFileError(f"{name} is a secret key (an armored private key block)", hint=_SECRET_HINT)
    with tempfile.TemporaryDirectory(prefix="gpg-provision-") as home:
        listing = _show(data, name, Path(home))
        if listing.secret:
            raise KeyFileError(f"{name} holds a secret key", hint=_SECRET_HINT)
        if len(listing.public) != 1:
            raise KeyFileError(f"{name} holds {len(listing.public)} public keys, not exactly one", hint=_ONE_KEY_HINT)
        fingerprint = listing.public[0]
        if len(fingerprint) != _V4_DIGITS:
            raise KeyFileError(f"{name} is not a version 4 OpenPGP key (its fingerprint has {len(fingerprint)} "
                               "digits); Debian 12's apt (gpgv 2.2) verifies version 4 keys only",
                               hint="sign the repository with a version 4 key (gpg 2.2 makes them)")
        return PublicKey(fingerprint, _armored(data, fingerprint, name, Path(home)))


def _show(data: bytes, name: str, home: Path) -> _Listing:
    """The keys in the data, as gpg lists them without importing anything."""
    done = _gpg(home, ["--with-colons", "--show-keys"], data)
    listing = parse_colons(done.stdout.decode("utf-8", "replace"))
    if done.returncode != 0 and not listing.secret:  # a secret key is named as such, whatever else gpg said
        raise KeyFileError(f"{name} is not an OpenPGP key gpg can read ({_first_error(done.stderr)})",
                           hint=_EXPORT_HINT)
    return listing


def parse_colons(text: str) -> _Listing:
    """Primary keys and their fingerprints from gpg's colon listing: a `pub` or `sec` record, then its `fpr` record
    (subkeys, `sub`/`ssb`, have fingerprints of their own, which are not the key's)."""
    public: list[str] = []
    secret, owner = 0, ""
    for line in text.splitlines():
        record = line.split(":")
        kind = record[0]
        if kind in ("pub", "sec", "sub", "ssb"):
            owner = kind
            secret += kind == "sec"
        elif kind == "fpr" and owner == "pub" and len(record) > 9:
            public.append(record[9].upper())
            owner = ""
    return _Listing(public, secret)


def _armored(data: bytes, fingerprint: str, name: str, home: Path) -> str:
    """The key as gpg exports it armored, after an import into a home of its own (nothing else in it)."""
    imported = _gpg(home, ["--import"], data)
    exported = _gpg(home, ["--armor", "--export", fingerprint], b"")
    armor = exported.stdout.decode("ascii", "replace")
    if imported.returncode != 0 or exported.returncode != 0 or "BEGIN PGP PUBLIC KEY BLOCK" not in armor:
        raise KeyFileError(f"{name} cannot be imported by gpg ({_first_error(imported.stderr + exported.stderr)})",
                           hint=_EXPORT_HINT)
    return armor


def _gpg(home: Path, args: list[str], data: bytes) -> subprocess.CompletedProcess:
    """gpg in batch mode against a throw-away home (never the user's keyrings, no options file, no agent needed)."""
    gpg = shutil.which("gpg")
    if gpg is None:
        raise KeyFileError("gpg is not installed on this machine; it reads software.slurm.repository_key",
                           hint="install it (apt-get install gpg; `make deps` does)")
    argv = [gpg, "--batch", "--no-tty", "--no-options", "--quiet", "--homedir", str(home), "--no-auto-key-locate",
            *args]
    try:
        return subprocess.run(argv, input=data, capture_output=True, timeout=GPG_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise KeyFileError(f"gpg did not read the key within {GPG_TIMEOUT_S} s", hint=_EXPORT_HINT) from None


def _first_error(stderr: bytes) -> str:
    """gpg's first message, for the one line we print."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[0][:200] if lines else "it said nothing"
