"""Reading a Slurm site repository's signing key through gpg: fingerprints of real keys (made by gpg), the armor
gpg exports, and every way a key file is refused, table-driven (data, the message it must give)."""
from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from provision import openpgp

KEYS = Path(__file__).resolve().parents[1] / "fixtures" / "slurm_repository"
SITE = "53EF24C03C61808FECDFCA64274B4CB61408D2C1"  # as `gpg --show-keys` prints them (fixtures' README)
OTHER = "1D116EA2A3E2C02406F912CBB4D940D27E229B89"


@pytest.fixture(autouse=True)
def _nothing_known():
    """Each test reads keys through gpg afresh (a key read by an earlier test would be answered from memory)."""
    openpgp.parse_public_key.cache_clear()


@pytest.mark.parametrize("name, fingerprint", [("site-key.asc", SITE), ("site-key.gpg", SITE),
                                               ("other-key-rsa.asc", OTHER)])
def test_fingerprint_is_the_one_gpg_prints(name, fingerprint):
    assert openpgp.read_public_key(KEYS / name).fingerprint == fingerprint


def test_armored_and_binary_files_give_the_same_armored_key():
    armored = openpgp.read_public_key(KEYS / "site-key.asc")
    assert armored == openpgp.read_public_key(KEYS / "site-key.gpg")


def test_the_armor_is_gpgs_own_with_its_checksum():
    key = openpgp.read_public_key(KEYS / "site-key.gpg")
    text = key.armored()
    assert text.startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----\n") and text.endswith(
        "-----END PGP PUBLIC KEY BLOCK-----\n")
    assert openpgp.parse_public_key(text.encode()) == key
    assert text == (KEYS / "site-key.asc").read_text()  # the fixture is gpg's armor of the same key


def test_a_key_read_again_is_not_read_by_gpg_again_and_a_refusal_is_never_remembered(monkeypatch):
    calls = []
    real = openpgp._gpg
    monkeypatch.setattr(openpgp, "_gpg", lambda home, args, data: calls.append(args) or real(home, args, data))
    data = (KEYS / "site-key.asc").read_bytes()
    first = openpgp.parse_public_key(data, "KEYFILE")
    assert len(calls) == 3  # list, import, export
    assert openpgp.parse_public_key(data, "KEYFILE") is first and len(calls) == 3
    assert openpgp.parse_public_key(data + b"\n", "KEYFILE").fingerprint == SITE and len(calls) == 6  # other bytes
    for _ in range(2):
        with pytest.raises(openpgp.KeyFileError, match="KEYFILE is not an OpenPGP key"):
            openpgp.parse_public_key(b"not a key", "KEYFILE")
    assert len(calls) == 8  # the refused data went to gpg both times


def _armor(packets: bytes, header: str = "PUBLIC KEY BLOCK") -> bytes:
    body = base64.b64encode(packets).decode()
    return f"-----BEGIN PGP {header}-----\n\n{body}\n-----END PGP {header}-----\n".encode()


_SITE_BIN = (KEYS / "site-key.gpg").read_bytes()
_SITE_ASC = (KEYS / "site-key.asc").read_bytes()
_OTHER_ASC = (KEYS / "other-key-rsa.asc").read_bytes()
UNREADABLE = "is not an OpenPGP key gpg can read (gpg: "

REFUSED = [
    ("empty", b"", "holds no OpenPGP data"),
    ("blank", b" \n\n", "holds no OpenPGP data"),
    ("text", b"hello, world\n", UNREADABLE),
    ("two armored keys", _SITE_ASC + _OTHER_ASC, "holds 2 public keys, not exactly one"),
    ("cut short", _SITE_BIN[:-7], UNREADABLE),
    ("secret key armor", _armor(b"\xc5\x01\x04", "PRIVATE KEY BLOCK"), "is a secret key (an armored private key block)"),
    ("a signature, not a key", _armor(b"\xc2\x01\x04", "SIGNATURE"), UNREADABLE),
    ("user id without a key", bytes([0xCD, 3]) + b"abc", "holds 0 public keys, not exactly one"),
    ("version 6 key", bytes([0xC6, 10, 6]) + bytes(9), UNREADABLE),
    ("not base64", _SITE_ASC.replace(b"\n\n", b"\n\n!!!!\n", 1), UNREADABLE),
]


