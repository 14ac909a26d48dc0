"""The shape of every string a spec may hold: user names, host names, paths, URLs, identifiers.

A spec is data that others write and share. Every string field is checked here, at `validate`, against the
narrowest shape that serves its purpose (ASCII only, no control characters, no shell or template syntax where
the value will reach a command line or a file), so a value either fails with a finding or passes through as data.
"""
from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from ipaddress import IPv4Address
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from provision import hostlist
from provision.files import path_problem
from provision.limits import MAX_NODES_PER_GROUP, clip

_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DNS_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_NUMERIC_NAME = re.compile(r"[0-9.]+")
_PATH_CHARS = re.compile(r"[A-Za-z0-9._/+@,=-]+")
_HOME = re.compile(r"~(?:[a-z_][a-z0-9_-]{0,31})?")
_MOUNT_CHARS = re.compile(r"/[A-Za-z0-9._/-]*")
_REMOTE_PATH = re.compile(r"[A-Za-z0-9._/@:,=+-]{1,1024}")
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?#@&+,=%-]+")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_TOKEN = re.compile(r"[A-Za-z0-9._:/-]{1,255}")
_ADDRESS = re.compile(r"[0-9A-Fa-f.:]{1,45}")
_BRIDGE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_AMI_NAME = re.compile(r"[A-Za-z0-9()\[\]./'@_ *?-]{1,128}")
_AMI_OWNER = re.compile(r"[0-9]{12}|self|amazon|aws-marketplace|aws-backup-vault")
_SSM_PARAMETER = re.compile(r"[A-Za-z0-9_./-]{1,2048}")
_KEY_PAIR = re.compile(r"[A-Za-z0-9 ._:/()#,@+=-]{1,255}")
_URL_SCHEMES = ("http", "https")
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]{1,99}")
_DEBIAN_VERSION = re.compile(r"(?:[0-9]{1,9}:)?[0-9][A-Za-z0-9.+~-]{0,126}")
_APT_SUITE = re.compile(r"[A-Za-z0-9._/-]{1,100}")
_APT_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
_FINGERPRINT = re.compile(r"[0-9A-F]{40}")
_NCCL_VERSION = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}")  # ASCII digits: compat.version_tuple int()s them


def shape_error(message: str, fix: str) -> PydanticCustomError:
    """A structure error whose message and fix the spec loader shows as they are (never formatted again)."""
    return PydanticCustomError("shape", "{message}", {"message": message, "fix": fix})


def _matching(pattern: re.Pattern, message: str, fix: str) -> Callable[[str], str]:
    """A validator that accepts a string only if the whole of it matches the pattern."""
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise shape_error(message, fix)
        return value
    return check


def user_name(value: str) -> str:
    """A POSIX user name (the portable set useradd accepts), so it is safe in ssh options and commands."""
    return _matching(_USER, "is not a user name (lower-case letters, digits, '_' and '-', starting with a letter "
                     "or '_', at most 32 characters)", "write the login name, such as ubuntu or root")(value)


def host_name(value: str) -> str:
    """A DNS name (letters, digits, '-', dot-separated labels of at most 63) or an IPv4 address."""
    if len(value) > 253 or not _DNS_NAME.fullmatch(value):
        raise shape_error("is not a host name or IPv4 address (letters, digits, '-' and '.', labels of at most 63 "
                          "characters)", "write a name such as nas01.example.com or an address such as 10.0.0.5")
    if _NUMERIC_NAME.fullmatch(value):
        try:
            IPv4Address(value)
        except ValueError:
            raise shape_error("is not an IPv4 address", "write a dotted quad such as 10.0.0.5") from None
    return value


def _no_parent_steps(value: str) -> None:
    """Refuse '..' path components: a path is judged as written, never after a walk upwards."""
    if ".." in value.split("/"):
        raise shape_error("contains '..'", "write the path without '..' components")


def local_path(value: object) -> object:
    """A path on this machine (key file, state directory): safe characters only, '~' or '~user' only in front."""
    if not isinstance(value, str):
        return value  # pydantic's Path type reports the wrong type
    home, rest = _split_home(value)
    if not value or (rest and not _PATH_CHARS.fullmatch(rest)):
        raise shape_error("is not a usable path (letters, digits and . _ / + @ , = - only, '~' only in front)",
                          "choose a path without spaces, quotes, '$', '%' or control characters")
    _no_parent_steps(rest)
    if home:
        _check_home(home)
    _fits_the_filesystem(value)
    return value


