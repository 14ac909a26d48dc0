"""The people of a cluster: `users:` (POSIX accounts with fixed ids and SSH keys), `homes:`, `accounting:` (Slurm
accounts, QoS, enforcement and the associations of directory users) and `directory:` (an LDAP server every node
resolves people from, through SSSD).

Every string here reaches a node as data (the inventory tags it !unsafe, the roles pass it as module arguments or as
argument lists), and is also held to the narrowest shape that serves it: a user name as useradd takes it, a Slurm
name as sacctmgr stores it (it lower-cases names), a key as OpenSSH reads one (parsed by cryptography, not by us).
Checks across entries (collisions, unknown accounts) are in provision/spec/people_checks.py.
"""
from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.serialization import load_ssh_public_key
from pydantic import AfterValidator, BeforeValidator, Field, StrictBool

from provision.spec.section import StrictModel
from provision.spec.shapes import LocalPath, MountPoint, UserName, shape_error

MAX_USERS = 4096
UID_MAX = 2**31 - 2  # useradd's ceiling (2^31-1 is refused by some tools, 2^32-1 is (uid_t)-1)

_KEY_LINE = re.compile(r"([a-z0-9@.-]{1,64}) ([A-Za-z0-9+/]{16,16384}={0,2})(?: ([\x21-\x7e][\x20-\x7e]{0,255}))?")
_SHELL = re.compile(r"/[a-z0-9_.+/-]{1,127}")
_SLURM_NAME = re.compile(r"[a-z0-9_][a-z0-9_.-]{0,62}")
_TRES = re.compile(r"(?:cpu|mem|node|energy|billing|pages|vmem)|(?:gres|license|fs|ic|bb)/[a-z0-9_.:-]{1,64}")
_SLURM_TIME = re.compile(r"(?:(?P<days>[0-9]{1,4})-(?P<dh>[0-9]{1,2})(?::(?P<dm>[0-9]{1,2})(?::(?P<ds>[0-9]{1,2}))?)?"
                         r"|(?P<a>[0-9]{1,7})(?::(?P<b>[0-9]{1,2})(?::(?P<c>[0-9]{1,2}))?)?)")
_DN = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}=[A-Za-z0-9 ._@-]{1,128}(?:,[A-Za-z][A-Za-z0-9-]{0,63}=[A-Za-z0-9 ._@-]"
                 r"{1,128}){0,15}")
_LDAP_URI = re.compile(r"(ldaps?)://([A-Za-z0-9.-]{1,253})(?::([0-9]{1,5}))?/?")
KNOWN_SHELLS = ("/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh", "/usr/bin/fish", "/bin/dash",
                "/usr/bin/tcsh", "/bin/tcsh", "/usr/sbin/nologin", "/bin/false")


def ssh_public_key(value: str) -> str:
    """One OpenSSH public key line, `TYPE BASE64 [COMMENT]`: the blob must decode and name the same TYPE
    (cryptography's load_ssh_public_key parses it). Options before the type (`from=...`) are refused: they would be
    code for sshd. Returns the line with its comment, spaces normalised."""
    text = " ".join(value.split(" ")).strip()
    fix = "paste the one line of the .pub file, e.g. ssh-ed25519 AAAAC3Nza... alice@laptop"
    match = _KEY_LINE.fullmatch(text.strip())
    if match is None:
        raise shape_error("is not an OpenSSH public key line (TYPE BASE64 [COMMENT]; no options, quotes or control "
                          "characters)", fix)
    try:
        load_ssh_public_key(f"{match[1]} {match[2]}".encode())
    except UnsupportedAlgorithm:
        raise shape_error(f"is a {match[1]} key, a type this tool cannot read",
                          "use an ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa key") from None
    except ValueError:
        raise shape_error(f"does not hold a {match[1]} key (the base64 blob does not decode to one of that "
                          "type)", fix) from None
    return text


def shell(value: str) -> str:
    """An absolute path of safe characters without '..' (whether the node has it is the role's concern)."""
    if not _SHELL.fullmatch(value) or ".." in value.split("/"):
        raise shape_error("is not a shell's absolute path (lower-case letters, digits and _ . + / -)",
                          f"write one of {', '.join(KNOWN_SHELLS[:3])}")
    return value


def slurm_name(value: str) -> str:
    """An account or QoS name as sacctmgr stores it: lower case (it lowers them itself), no space, comma, quote or '='."""
    if not _SLURM_NAME.fullmatch(value):
        fix = f"write {value.lower()}" if _SLURM_NAME.fullmatch(value.lower()) else "write e.g. physics or gpu-long"
        raise shape_error("is not a Slurm account or QoS name (lower-case letters, digits and _ . -, at most 63 "
                          "characters, no spaces)", fix)
    return value


def tres_name(value: str) -> str:
    """A trackable resource as sacctmgr writes it: cpu, mem, node, billing, energy, or TYPE/NAME such as gres/gpu."""
    if not _TRES.fullmatch(value):
        raise shape_error("is not a Slurm TRES name", "write e.g. cpu, mem (in MB), node or gres/gpu")
    return value