@pytest.mark.parametrize("data, message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_unusable_key_data_is_refused_with_the_reason(data, message):
    with pytest.raises(openpgp.KeyFileError) as caught:
        openpgp.parse_public_key(data, "KEYFILE")
    assert caught.value.message.startswith(f"KEYFILE {message}"), caught.value.message
    assert caught.value.hint  # every refusal says how to fix it


@pytest.fixture
def secret_key(tmp_path) -> bytes:
    """A throw-away secret key made by gpg for this test (its agent ended after), exported armored."""
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""]
    try:
        subprocess.run([*gpg, "--quick-gen-key", "throwaway <test@invalid>", "ed25519", "sign", "never"],
                       check=True, capture_output=True, timeout=60)
        return subprocess.run([*gpg, "--export-secret-keys"], check=True, capture_output=True, timeout=60).stdout
    finally:
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True, check=False)


def test_a_binary_secret_key_is_refused(secret_key):
    with pytest.raises(openpgp.KeyFileError) as caught:
        openpgp.parse_public_key(secret_key, "KEYFILE")
    assert caught.value.message == "KEYFILE holds a secret key" and "--export-secret-keys" in caught.value.hint


# gpg's colon listing, as `gpg --with-colons --show-keys` printed it (trimmed to the fields we read): a key with a
# subkey (the subkey's fingerprint is not the key's), and a version 5 key's 64-digit fingerprint.
LISTING = """\
pub:-:255:22:274B4CB61408D2C1:1732700000:::-:::scSC::::::23::0:
fpr:::::::::53EF24C03C61808FECDFCA64274B4CB61408D2C1:
uid:-::::1732700000::ABCD::site (gpu-provision test, throwaway) <test@invalid>::::::::::0:
sub:-:255:18:1111111111111111:1732700000::::::e::::::23:
fpr:::::::::AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:
pub:-:255:22:2222222222222222:1732700000:::-:::scSC::::::23::0:
fpr:::::::::%s:
""" % ("ab" * 32)


def test_the_colon_listing_names_primary_keys_only():
    listing = openpgp.parse_colons(LISTING)
    assert listing.public == ["53EF24C03C61808FECDFCA64274B4CB61408D2C1", "AB" * 32] and listing.secret == 0
    assert openpgp.parse_colons("sec:u:255:22:X:1:::u:::scSC:::+:::23::0:\nfpr:::::::::" + "C" * 40 + ":\n").secret == 1


def test_a_key_that_is_not_version_4_is_refused_before_apt_sees_it(monkeypatch):
    monkeypatch.setattr(openpgp, "_show", lambda data, name, home: openpgp.parse_colons(
        "pub:-:255:22:X:1:::-:::scSC::::::23::0:\nfpr:::::::::" + "D" * 64 + ":\n"))
    with pytest.raises(openpgp.KeyFileError, match="KEYFILE is not a version 4 OpenPGP key .*64 digits.*gpgv 2.2"):
        openpgp.parse_public_key(_SITE_BIN, "KEYFILE")


def test_without_gpg_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(openpgp.shutil, "which", lambda name: None)
    with pytest.raises(openpgp.KeyFileError, match="gpg is not installed") as caught:
        openpgp.parse_public_key(_SITE_BIN, "KEYFILE")
    assert "apt-get install gpg" in caught.value.hint


def test_missing_and_oversized_files_are_refused(tmp_path):
    with pytest.raises(openpgp.KeyFileError, match="absent.asc: no such file"):
        openpgp.read_public_key(tmp_path / "absent.asc")
    big = tmp_path / "big.asc"
    big.write_bytes(b"x" * (openpgp.MAX_KEY_FILE_BYTES + 1))
    with pytest.raises(openpgp.KeyFileError, match=f"a signing key is at most {openpgp.MAX_KEY_FILE_BYTES}"):
        openpgp.read_public_key(big)
