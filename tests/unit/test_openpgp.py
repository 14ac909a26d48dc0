"""Reading a Slurm site repository's signing key: fingerprints of real keys (made by gpg), armor both ways, and
every way a key file is refused, table-driven (data, the message it must give)."""
from __future__ import annotations

import base64
from pathlib import Path

import pytest

from provision import openpgp

KEYS = Path(__file__).resolve().parents[1] / "fixtures" / "slurm_repository"
SITE = "53EF24C03C61808FECDFCA64274B4CB61408D2C1"  # as `gpg --show-keys` prints them (fixtures' README)
OTHER = "1D116EA2A3E2C02406F912CBB4D940D27E229B89"


@pytest.mark.parametrize("name, fingerprint", [("site-key.asc", SITE), ("site-key.gpg", SITE),
                                               ("other-key-rsa.asc", OTHER)])
def test_fingerprint_is_the_one_gpg_prints(name, fingerprint):
    assert openpgp.read_public_key(KEYS / name).fingerprint == fingerprint


def test_armored_and_binary_files_hold_the_same_packets():
    armored = openpgp.read_public_key(KEYS / "site-key.asc")
    assert armored.packets == (KEYS / "site-key.gpg").read_bytes()


def test_armor_round_trips_with_a_checksum_that_gpg_wrote_the_same_way():
    key = openpgp.read_public_key(KEYS / "site-key.gpg")
    text = key.armored()
    assert text.startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n") and text.endswith(
        "-----END PGP PUBLIC KEY BLOCK-----\n")
    assert openpgp.parse_public_key(text.encode()) == key
    # gpg's own armor of the key carries the same CRC-24 line
    checksum = next(line for line in text.splitlines() if line.startswith("="))
    assert checksum in (KEYS / "site-key.asc").read_text().splitlines()


def _armor(packets: bytes, header: str = "PUBLIC KEY BLOCK") -> bytes:
    body = base64.b64encode(packets).decode()
    return f"-----BEGIN PGP {header}-----\n\n{body}\n-----END PGP {header}-----\n".encode()


_SITE_BIN = (KEYS / "site-key.gpg").read_bytes()
_SITE_ASC = (KEYS / "site-key.asc").read_bytes()
_OTHER_BIN = openpgp.read_public_key(KEYS / "other-key-rsa.asc").packets


def _checksum_broken() -> bytes:
    """The fixture's armor with its CRC-24 line replaced by another valid one."""
    lines = _SITE_ASC.decode().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("="))
    lines[index] = "=AAAA" if lines[index] != "=AAAA" else "=BBBB"
    return ("\n".join(lines) + "\n").encode()


REFUSED = [
    ("empty", b"", "holds no OpenPGP data"),
    ("text", b"hello, world\n", "is not OpenPGP data (byte 0 is no packet header)"),
    ("two keys, binary", _SITE_BIN + _OTHER_BIN, "holds 2 public keys, not exactly one"),
    ("two armored blocks", _SITE_ASC + (KEYS / "other-key-rsa.asc").read_bytes(), "holds more than one armored block"),
    ("cut short", _SITE_BIN[:-7], "is cut short inside a packet"),
    ("secret key packet", bytes([0xC5, 3, 4, 0, 0]), "holds a secret key"),
    ("secret key armor", _armor(b"\xc5\x01\x04", "PRIVATE KEY BLOCK"),
     "is a secret key ('-----BEGIN PGP PRIVATE KEY BLOCK-----')"),
    ("a signature, not a key", _armor(b"\xc2\x01\x04", "SIGNATURE"),
     "is not a public key block ('-----BEGIN PGP SIGNATURE-----')"),
    ("user id without a key", bytes([0xCD, 3]) + b"abc", "holds 0 public keys, not exactly one"),
    ("version 6 key", bytes([0xC6, 10, 6]) + bytes(9), "is a version 6 OpenPGP key; Debian 12's apt (gpgv 2.2) "
     "verifies version 4 keys only"),
    ("partial length", bytes([0xC6, 0xE1]) + bytes(2), "has a partial-length packet, which no key has"),
    ("indeterminate length", bytes([0x9B]) + bytes(4), "has a packet of indeterminate length, which no key has"),
    ("wrong checksum", _checksum_broken(), "fails its armor checksum (the file was changed or cut)"),
    ("not base64", _SITE_ASC.replace(b"\n\n", b"\n\n!!!!\n", 1), "has text that is not base64 inside its armor"),
    ("no end line", _SITE_ASC.replace(b"-----END", b"-----FIN"), "is a cut or malformed armored key"),
]


@pytest.mark.parametrize("data, message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_unusable_key_data_is_refused_with_the_reason(data, message):
    with pytest.raises(openpgp.KeyFileError) as caught:
        openpgp.parse_public_key(data, "KEYFILE")
    assert caught.value.message == f"KEYFILE {message}"
    assert caught.value.hint  # every refusal says how to fix it


def test_missing_and_oversized_files_are_refused(tmp_path):
    with pytest.raises(openpgp.KeyFileError, match="absent.asc: no such file"):
        openpgp.read_public_key(tmp_path / "absent.asc")
    big = tmp_path / "big.asc"
    big.write_bytes(b"x" * (openpgp.MAX_KEY_FILE_BYTES + 1))
    with pytest.raises(openpgp.KeyFileError, match=f"a signing key is at most {openpgp.MAX_KEY_FILE_BYTES}"):
        openpgp.read_public_key(big)