def slurm_minutes(value: object) -> object:
    """A Slurm time limit in whole minutes: a number of minutes, or MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
    (seconds round up, as Slurm rounds them). Refuses what Slurm would read as 'unlimited'."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        return value
    match = _SLURM_TIME.fullmatch(text)
    if match is None:
        raise shape_error("is not a Slurm time (minutes, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)",
                          "write e.g. 60, 12:00:00 or 2-00:00:00; leave max_wall out for no limit")
    if match["days"] is not None:
        days, hours, minutes, seconds = (int(match[g] or 0) for g in ("days", "dh", "dm", "ds"))
    elif match["c"] is not None:
        days, hours, minutes, seconds = 0, int(match["a"]), int(match["b"]), int(match["c"])
    else:
        days, hours, minutes, seconds = 0, 0, int(match["a"]), int(match["b"] or 0)
    total = days * 1440 + hours * 60 + minutes + (1 if seconds else 0)
    if total == 0:
        raise shape_error("is no time at all", "write a positive limit, or leave max_wall out for no limit")
    return total


def distinguished_name(value: str) -> str:
    """An LDAP DN of simple RDNs (attr=value, comma-separated; letters, digits, spaces and . _ @ - in values)."""
    if not _DN.fullmatch(value):
        raise shape_error("is not a distinguished name of the form attr=value,attr=value",
                          "write e.g. dc=example,dc=org or cn=reader,ou=services,dc=example,dc=org")
    return value


def ldap_uri(value: str) -> str:
    """ldap://HOST[:PORT] or ldaps://HOST[:PORT]."""
    match = _LDAP_URI.fullmatch(value)
    if match is None or (match[3] and not 0 < int(match[3]) < 65536):
        raise shape_error("is not an LDAP URI (ldap://HOST[:PORT] or ldaps://HOST[:PORT])",
                          "write e.g. ldaps://ldap.example.org")
    return value


SshPublicKey = Annotated[str, AfterValidator(ssh_public_key)]
Shell = Annotated[str, AfterValidator(shell)]
SlurmName = Annotated[str, AfterValidator(slurm_name)]
TresName = Annotated[str, AfterValidator(tres_name)]
SlurmMinutes = Annotated[int, BeforeValidator(slurm_minutes, json_schema_input_type=Union[int, str])]
DistinguishedName = Annotated[str, AfterValidator(distinguished_name)]
LdapUri = Annotated[str, AfterValidator(ldap_uri)]
_Id = Annotated[int, Field(ge=0, le=UID_MAX)]


class CertifyUser(StrictModel):
    """The user certify runs its user-shaped jobs as: made on every node like the people of `users:` (a home where
    theirs are), with no password, no key and no login shell, and (with Slurm's accounting) an account and a QoS of
    its own named like it."""

    name: UserName = "gp-certify"
    uid: _Id = Field(59990, description="its uid and gid, the same on every node")


class User(StrictModel):
    """A person: the same POSIX account (uid, gid, groups, shell, keys) on every node, and Slurm associations."""

    name: UserName
    uid: _Id
    gid: _Id | None = Field(None, description="the user's own group's GID; default: the uid")
    groups: list[UserName] = Field(default_factory=list, max_length=64,
                                   description="supplementary groups: another user's name, or a group every node has")
    ssh_public_keys: list[SshPublicKey] = Field(default_factory=list, max_length=32)
    shell: Shell = "/bin/bash"
    accounts: list[SlurmName] = Field(default_factory=list, max_length=64,
                                      description="Slurm accounts of accounting.accounts; the first is the default")

    @property
    def group_id(self) -> int:
        """The GID of the user's own group."""
        return self.uid if self.gid is None else self.gid


class Homes(StrictModel):
    """Where users' homes are: <base>/<name>. Default base: <filesystem.mount_point>/home with a shared filesystem
    (created once, there), else /home (created on every node)."""

    base: MountPoint | None = None


class Account(StrictModel):
    """A Slurm account: its place in the tree, its fair share, its limits and the QoS its users may ask for."""

    name: SlurmName
    parent: SlurmName = "root"
    fairshare: int = Field(1, ge=1, le=2**31 - 1)
    max_jobs: int | None = Field(None, ge=0, le=2**31 - 1, description="running jobs of the whole account at once")
    grp_tres: dict[TresName, Annotated[int, Field(ge=0, le=2**53)]] = Field(
        default_factory=dict, max_length=32, description="e.g. {cpu: 64, gres/gpu: 8}: the account's total at once")
    qos: list[SlurmName] = Field(default_factory=list, max_length=32,
                                 description="the QoS its users may use, the first their default; default: normal")


class Qos(StrictModel):
    """A Slurm QoS (the built-in `normal` may be listed to change it)."""

    name: SlurmName
    priority: int = Field(0, ge=0, le=2**31 - 1)
    max_jobs_per_user: int | None = Field(None, ge=0, le=2**31 - 1)
    max_wall: SlurmMinutes | None = Field(None, description="Slurm time: minutes, HH:MM:SS or D-HH:MM:SS")


class DirectoryUser(StrictModel):
    """A person of the directory (not in `users:`) and their Slurm accounts: their account lives in LDAP, their
    associations in Slurm, made from here as a listed user's are."""

    name: UserName
    accounts: list[SlurmName] = Field(min_length=1, max_length=64,
                                      description="Slurm accounts of accounting.accounts; the first is the default")


class Accounting(StrictModel):
    """Slurm accounts, QoS and whether Slurm enforces them (AccountingStorageEnforce=associations,limits,qos)."""

    accounts: list[Account] = Field(default_factory=list, max_length=1024)
    qos: list[Qos] = Field(default_factory=list, max_length=256)
    enforce: StrictBool = True
    users: list[DirectoryUser] = Field(default_factory=list, max_length=MAX_USERS,
                                       description="Slurm associations of people of the directory (not in users:)")


class Directory(StrictModel):
    """An existing LDAP server every node resolves users and groups from (role sssd), after the local files."""

    type: Literal["ldap"]
    uri: LdapUri
    base_dn: DistinguishedName
    ca_file: LocalPath = Field(description="the CA certificate (PEM) of the server, on this machine")
    bind_dn: DistinguishedName | None = None
    bind_password_file: LocalPath | None = Field(None, description="a file on this machine holding the password")