def _fits_the_filesystem(value: str) -> None:
    """A name over 255 bytes or a path over 4095 (as written, and with '~' expanded) is refused here, not by a
    system call later."""
    expanded = os.path.expanduser(value)
    problem = path_problem(value) or path_problem(expanded)
    if problem:
        shown = "" if expanded == value else f"(that is {clip(expanded, 40)}) "
        raise shape_error(f"{shown}{problem}", "choose a shorter path")


def _split_home(value: str) -> tuple[str, str]:
    """('~user', '/rest') for a path that starts with a home directory, else ('', value)."""
    if not value.startswith("~"):
        return "", value
    head, slash, tail = value.partition("/")
    if not _HOME.fullmatch(head):
        raise shape_error("starts with '~' but not with a user's home (~ or ~name)", "write ~/path or an absolute path")
    return head, slash + tail


def _check_home(home: str) -> None:
    """The home directory of '~' or '~user' must be known on this machine."""
    try:
        Path(home).expanduser()
    except RuntimeError:
        raise shape_error(f"names the home of {home[1:] or 'the current user'}, which this machine does not know",
                          "write an absolute path") from None


def mount_point(value: str) -> str:
    """An absolute path with safe characters (fstab and systemd take it as is); judged normalised by the validators."""
    if not _MOUNT_CHARS.fullmatch(value):
        raise shape_error("is not an absolute path of letters, digits and . _ / - (no spaces or control characters)",
                          "use a path such as /shared")
    _fits_the_filesystem(value)
    return value


def normal_path(value: str) -> str:
    """The path as the kernel resolves it lexically: '/shared/../etc' -> '/etc', '/shared/' -> '/shared', and
    '//etc' -> '/etc' (POSIX lets a path keep two leading slashes; Linux reads them as one)."""
    if not value:
        return value
    normal = posixpath.normpath(value)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def remote_path(value: str) -> str:
    """A Lustre mount name or an NFS export: safe characters, no '..'."""
    if not _REMOTE_PATH.fullmatch(value):
        raise shape_error("is not a mount name or export path (letters, digits and . _ / @ : , = + -)",
                          "write e.g. scratch (Lustre) or /export/home (NFS)")
    _no_parent_steps(value)
    return value


def url(value: str) -> str:
    """An http(s) URL with a host and no spaces, quotes or shell characters; '' means the default location."""
    if value == "":
        return value
    fix = "write a URL such as http://mirror.example.internal/debian"
    if not _URL_CHARS.fullmatch(value) or _PERCENT.search(value):
        raise shape_error("is not a URL (no spaces, quotes, '$', ';', '`', braces or control characters; '%' only "
                          "as %XX)", fix)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise shape_error("is not a URL", fix) from None
    if parts.scheme not in _URL_SCHEMES or not parts.hostname:
        raise shape_error(f"is not an {' or '.join(_URL_SCHEMES)} URL with a host", fix)
    host_name(parts.hostname)
    return value


def hostlist_expression(value: str) -> str:
    """A Slurm hostlist that parses and stands for at most MAX_NODES_PER_GROUP names (sized, never expanded)."""
    try:
        size = hostlist.count(value)
    except hostlist.HostlistError as exc:
        raise shape_error(str(exc), "write names such as gpu[01-16] or node1,node2") from None
    if size > MAX_NODES_PER_GROUP:
        raise shape_error(f"stands for {size} names; a node group has at most {MAX_NODES_PER_GROUP}",
                          "split the nodes over several groups")
    return value


UserName = Annotated[str, AfterValidator(user_name)]
HostName = Annotated[str, AfterValidator(host_name)]
LocalPath = Annotated[Path, BeforeValidator(local_path)]
MountPoint = Annotated[str, AfterValidator(mount_point)]
RemotePath = Annotated[str, AfterValidator(remote_path)]
Url = Annotated[str, AfterValidator(url)]
Hostlist = Annotated[str, AfterValidator(hostlist_expression)]
_address = _matching(_ADDRESS, "is not an IP address", "write e.g. 10.0.0.12")


