"""What the sandbox puts into the shared base image, the node image, and each node's own upper layer."""
from __future__ import annotations

import os
import secrets
import shutil
import stat
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from provision.providers.sandbox import commands
from provision.providers.sandbox.debootstrap import SUITE
from provision.providers.sandbox.mirror import Mirrors
from provision.providers.sandbox.packages import NodePackages

if TYPE_CHECKING:
    from provision.records import Progress

INIT_PATH = "usr/local/sbin/sandbox-init"
HOST_KEY = "etc/ssh/ssh_host_ed25519_key"
PROXY_CONF = "etc/apt/apt.conf.d/01sandbox-proxy"

SSHD_CONF = """\
# gpu-provision sandbox: one host key per node (generated on the host), keys only.
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
"""


def packaged(name: str) -> bytes:
    """A file shipped in provision/providers/sandbox/files/."""
    return (resources.files("provision.providers.sandbox") / "files" / name).read_bytes()


def apt_sources(mirrors: Mirrors, suite: str = SUITE) -> str:
    """deb822 sources for nodes: the same mirror as this machine, plus its security archive if it has one."""
    components = " ".join(mirrors.components)
    text = (f"Types: deb\nURIs: {mirrors.archive}\nSuites: {suite} {suite}-updates\nComponents: {components}\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    if mirrors.security:
        text += (f"\nTypes: deb\nURIs: {mirrors.security}\nSuites: {suite}-security\nComponents: {components}\n"
                 "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    return text


def customize_base(root: Path, mirrors: Mirrors, systemctl: bytes, suite: str = SUITE) -> None:
    """Turn a fresh debootstrap tree into the node base: shims, init, apt sources; no host identity left."""
    commands.run(["chroot", str(root), "apt-get", "clean"])
    _empty_dir(root / "var/lib/apt/lists", keep=("partial", "lock"))
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # debootstrap made one set for all; every node gets its own
    for name in ("etc/hostname", "etc/apt/sources.list", "etc/systemd/system/multi-user.target.wants/"
                 "e2scrub_reap.service"):
        (root / name).unlink(missing_ok=True)
    _write(root / "etc/resolv.conf", "")  # debootstrap copied this machine's; nodes use no DNS
    _write(root / "etc/machine-id", "")
    _write(root / "etc/apt/sources.list.d/debian.sources", apt_sources(mirrors, suite))
    _write(root / "etc/ssh/sshd_config.d/sandbox.conf", SSHD_CONF)
    for tool in ("/usr/bin/systemctl", "/usr/bin/hostnamectl"):
        # Diverted, so a package that pulls in systemd later cannot replace the shims.
        commands.run(["chroot", str(root), "dpkg-divert", "--local", "--rename", "--add", tool])
    _write(root / "usr/bin/systemctl", systemctl, 0o755)


# Runs inside the image being built (chroot, own mount and PID namespaces): the service accounts first, with the
# common role's fixed IDs, then the packages as the roles install them, no daemon started (policy-rc.d).
# $1: accounts, one "name uid home" per line; $2, $3: packages with and without apt's recommends.
INSTALL_SCRIPT = r"""set -e
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
printf '%s\n' "$1" | while read -r name uid home; do
    [ -n "$name" ] || continue
    getent group "$name" >/dev/null || groupadd --system --gid "$uid" "$name"
    getent passwd "$name" >/dev/null || useradd --system --uid "$uid" --gid "$name" --home-dir "$home" \
        --no-create-home --shell /usr/sbin/nologin "$name"
done
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod 755 /usr/sbin/policy-rc.d
apt-get update -q
[ -z "$2" ] || apt-get install -y -q $2
[ -z "$3" ] || apt-get install -y -q --no-install-recommends $3
rm -f /usr/sbin/policy-rc.d
apt-get clean
# The systemctl shim is a 7,000-line script, compiled again on every call: imported as a module instead, its bytecode
# is cached (a third of the CPU per call; every service start, probe and boot calls it).
if ! grep -q gpu-provision-sandbox /usr/bin/systemctl; then
    mkdir -p /usr/lib/gpu-provision-sandbox
    mv /usr/bin/systemctl /usr/lib/gpu-provision-sandbox/systemctl3.py
    printf '%s\n' '#!/usr/bin/python3' '# systemctl on sandbox nodes: docker-systemctl-replacement, imported (gpu-provision-sandbox)' \
        'import sys' 'sys.path.insert(0, "/usr/lib/gpu-provision-sandbox")' 'from systemctl3 import main' \
        'sys.exit(main())' >/usr/bin/systemctl
    chmod 755 /usr/bin/systemctl
fi
python3 -m py_compile /usr/lib/gpu-provision-sandbox/systemctl3.py
"""
# Mounts that exist only in the build's own mount namespace: this machine's /dev and its DNS configuration.
CHROOT = ('root=$1; resolv=$2; shift 2; mount --rbind /dev "$root/dev" && '
          'mount --bind "$resolv" "$root/etc/resolv.conf" && exec chroot "$root" /bin/sh -c "$@"')


def install_packages(root: Path, packages: NodePackages, progress: Progress) -> list[str]:
    """Install the packages into an unpacked base from this machine's mirror (as debootstrap does), keep the
    package lists, and disable every unit they enabled (the roles enable what each node runs); what was disabled."""
    before = _enabled_links(root)
    accounts = "\n".join(f"{name} {uid} {home}" for name, uid, home in packages.accounts)
    progress("node image: installing the packages in the image")
    commands.run(["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root / 'proc'}", "sh", "-c", CHROOT,
                  "sh", str(root), str(Path("/etc/resolv.conf").resolve()), INSTALL_SCRIPT, "install", accounts,
                  " ".join(packages.with_recommends), " ".join(packages.without_recommends)], timeout=3600)
    added = sorted(_enabled_links(root) - before)
    for link in added:
        link.unlink()
    return [str(link.relative_to(root)) for link in added]


def _enabled_links(root: Path) -> set[Path]:
    """What starts a unit at boot: systemd's *.wants links and SysV start links."""
    return set((root / "etc/systemd/system").glob("*.wants/*")) | set((root / "etc").glob("rc[2-5S].d/S*"))


def _empty_dir(path: Path, keep: tuple[str, ...]) -> None:
    """Remove a directory's contents except the named entries."""
    for entry in path.iterdir() if path.is_dir() else []:
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _write(path: Path, content: str | bytes, mode: int = 0o644) -> None:
    """Write a file with a mode, creating parent directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode() if isinstance(content, str) else content
    path.write_bytes(data)
    os.chmod(path, mode)


def prepare_node(upper: Path, lower: Path, name: str, address: str, authorized_key: str, proxy_url: str) -> str:
    """Write the node's identity into its (unmounted) upper layer; return its SSH host public key.

    Files a node may change later (hosts, hostname) are written on first boot only, so a restart
    keeps what the roles configured; the access key, the apt proxy, the init and the hostnamectl shim
    are always put back (so a newer gpu-provision updates them without rebuilding the base)."""
    put = _UpperWriter(upper, lower)
    put.file(INIT_PATH, packaged("init.sh"), 0o755)
    put.file("usr/bin/hostnamectl", packaged("hostnamectl"), 0o755)
    put.once("etc/hostname", f"{name}\n")
    put.once("etc/hosts", f"127.0.0.1\tlocalhost\n{address}\t{name}\n::1\tlocalhost ip6-localhost ip6-loopback\n")
    put.once("etc/machine-id", secrets.token_hex(16) + "\n", 0o444)
    keys = upper / "root/.ssh/authorized_keys"
    if not keys.is_file() or authorized_key not in keys.read_text():
        put.file("root/.ssh/authorized_keys", f"{authorized_key}\n", 0o600, dir_mode=0o700)
    # No HTTP pipelining through apt-cacher-ng: with 16 nodes updating at once an apt http method was seen
    # hanging for good on a connection the proxy had closed. A timeout and retries bound what is left.
    put.file(PROXY_CONF, f'Acquire::http::Proxy "{proxy_url}";\nAcquire::http::Pipeline-Depth "0";\n'
                         'Acquire::http::Timeout "60";\nAcquire::Retries "3";\n')
    for rel, text in notify_unit_dropins(lower).items():
        put.file(rel, text)
    if not (upper / f"{HOST_KEY}.pub").is_file():
        private, public = _host_key(name)
        put.file(HOST_KEY, private, 0o600)
        put.file(f"{HOST_KEY}.pub", public, 0o644)
    return " ".join((upper / f"{HOST_KEY}.pub").read_text().split()[:2])


# Slurm 24.11's units are Type=notify (`--systemd`, no pid file). The sandbox's systemctl shim tracks such a daemon
# only by the PID it forked and recorded; once that record is lost (a start that timed out under load, a run killed
# mid-restart) a restart leaves the old daemon running and a second one dies on the taken port, for good. Sandbox
# nodes therefore run these daemons the classic way, daemonized with their pid file, which the shim reads on every
# stop (the roles write these paths into slurm.conf for 24.05 and later). Real hosts keep the packages' units.
NOTIFY_UNITS = {"slurmctld": ("/run/slurmctld/slurmctld.pid", "SLURMCTLD_OPTIONS"),
                "slurmd": ("/run/slurm/slurmd.pid", "SLURMD_OPTIONS")}
UNIT_DIRS = ("usr/lib/systemd/system", "lib/systemd/system")


def notify_unit_dropins(lower: Path) -> dict[str, str]:
    """Drop-ins (path relative to the root -> text) that turn the lower layer's Type=notify Slurm units into
    forking ones with a pid file; none where the units are not Type=notify (Debian 12's Slurm 22.05)."""
    dropins = {}
    for unit, (pid_file, options) in NOTIFY_UNITS.items():
        found = next((lower / d / f"{unit}.service" for d in UNIT_DIRS if (lower / d / f"{unit}.service").is_file()),
                     None)
        if found is None or "Type=notify" not in found.read_text(errors="replace"):
            continue
        dropins[f"etc/systemd/system/{unit}.service.d/gpu-provision-sandbox.conf"] = (
            "# gpu-provision sandbox: the systemctl shim follows a daemon by its pid file (see rootfs.py)\n"
            f"[Service]\nType=forking\nPIDFile={pid_file}\nExecStart=\nExecStart=/usr/sbin/{unit} ${options}\n"
            # the shim removes a unit's RuntimeDirectory on any stop or failed start; a second shim run that did so
            # while the daemon started left it running without its pid file, untracked (slurmd "not running")
            "RuntimeDirectoryPreserve=yes\n")
    return dropins


def _host_key(name: str) -> tuple[str, str]:
    """A new Ed25519 SSH host key pair in OpenSSH formats."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, f"{public.decode()} root@{name}\n"


class _UpperWriter:
    """Writes into an overlay upper layer, giving new directories the lower layer's mode and owner
    (an upper directory's attributes win in the merged view, so /root must stay 0700)."""

    def __init__(self, upper: Path, lower: Path) -> None:
        self.upper = upper
        self.lower = lower

    def once(self, rel: str, content: str | bytes, mode: int = 0o644) -> None:
        """Write upper/rel unless the node already has its own copy."""
        if not (self.upper / rel).exists():
            self.file(rel, content, mode)

    def file(self, rel: str, content: str | bytes, mode: int = 0o644, dir_mode: int = 0o755) -> None:
        """Write upper/rel, creating its parents like the lower layer's."""
        self._parents(Path(rel).parent, dir_mode)
        target = self.upper / rel
        target.unlink(missing_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
        _chown(target, 0, 0)
        os.chmod(target, mode)

    def _parents(self, rel: Path, dir_mode: int) -> None:
        """mkdir -p in the upper layer, copying mode and ownership from the lower layer where it exists."""
        current_upper, current_lower = self.upper, self.lower
        for part in rel.parts:
            current_upper, current_lower = current_upper / part, current_lower / part
            if current_upper.is_dir():
                continue
            current_upper.mkdir()
            if current_lower.is_dir():
                info = current_lower.stat()
                _chown(current_upper, info.st_uid, info.st_gid)
                os.chmod(current_upper, stat.S_IMODE(info.st_mode))
            else:
                os.chmod(current_upper, dir_mode)


def _chown(path: Path, uid: int, gid: int) -> None:
    """Set ownership when running as root (the provider always is; unit tests may not be)."""
    if os.geteuid() == 0:
        os.chown(path, uid, gid)
