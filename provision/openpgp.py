"""OpenPGP public keys as APT uses them: read one from a file (ASCII-armored or binary), name its fingerprint, armor it.

Only what a repository's signing key needs, in pure Python (RFC 4880): the packet framing, the version 4 fingerprint
(SHA-1 over the public key packet) and the armor with its CRC-24. Debian 12's apt verifies with gpgv 2.2, which
reads version 4 keys only, so other versions are refused here rather than on the nodes.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from pathlib import Path

from provision.errors import UsageError
from provision.files import FileKind, UnreadableFile, read_regular

MAX_KEY_FILE_BYTES = 1 << 20
KEY_FILE = FileKind("a signing key", "give the path of the repository's signing key on this machine",
                    "export the repository's signing key alone (gpg --export KEYID)")
_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
_END = "-----END PGP PUBLIC KEY BLOCK-----"
_PUBLIC_KEY, _SECRET_KEY, _SECRET_SUBKEY = 6, 5, 7
_CRC24_INIT, _CRC24_POLY = 0xB704CE, 0x1864CFB


class KeyFileError(UsageError):
    """A signing key file cannot be used: unreadable, not an OpenPGP public key, or not exactly one key."""


@dataclass(frozen=True)
class PublicKey:
    """One transferable public key (primary key, user ids, subkeys, signatures) in binary form."""

    fingerprint: str  # 40 upper-case hex digits
    packets: bytes

    def armored(self) -> str:
        """The key as an ASCII-armored block (what apt reads from a keyring file ending in .asc)."""
        body = base64.b64encode(self.packets).decode()
        lines = [body[i:i + 64] for i in range(0, len(body), 64)]
        checksum = base64.b64encode(_crc24(self.packets).to_bytes(3, "big")).decode()
        return "\n".join([_BEGIN, "", *lines, f"={checksum}", _END]) + "\n"


def read_public_key(path: Path) -> PublicKey:
    """The one public key in a file; KeyFileError says what is wrong and how to fix it (the file is read within
    limits: a FIFO or a device is refused at once, never read)."""
    try:
        data = read_regular(path, MAX_KEY_FILE_BYTES, KEY_FILE)
    except UnreadableFile as exc:
        raise KeyFileError(exc.message, hint=exc.hint) from None
    return parse_public_key(data, f"'{path}'")


def parse_public_key(data: bytes, name: str = "the key") -> PublicKey:
    """The one public key in armored or binary OpenPGP data."""
    packets = _dearmor(data, name) if data.lstrip()[:5] == b"-----" else data
    tags = list(_packets(packets, name))
    if not tags:
        raise KeyFileError(f"{name} holds no OpenPGP data", hint=_EXPORT_HINT)
    if any(tag in (_SECRET_KEY, _SECRET_SUBKEY) for tag, _ in tags):
        raise KeyFileError(f"{name} holds a secret key", hint="give the public key only (gpg --export, not "
                           "--export-secret-keys); the secret key never leaves the machine that signs")
    primaries = [body for tag, body in tags if tag == _PUBLIC_KEY]
    if tags[0][0] != _PUBLIC_KEY or len(primaries) != 1:
        raise KeyFileError(f"{name} holds {len(primaries)} public keys, not exactly one", hint=_ONE_KEY_HINT)
    return PublicKey(_v4_fingerprint(primaries[0], name), packets)


_ONE_KEY_HINT = ("export the repository's signing key alone (gpg --export KEYID), so that apt trusts that key and "
                 "no other for the repository")
_EXPORT_HINT = "give an OpenPGP public key file, armored or binary, as `gpg --export [--armor] KEYID` writes it"


def _dearmor(data: bytes, name: str) -> bytes:
    """The binary packets of an ASCII-armored public key block, its CRC-24 checked when present."""
    lines = [line.strip() for line in data.decode("ascii", "replace").splitlines()]
    lines = lines[next((i for i, line in enumerate(lines) if line), len(lines)):] or [""]
    if lines[0] != _BEGIN:
        what = "a secret key" if "PRIVATE KEY" in lines[0] else "not a public key block"
        raise KeyFileError(f"{name} is {what} ({lines[0][:60]!r})", hint=_EXPORT_HINT)
    try:
        end = lines.index(_END)
        body_start = lines.index("", 1) + 1  # the armor headers end at the first empty line
    except ValueError:
        raise KeyFileError(f"{name} is a cut or malformed armored key", hint=_EXPORT_HINT) from None
    if any(line.startswith("-----BEGIN") for line in lines[end:]):
        raise KeyFileError(f"{name} holds more than one armored block", hint=_ONE_KEY_HINT)
    body = [line for line in lines[body_start:end] if line]
    checksum = body.pop()[1:] if body and body[-1].startswith("=") else None
    try:
        packets = base64.b64decode("".join(body), validate=True)
        expected = base64.b64decode(checksum, validate=True) if checksum else None
    except binascii.Error:
        raise KeyFileError(f"{name} has text that is not base64 inside its armor", hint=_EXPORT_HINT) from None
    if expected is not None and expected != _crc24(packets).to_bytes(3, "big"):
        raise KeyFileError(f"{name} fails its armor checksum (the file was changed or cut)", hint=_EXPORT_HINT)
    return packets


def _packets(data: bytes, name: str):
    """(tag, body) of each packet; old and new packet formats, definite lengths only (keys have no other)."""
    offset = 0
    while offset < len(data):
        first = data[offset]
        if not first & 0x80:
            raise KeyFileError(f"{name} is not OpenPGP data (byte {offset} is no packet header)", hint=_EXPORT_HINT)
        if first & 0x40:
            tag, length, offset = first & 0x3F, *_new_length(data, offset + 1, name)
        else:
            tag, length, offset = (first >> 2) & 0x0F, *_old_length(data, offset + 1, first & 0x03, name)
        if offset + length > len(data):
            raise KeyFileError(f"{name} is cut short inside a packet", hint=_EXPORT_HINT)
        yield tag, data[offset:offset + length]
        offset += length


def _new_length(data: bytes, at: int, name: str) -> tuple[int, int]:
    """(body length, body offset) of a new-format packet header."""
    octets = data[at:at + 5]
    if not octets or (192 <= octets[0] < 224 and len(octets) < 2) or (octets[0] == 255 and len(octets) < 5):
        raise KeyFileError(f"{name} is cut short inside a packet header", hint=_EXPORT_HINT)
    if octets[0] < 192:
        return octets[0], at + 1
    if octets[0] < 224:
        return ((octets[0] - 192) << 8) + octets[1] + 192, at + 2
    if octets[0] == 255:
        return int.from_bytes(octets[1:5], "big"), at + 5
    raise KeyFileError(f"{name} has a partial-length packet, which no key has", hint=_EXPORT_HINT)


def _old_length(data: bytes, at: int, kind: int, name: str) -> tuple[int, int]:
    """(body length, body offset) of an old-format packet header."""
    if kind == 3:
        raise KeyFileError(f"{name} has a packet of indeterminate length, which no key has", hint=_EXPORT_HINT)
    size = (1, 2, 4)[kind]
    if at + size > len(data):
        raise KeyFileError(f"{name} is cut short inside a packet header", hint=_EXPORT_HINT)
    return int.from_bytes(data[at:at + size], "big"), at + size


def _v4_fingerprint(body: bytes, name: str) -> str:
    """SHA-1 over 0x99, the two-octet length and the public key packet (RFC 4880, 12.2)."""
    version = body[0] if body else 0
    if version != 4:
        raise KeyFileError(f"{name} is a version {version} OpenPGP key; Debian 12's apt (gpgv 2.2) verifies "
                           "version 4 keys only", hint="sign the repository with a version 4 key (gpg 2.2 makes them)")
    if len(body) > 0xFFFF:
        raise KeyFileError(f"{name} has a public key packet too long for a version 4 key", hint=_EXPORT_HINT)
    return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False).hexdigest().upper()


def _crc24(data: bytes) -> int:
    """The armor checksum (RFC 4880, 6.1)."""
    crc = _CRC24_INIT
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= _CRC24_POLY
    return crc & 0xFFFFFF