def addresses(value: str | list[str]) -> str | list[str]:
    """An address expression (a hostlist such as 10.0.0.[11-26]) or a list of at most one address per node."""
    if isinstance(value, str):
        return hostlist_expression(value)
    if len(value) > MAX_NODES_PER_GROUP:
        raise shape_error(f"lists {len(value)} addresses; a node group has at most {MAX_NODES_PER_GROUP}",
                          "split the nodes over several groups")
    for item in value:
        try:
            _address(item)
        except PydanticCustomError:
            raise shape_error(f"holds {clip(item)}, which is not an IP address", "write e.g. 10.0.0.12") from None
    return value


Addresses = Annotated[str | list[str], AfterValidator(addresses)]


def fingerprint(value: object) -> object:
    """An OpenPGP v4 fingerprint: 40 hex digits, as gpg prints them (groups of four may be separated by spaces)."""
    if not isinstance(value, str):
        return value
    compact = value.replace(" ", "").upper()
    if not _FINGERPRINT.fullmatch(compact):
        raise shape_error("is not an OpenPGP fingerprint (40 hex digits)",
                          "write the key's fingerprint as `gpg --show-keys KEYFILE` prints it")
    return compact


def apt_suite(value: str) -> str:
    """A suite (bookworm, stable) or a flat repository's path ending in '/' (./, /); no '..', no spaces."""
    if not _APT_SUITE.fullmatch(value) or ".." in value.split("/"):
        raise shape_error("is not an APT suite (letters, digits and . _ / -, no '..')",
                          "write a suite such as bookworm, or ./ for a flat repository")
    return value


Fingerprint = Annotated[str, BeforeValidator(fingerprint)]
AptSuite = Annotated[str, AfterValidator(apt_suite)]
PackageName = Annotated[str, AfterValidator(_matching(
    _PACKAGE, "is not a Debian package name (lower-case letters, digits and + . -, starting with a letter or "
    "digit, 2 to 100 characters)", "write e.g. slurmd or slurm-smd-slurmd"))]
DebianVersion = Annotated[str, AfterValidator(_matching(
    _DEBIAN_VERSION, "is not a Debian package version ([EPOCH:]UPSTREAM[-REVISION], starting with a digit; "
    "letters, digits and . + ~ -)", "write the version as `apt-cache policy` shows it, e.g. 24.11.5-1"))]
NcclVersion = Annotated[str, AfterValidator(_matching(
    _NCCL_VERSION, "is not an NCCL version (MAJOR.MINOR.PATCH in ASCII digits)", "write e.g. 2.26.2"))]
AptComponent = Annotated[str, AfterValidator(_matching(
    _APT_COMPONENT, "is not an APT component (letters, digits and . _ / -)", "write e.g. main"))]
Token = Annotated[str, AfterValidator(_matching(
    _TOKEN, "is not a name or version (letters, digits and . _ : / -, at most 255 characters)",
    "see the spec reference in the README for this field"))]
BridgeName = Annotated[str, AfterValidator(_matching(
    _BRIDGE, "is not a network interface name (letters, digits and _ . -, at most 15 characters)",
    "write e.g. gpbr-demo, or omit it"))]
AmiNameFilter = Annotated[str, AfterValidator(_matching(
    _AMI_NAME, "is not an image name filter (letters, digits, spaces and ( ) [ ] . / ' @ _ - with * and ? "
    "wildcards, at most 128 characters)", "write e.g. ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*"))]
AmiOwner = Annotated[str, AfterValidator(_matching(
    _AMI_OWNER, "is not an image owner", "write a 12-digit account id, amazon, aws-marketplace or self"))]
SsmParameter = Annotated[str, AfterValidator(_matching(
    _SSM_PARAMETER, "is not a parameter path (letters, digits and _ . / -)",
    "write e.g. /aws/service/debian/release/12/latest/amd64"))]
KeyPairName = Annotated[str, AfterValidator(_matching(
    _KEY_PAIR, "is not a key pair name (letters, digits, spaces and . _ : / ( ) # , @ + = -)",
    "write the key pair's name as the EC2 console shows it"))]
