"""Each role reads a node in one probe and changes only what differs (issues 22 and 37): the reading is where a
mistake would hide drift, so it is pinned here, table-driven, by real Ansible running each role's own probe task
(tasks/probe.yml) and templating its own vars/main.yml.

The probe task runs the real node_probe action (its arguments templated by Ansible, checked, turned into a script and
the output parsed), with one stand-in: the node. The action's command is answered by the case's output, lines in the
formats the recordings of tests/fixtures/node_probe show, each naming what it answers by the task's key rather than
its number (a key the task does not read fails the case). For every case the output is a converged node's with one
thing changed by hand, or a fresh node's (nothing but the final "end"); the role's list of what differs must name
exactly that thing (and be empty for the converged node). The safe direction is the one that matters: a node that
differs must never read as converged.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = REPO / "playbooks" / "roles"
PLUGIN = ROLES / "platform" / "action_plugins" / "node_probe.py"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
KEY_SHA = "0123456789abcdef0123456789abcdef01234567"
FILES = {"slurm.conf": "a" * 40, "gres.conf": "b" * 40, "cgroup.conf": "c" * 40, "mpi.conf": "d" * 40}
ARCHIVE_SHA = "e" * 40
BOOT, HZ, WRITTEN = 1_700_000_000, 100, 1_700_000_500  # boot time, clock ticks, the configuration files' mtime


def _text(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _file(key: str, mode: str, owner: str = "root", group: str = "root", sha1: str | None = None) -> list[str]:
    """stat's answer (raw mode in hex: 81a4 a 0644 file, 41ed a 0755 directory, c1ff a socket) and the SHA-1."""
    size = 4096 if mode.startswith("4") else 100
    return [f"file\t{key}\t{mode}\t{owner}\t{group}\t{WRITTEN}\t{size}"] + ([f"sha1\t{key}\t{sha1}"] if sha1 else [])


def _service(unit: str, active: str = "active", enabled: str = "enabled") -> list[str]:
    return [f"service\t{unit}\tActiveState={active}", f"service\t{unit}\tUnitFileState={enabled}"]


def _process(name: str, pid: int, started: int) -> list[str]:
    """/proc/PID/stat's line: its 22nd field is the start, in clock ticks after boot."""
    return [f"process\t{name}\t{pid}\t{pid} ({name}) S " + " ".join(["0"] * 18) + f" {(started - BOOT) * HZ} 0 0"]


def _packages(*names: str, status: str = "ii ") -> list[str]:
    return [f"package\t{name}\t1.0-1\t{status}" for name in names]


def common(host: str) -> list[str]:
    hosts = "127.0.0.1 localhost\n# BEGIN gpu-provision test\n10.0.0.10 ctl\n10.0.0.11 node\n# END gpu-provision test\n"
    return [*_packages("ca-certificates", "procps", "iproute2", "rsync"),
            "check\tdpkg_interrupted\t1", "check\tlists_present\t0",
            f"output\thostname\t0\t{_text(host)}", f"output\thostname_file\t0\t{_text(host)}",
            "group\tmunge\tmunge:x:980:", "passwd\tmunge\tmunge:x:980:980::/nonexistent:/usr/sbin/nologin",
            "group\tslurm\tslurm:x:981:", "passwd\tslurm\tslurm:x:981:981::/var/lib/slurm:/usr/sbin/nologin",
            f"block\thosts\t{_text(hosts)}", "end"]


def timesync(active: str = "active", enabled: str = "enabled") -> list[str]:
    return _packages("chrony") + _service("chrony", active, enabled) + common("node")


MUNGE = [*_packages("munge"), *_file("key", "8100", "munge", "munge", KEY_SHA), *_service("munge"),
         "check\tcredential\t0", "end"]
SLURM_COMMON = [*_packages("slurm-client", "libpmix-dev"), *_file("/etc/slurm", "41ed"),
                *_file("/var/log/slurm", "41ed", "slurm", "slurm"),
                *_file("/var/lib/slurm/slurmctld", "41ed", "slurm", "slurm"),
                *_file("/var/lib/slurm/slurmd", "41ed", "slurm", "slurm"),
                *(line for name, sha in FILES.items() for line in _file(f"/etc/slurm/{name}", "81a4", sha1=sha)),
                f"version\tslurm\t0\t{_text('slurm 22.05.8')}", f"boot\t{BOOT}\t{HZ}", "tcp\t0.0.0.0:22"]
ADOPT_ACCESS = "/etc/security/access-slurm-adopt.conf"
ADOPT_ACCESS_TEXT = ("# Written by gpu-provision (slurm role): edits are overwritten.\n# Who may log in to this compute node "
                     "without a job on it; pam_slurm_adopt decides for everyone else.\n+:root:ALL\n-:ALL:ALL\n")
ADOPT_MARK = "gpu-provision (slurm role): a job on this node to log in, pam_slurm_adopt"
PAM_SSHD = (f"@include common-auth\n@include common-account\n# BEGIN {ADOPT_MARK}\naccount sufficient pam_access.so "
            f"accessfile={ADOPT_ACCESS}\naccount required pam_slurm_adopt.so\n# END {ADOPT_MARK}\n@include common-session\n")
ADOPT = [*_packages("libpam-slurm-adopt"), *_file(ADOPT_ACCESS, "81a4", sha1=hashlib.sha1(ADOPT_ACCESS_TEXT.encode()).hexdigest()),
         f"block\tpam_adopt\t{_text(PAM_SSHD)}"]
SLURM = {"node": [*SLURM_COMMON, *ADOPT, *_packages("slurmd", status="hi "), *_service("slurmd"),
                  *_process("slurmd", 4242, WRITTEN + 60), "tcp\t[::]:6818", "end"],
         "ctl": [*SLURM_COMMON, *_packages("slurmctld", "slurmdbd", "mariadb-server"),
                 *_file("/run/mysqld/mysqld.sock", "c1ff", "mysql", "mysql"), *_service("slurmctld"),
                 *_service("mariadb"), *_service("slurmdbd"), *_process("slurmctld", 4141, WRITTEN + 60),
                 "tcp\t0.0.0.0:6817", "tcp\t*:6819", "end"]}
# the inventory here is a sandbox's: its ranks yield (mpi_yield_when_idle), every node sharing the host's cores
MPI_BLOCK = ("# BEGIN gpu-provision mpi\nbtl_tcp_disable_family = 6\nmpi_yield_when_idle = 1\n"
             "pmix_base_async_modex = 1\npmix_base_collect_data = 0\n# END gpu-provision mpi\n")
MPI_SPINNING = MPI_BLOCK.replace("mpi_yield_when_idle = 1\n", "")  # the block before the sandbox's ranks yielded
MPI = [*_packages("openmpi-bin", "libopenmpi-dev", "gcc", "libc6-dev"), "check\twrapper\t0",
       f"block\tmca\t{_text(MPI_BLOCK)}", "end"]
CERTIFY = [*_packages("iperf3"), f"python\tnvidia_ml_py\t0\t{_text('1.0')}",
           *_file("archive", "81a4", sha1=ARCHIVE_SHA), "check\tarchive_unpacked\t0", "executable\tmpicc",
           "executable\tmpi_check", "end"]
FSTAB_LINE = "ctl:/shared /shared glusterfs defaults,_netdev 0 0"
DROPIN = "/etc/systemd/system/slurmd.service.d/gpu-provision-shared-mount.conf"
SHARED = [*_packages("glusterfs-client"), *_file("/shared", "41ed"), *_file(DROPIN, "81a4", sha1="f" * 40),
          f"output\tfstab\t0\t{_text(FSTAB_LINE)}", f"output\tmounted\t0\t{_text('fuse.glusterfs')}", "end"]
GLUSTER_ANSWERS = REPO / "tests" / "fixtures" / "gluster"
POOL, STARTED = (GLUSTER_ANSWERS / "pool-list.xml").read_text(), (GLUSTER_ANSWERS / "volume-info-started.xml").read_text()
CREATED = (GLUSTER_ANSWERS / "volume-info-created.edited.xml").read_text()
GLUSTER = [*_packages("glusterfs-server"), *_service("glusterd"), "tcp\t0.0.0.0:24007", *_file("brick", "41ed"),
           f"output\tpool\t0\t{_text(POOL)}", f"output\tvolume\t0\t{_text(STARTED)}", "end"]


def _without(lines: list[str], *gone: str) -> list[str]:
    assert all(line in lines for line in gone), gone
    return [line for line in lines if line not in gone]


def _with(lines: list[str], old: str, new: str) -> list[str]:
    assert old in lines, old
    return [new if line == old else line for line in lines]


def _etc_hosts(*lines: str) -> list[str]:
    """The converged node's output with another /etc/hosts."""
    text = _text("".join(line + "\n" for line in lines))
    return [f"block\thosts\t{text}" if line.startswith("block\t") else line for line in NODE]


# What each role calls its list of differences; mpi's is its missing packages.
TODO = {"common": "_common_todo", "munge": "_munge_todo", "slurm": "_slurm_todo", "mpi": "_mpi_missing_packages",
        "certify": "_certify_todo", "shared_mount": "_shared_mount_todo", "glusterfs_server": "_glusterfs_server_todo"}
NODE = common("node")

# (case id, host, role, the node's output, what the role decides: its TODO list, or (variable, value))
CASES = [
    ("common converged", "node", "common", NODE, []),
    ("common fresh node", "node", "common", ["end"],
     ["package lists", "packages", "host name", "/etc/hosts", "service accounts"]),
    ("common package missing", "node", "common", _without(NODE, "package\trsync\t1.0-1\tii "), ["packages"]),
    ("common package removed, config left", "node", "common",
     _with(NODE, "package\trsync\t1.0-1\tii ", "package\trsync\t1.0-1\trc "), ["packages"]),
    ("common package half installed", "node", "common",
     _with(NODE, "package\trsync\t1.0-1\tii ", "package\trsync\t1.0-1\tiU "), ["packages"]),
    ("common missing packages named", "node", "common", _without(NODE, "package\tprocps\t1.0-1\tii "),
     ("_common_missing_packages", ["procps"])),
    ("common no package lists", "node", "common", _with(NODE, "check\tlists_present\t0", "check\tlists_present\t1"),
     ["package lists"]),
    ("common interrupted dpkg", "node", "common", _with(NODE, "check\tdpkg_interrupted\t1",
                                                        "check\tdpkg_interrupted\t0"),
     ["interrupted package configuration"]),
    ("common host name", "node", "common", _with(NODE, f"output\thostname\t0\t{_text('node')}",
                                                 f"output\thostname\t0\t{_text('other')}"), ["host name"]),
    ("common /etc/hostname", "node", "common", _with(NODE, f"output\thostname_file\t0\t{_text('node')}",
                                                     "output\thostname_file\t1\t"), ["host name"]),
    ("common hosts line missing", "node", "common",
     _etc_hosts("# BEGIN gpu-provision test", "10.0.0.11 node", "# END gpu-provision test"), ["/etc/hosts"]),
    ("common hosts line edited", "node", "common",
     _etc_hosts("# BEGIN gpu-provision test", "10.0.0.99 ctl", "10.0.0.11 node", "# END gpu-provision test"),
     ["/etc/hosts"]),
    ("common hosts block absent", "node", "common", _etc_hosts("127.0.0.1 localhost"), ["/etc/hosts"]),
    ("common hosts block twice", "node", "common",
     _etc_hosts(*["# BEGIN gpu-provision test", "10.0.0.10 ctl", "10.0.0.11 node", "# END gpu-provision test"] * 2),
     ["/etc/hosts"]),
    ("common account uid", "node", "common",
     _with(NODE, "passwd\tmunge\tmunge:x:980:980::/nonexistent:/usr/sbin/nologin",
           "passwd\tmunge\tmunge:x:990:980::/nonexistent:/usr/sbin/nologin"), ["service accounts"]),
    ("common account group", "node", "common", _with(NODE, "group\tmunge\tmunge:x:980:", "group\tmunge\tmunge:x:970:"),
     ["service accounts"]),
    ("common account home and shell", "node", "common",
     _with(NODE, "passwd\tslurm\tslurm:x:981:981::/var/lib/slurm:/usr/sbin/nologin",
           "passwd\tslurm\tslurm:x:981:981::/home/slurm:/bin/bash"), ["service accounts"]),
    ("common account missing", "node", "common",
     _without(NODE, "passwd\tslurm\tslurm:x:981:981::/var/lib/slurm:/usr/sbin/nologin"), ["service accounts"]),
    ("common accounts to fix named", "node", "common", _without(NODE, "group\tslurm\tslurm:x:981:"),
     ("_common_accounts_to_fix", [{"name": "slurm", "uid": 981, "home": "/var/lib/slurm"}])),
    ("common time sync running", "node", "common+timesync", timesync(), ("_common_time_sync_running", True)),
    ("common time sync stopped", "node", "common+timesync", timesync(active="inactive"),
     ("_common_time_sync_running", False)),
    ("common time sync disabled at boot", "node", "common+timesync", timesync(enabled="disabled"),
     ("_common_time_sync_running", False)),
    ("common time sync package missing", "node", "common+timesync",
     _without(timesync(), "package\tchrony\t1.0-1\tii "), ("_common_missing_packages", ["chrony"])),
    ("munge converged", "node", "munge", MUNGE, []),
    ("munge fresh node", "node", "munge", ["end"], ["package", "key", "daemon", "credential"]),
    ("munge package", "node", "munge", _without(MUNGE, "package\tmunge\t1.0-1\tii "), ["package"]),
    ("munge key content", "node", "munge", _with(MUNGE, f"sha1\tkey\t{KEY_SHA}", f"sha1\tkey\t{'1' * 40}"), ["key"]),
    ("munge key mode", "node", "munge", _with(MUNGE, MUNGE[1], MUNGE[1].replace("\t8100\t", "\t81a4\t")), ["key"]),
    ("munge key owner", "node", "munge", _with(MUNGE, MUNGE[1], MUNGE[1].replace("\tmunge\tmunge\t", "\troot\tmunge\t")),
     ["key"]),
    ("munge key a directory", "node", "munge", _without(_with(MUNGE, MUNGE[1], MUNGE[1].replace("\t8100\t", "\t4100\t")),
                                                        f"sha1\tkey\t{KEY_SHA}"), ["key"]),
    ("munge key absent", "node", "munge", _without(MUNGE, MUNGE[1], f"sha1\tkey\t{KEY_SHA}"), ["key"]),
    ("munge stopped", "node", "munge", _with(MUNGE, "service\tmunge\tActiveState=active",
                                             "service\tmunge\tActiveState=inactive"), ["daemon"]),
    ("munge disabled", "node", "munge", _with(MUNGE, "service\tmunge\tUnitFileState=enabled",
                                              "service\tmunge\tUnitFileState=disabled"), ["daemon"]),
    ("munge does not answer", "node", "munge", _with(MUNGE, "check\tcredential\t0", "check\tcredential\t1"),
     ["credential"]),
    ("munge running: a changed key restarts it", "node", "munge", _without(MUNGE, "service\tmunge\tUnitFileState=enabled"),
     ("_munge_running", True)),
    ("slurm compute converged", "node", "slurm", SLURM["node"], []),
    ("slurm controller converged", "ctl", "slurm", SLURM["ctl"], []),
    ("slurm compute fresh node", "node", "slurm", ["end"],
     ["packages", "configuration directory", "/var/log/slurm", "/var/lib/slurm/slurmctld", "/var/lib/slurm/slurmd",
      "slurm.conf", "gres.conf", "cgroup.conf", "mpi.conf", "slurmd", "slurmd port"]),
    ("slurm controller fresh node", "ctl", "slurm", ["end"],
     ["packages", "configuration directory", "/var/log/slurm", "/var/lib/slurm/slurmctld", "/var/lib/slurm/slurmd",
      "slurm.conf", "gres.conf", "cgroup.conf", "mpi.conf", "slurmctld", "mariadb", "slurmdbd", "slurmctld port",
      "slurmdbd port", "MariaDB socket"]),
    # packages going in during the run: the directories they may create are checked by the file module again
    ("slurm package", "node", "slurm", _without(SLURM["node"], "package\tslurmd\t1.0-1\thi "),
     ["packages", "/var/log/slurm", "/var/lib/slurm/slurmctld", "/var/lib/slurm/slurmd"]),
    ("slurm package half installed", "node", "slurm",
     _with(SLURM["node"], "package\tslurmd\t1.0-1\thi ", "package\tslurmd\t1.0-1\thF "),
     ["packages", "/var/log/slurm", "/var/lib/slurm/slurmctld", "/var/lib/slurm/slurmd"]),
    ("slurm config dir mode", "node", "slurm",
     _with(SLURM["node"], *_file("/etc/slurm", "41ed"), *_file("/etc/slurm", "41c0")), ["configuration directory"]),
    ("slurm data dir owner", "node", "slurm", _with(SLURM["node"], *_file("/var/log/slurm", "41ed", "slurm", "slurm"),
                                                    *_file("/var/log/slurm", "41ed")), ["/var/log/slurm"]),
    ("slurm data dir absent", "node", "slurm",
     _without(SLURM["node"], *_file("/var/lib/slurm/slurmd", "41ed", "slurm", "slurm")), ["/var/lib/slurm/slurmd"]),
    ("slurm data dir a file", "node", "slurm",
     _with(SLURM["node"], *_file("/var/lib/slurm/slurmd", "41ed", "slurm", "slurm"),
           *_file("/var/lib/slurm/slurmd", "81ed", "slurm", "slurm")), ["/var/lib/slurm/slurmd"]),
    ("slurm file edited", "node", "slurm", _with(SLURM["node"], f"sha1\t/etc/slurm/cgroup.conf\t{'c' * 40}",
                                                 f"sha1\t/etc/slurm/cgroup.conf\t{'0' * 40}"), ["cgroup.conf"]),
    ("slurm file mode", "node", "slurm",
     _with(SLURM["node"], _file("/etc/slurm/slurm.conf", "81a4")[0], _file("/etc/slurm/slurm.conf", "8180")[0]),
     ["slurm.conf"]),
    ("slurm file absent", "node", "slurm", _without(SLURM["node"], *_file("/etc/slurm/gres.conf", "81a4", sha1="b" * 40)),
     ["gres.conf"]),
    ("slurmd stopped", "node", "slurm", _with(SLURM["node"], "service\tslurmd\tActiveState=active",
                                              "service\tslurmd\tActiveState=failed"), ["slurmd"]),
    ("slurmd not listening", "node", "slurm", _without(SLURM["node"], "tcp\t[::]:6818"), ["slurmd port"]),
    ("slurmdbd disabled", "ctl", "slurm", _with(SLURM["ctl"], "service\tslurmdbd\tUnitFileState=enabled",
                                                "service\tslurmdbd\tUnitFileState=disabled"), ["slurmdbd"]),
    ("slurmctld not listening", "ctl", "slurm", _without(SLURM["ctl"], "tcp\t0.0.0.0:6817"), ["slurmctld port"]),
    ("mariadb socket gone", "ctl", "slurm", _without(SLURM["ctl"], *_file("/run/mysqld/mysqld.sock", "c1ff", "mysql",
                                                                          "mysql")), ["MariaDB socket"]),
    ("mariadb socket a plain file", "ctl", "slurm",
     _with(SLURM["ctl"], *_file("/run/mysqld/mysqld.sock", "c1ff", "mysql", "mysql"),
           *_file("/run/mysqld/mysqld.sock", "81a4", "mysql", "mysql")), ["MariaDB socket"]),
    ("slurm daemons in place", "ctl", "slurm", _with(SLURM["ctl"], "service\tmariadb\tActiveState=active",
                                                     "service\tmariadb\tActiveState=activating"),
     ("_slurm_units_in_place", ["slurmctld", "slurmdbd"])),
    ("slurmd started before its configuration was written", "node", "slurm",
     _with(SLURM["node"], *_process("slurmd", 4242, WRITTEN + 60), *_process("slurmd", 4242, WRITTEN - 60)),
     ("_slurm_stale", ["slurmd"])),
    ("slurmctld started after its configuration", "ctl", "slurm", SLURM["ctl"], ("_slurm_stale", [])),
    ("slurmd not running is not stale", "node", "slurm", _without(SLURM["node"], *_process("slurmd", 4242, WRITTEN + 60)),
     ("_slurm_stale", [])),
    ("slurm version from the daemon", "node", "slurm", SLURM["node"], ("_slurm_version", "22.05.8")),
    ("slurm version assumed where none answers", "node", "slurm", ["end"], ("_slurm_version", "22.05")),
    ("slurm health fresh on a compute node", "node", "slurm", SLURM["node"],
     ("_slurm_health_todo", ["/etc/gpu-provision/health.json", "/usr/local/sbin/gpu-provision-health",
                             "/etc/systemd/system/gpu-provision-health.service", "service"])),
    ("slurm health nothing on the controller", "ctl", "slurm", SLURM["ctl"], ("_slurm_health_todo", [])),
    ("mpi converged", "node", "mpi", MPI, []),
    ("mpi fresh node", "node", "mpi", ["end"], ["openmpi-bin", "libopenmpi-dev", "gcc", "libc6-dev"]),
    ("mpi compiler missing", "node", "mpi", _without(MPI, "package\tgcc\t1.0-1\tii "), ["gcc"]),
    ("mpi block in place", "node", "mpi", MPI, ("_mpi_mca_differs", False)),
    ("mpi block edited", "node", "mpi",
     _with(MPI, f"block\tmca\t{_text(MPI_BLOCK)}", f"block\tmca\t{_text(MPI_BLOCK.replace('6', '4'))}"),
     ("_mpi_mca_differs", True)),
    ("mpi block of a node that spins", "node", "mpi",
     _with(MPI, f"block\tmca\t{_text(MPI_BLOCK)}", f"block\tmca\t{_text(MPI_SPINNING)}"),
     ("_mpi_mca_differs", True)),
    ("mpi block absent", "node", "mpi", _without(MPI, f"block\tmca\t{_text(MPI_BLOCK)}"), ("_mpi_mca_differs", True)),
    ("certify converged", "node", "certify", CERTIFY, []),
    ("certify fresh node", "node", "certify", ["end"], ["packages", "nvidia-ml-py", "archive", "unpacked files"]),
    ("certify package", "node", "certify", _without(CERTIFY, "package\tiperf3\t1.0-1\tii "), ["packages"]),
    ("certify nvml version", "node", "certify", _with(CERTIFY, f"python\tnvidia_ml_py\t0\t{_text('1.0')}",
                                                      f"python\tnvidia_ml_py\t0\t{_text('0.9')}"), ["nvidia-ml-py"]),
    ("certify nvml missing", "node", "certify", _with(CERTIFY, f"python\tnvidia_ml_py\t0\t{_text('1.0')}",
                                                      "python\tnvidia_ml_py\t0\t"), ["nvidia-ml-py"]),
    ("certify archive content", "node", "certify", _with(CERTIFY, f"sha1\tarchive\t{ARCHIVE_SHA}",
                                                         f"sha1\tarchive\t{'0' * 40}"), ["archive"]),
    ("certify archive mode", "node", "certify",
     _with(CERTIFY, _file("archive", "81a4")[0], _file("archive", "8180")[0]), ["archive"]),
    ("certify unpacked file edited", "node", "certify",
     _with(CERTIFY, "check\tarchive_unpacked\t0", "check\tarchive_unpacked\t2"), ["unpacked files"]),
    ("certify MPI check wanted where mpicc is", "node", "certify", CERTIFY, ("_certify_mpi_check_wanted", True)),
    ("certify no MPI check without mpicc", "node", "certify", _without(CERTIFY, "executable\tmpicc"),
     ("_certify_mpi_check_wanted", False)),
    ("glusterfs_server converged", "node", "glusterfs_server", GLUSTER, []),
    ("glusterfs_server fresh node", "node", "glusterfs_server", ["end"],
     ["packages", "glusterd", "port", "brick", "pool and volume"]),
    ("glusterfs_server package", "node", "glusterfs_server", _without(GLUSTER, "package\tglusterfs-server\t1.0-1\tii "),
     ["packages"]),
    ("glusterfs_server glusterd stopped", "node", "glusterfs_server",
     _with(GLUSTER, "service\tglusterd\tActiveState=active", "service\tglusterd\tActiveState=failed"), ["glusterd"]),
    ("glusterfs_server glusterd disabled", "node", "glusterfs_server",
     _with(GLUSTER, "service\tglusterd\tUnitFileState=enabled", "service\tglusterd\tUnitFileState=disabled"),
     ["glusterd"]),
    ("glusterfs_server port closed", "node", "glusterfs_server", _without(GLUSTER, "tcp\t0.0.0.0:24007"), ["port"]),
    ("glusterfs_server brick absent", "node", "glusterfs_server", _without(GLUSTER, *_file("brick", "41ed")), ["brick"]),
    ("glusterfs_server brick mode", "node", "glusterfs_server",
     _with(GLUSTER, *_file("brick", "41ed"), *_file("brick", "41c0")), ["brick"]),
    ("glusterfs_server volume not started", "node", "glusterfs_server",
     _with(GLUSTER, f"output\tvolume\t0\t{_text(STARTED)}", f"output\tvolume\t0\t{_text(CREATED)}"),
     ["pool and volume"]),
    ("glusterfs_server glusterd did not answer", "node", "glusterfs_server",
     _with(GLUSTER, f"output\tpool\t0\t{_text(POOL)}", "output\tpool\t1\t"), ["pool and volume"]),
    ("slurm pam_slurm_adopt in place", "node", "slurm", SLURM["node"], ("_slurm_pam_adopt_todo", [])),
    ("slurm pam_slurm_adopt block absent", "node", "slurm", _without(SLURM["node"], ADOPT[-1]),
     ("_slurm_pam_adopt_todo", ["/etc/pam.d/sshd"])),
    ("slurm pam_slurm_adopt block edited", "node", "slurm",
     _with(SLURM["node"], ADOPT[-1], f"block\tpam_adopt\t{_text(PAM_SSHD.replace('required pam_slurm', 'optional pam_slurm'))}"),
     ("_slurm_pam_adopt_todo", ["/etc/pam.d/sshd"])),
    ("slurm pam_slurm_adopt access edited", "node", "slurm",
     _with(SLURM["node"], ADOPT[-2], f"sha1\t{ADOPT_ACCESS}\t{'e' * 40}"), ("_slurm_pam_adopt_todo", [ADOPT_ACCESS])),
    ("slurm pam_slurm_adopt package missing", "node", "slurm", _without(SLURM["node"], ADOPT[0]),
     ("_slurm_missing_packages", ["libpam-slurm-adopt"])),
    ("slurm pam_slurm_adopt never on the controller", "ctl", "slurm", SLURM["ctl"], ("_slurm_pam_adopt_todo", [])),
    ("slurm pam_slurm_adopt block taken off the controller", "ctl", "slurm",
     [*SLURM["ctl"][:-1], ADOPT[-1], "end"], ("_slurm_pam_adopt_todo", ["/etc/pam.d/sshd"])),
    ("shared_mount converged", "node", "shared_mount", SHARED, []),
    ("shared_mount fresh node", "node", "shared_mount", ["end"], ["mount point", "fstab", "mount"]),
    ("shared_mount nothing to install", "node", "shared_mount", SHARED, ("_shared_mount_missing_packages", [])),
    ("shared_mount client missing", "node", "shared_mount", _without(SHARED, "package\tglusterfs-client\t1.0-1\tii "),
     ("_shared_mount_missing_packages", ["glusterfs-client"])),
    ("shared_mount client removed, config left", "node", "shared_mount",
     _with(SHARED, "package\tglusterfs-client\t1.0-1\tii ", "package\tglusterfs-client\t1.0-1\trc "),
     ("_shared_mount_missing_packages", ["glusterfs-client"])),
    ("shared_mount point absent", "node", "shared_mount", _without(SHARED, *_file("/shared", "41ed")), ["mount point"]),
    ("shared_mount point mode", "node", "shared_mount", _with(SHARED, *_file("/shared", "41ed"), *_file("/shared", "41c0")),
     ["mount point"]),
    ("shared_mount point a file", "node", "shared_mount",
     _with(SHARED, *_file("/shared", "41ed"), *_file("/shared", "81ed")), ["mount point"]),
    ("shared_mount fstab line edited", "node", "shared_mount",
     _with(SHARED, f"output\tfstab\t0\t{_text(FSTAB_LINE)}",
           f"output\tfstab\t0\t{_text(FSTAB_LINE.replace('_netdev', 'noauto'))}"), ["fstab"]),
    ("shared_mount fstab line twice", "node", "shared_mount",
     _with(SHARED, f"output\tfstab\t0\t{_text(FSTAB_LINE)}", f"output\tfstab\t0\t{_text(FSTAB_LINE + chr(10) + FSTAB_LINE)}"),
     ["fstab"]),
    ("shared_mount no fstab line", "node", "shared_mount",
     _with(SHARED, f"output\tfstab\t0\t{_text(FSTAB_LINE)}", "output\tfstab\t0\t"), ["fstab"]),
    ("shared_mount no /etc/fstab", "node", "shared_mount",
     _with(SHARED, f"output\tfstab\t0\t{_text(FSTAB_LINE)}", "output\tfstab\t2\t"), ["fstab"]),
    ("shared_mount not mounted", "node", "shared_mount",
     _with(SHARED, f"output\tmounted\t0\t{_text('fuse.glusterfs')}", "output\tmounted\t1\t"), ["mount"]),
]

INVENTORY = {"all": {
    "hosts": {"ctl": {"ansible_host": "10.0.0.10"}, "node": {"ansible_host": "10.0.0.11"}},
    "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "cluster_name": "test",
             "provision_sandbox": True, "slurm_controller_host": "ctl", "certify_cache_dir": "/nonexistent",
             "filesystem_type": "glusterfs", "filesystem_mount_point": "/shared"},
    "children": {"controller": {"hosts": {"ctl": {}}}, "compute": {"hosts": {"node": {}}},
                 "storage": {"hosts": {"node": {}}}}}}

# The node_probe action with the node's side stood in for: the real plugin checks the task's arguments and builds
# the script; the case's lines answer it, each key turned into the number the script would print.
FAKE_ACTION = '''\
import importlib.util

_spec = importlib.util.spec_from_file_location("node_probe_real", {plugin!r})
real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real)
KEYED = {{"file": "files", "sha1": "files", "executable": "executables", "service": "services", "check": "checks",
         "output": "outputs", "version": "versions", "python": "python_versions", "passwd": "accounts",
         "group": "accounts", "process": "processes", "block": "blocks"}}


def numbered(spec, lines):
    for line in lines:
        tag, _, rest = line.partition("\\t")
        if tag in KEYED:
            key, tab, fields = rest.partition("\\t")
            keys = [entry for entry, _ in spec.get(KEYED[tag], [])]
            if key not in keys:
                raise AssertionError(f"the case answers {{KEYED[tag]}} {{key!r}}, which the task does not read: {{keys}}")
            line = f"{{tag}}\\t{{keys.index(key)}}{{tab}}{{fields}}"
        yield line


class ActionModule(real.ActionModule):
    def run(self, tmp=None, task_vars=None):
        self._lines = list(task_vars["node_output"])
        return super().run(tmp, task_vars)

    def _low_level_execute_command(self, cmd, **kwargs):
        spec = real.normalise(dict(self._task.args))
        assert cmd == real.build_script(spec)
        return {{"rc": 0, "stdout": "\\n".join(numbered(spec, self._lines)) + "\\n", "stderr": ""}}
'''

PLAYBOOK = """\
- name: Read the roles' probe answers
  hosts: all
  gather_facts: false
  tasks:
    - name: Load each role's defaults and computed vars
      ansible.builtin.include_vars: "{{{{ item }}}}"
      loop: {var_files}
    - name: Stand in for what the control node provides
      ansible.builtin.set_fact:
        _munge_key_source: {{stat: {{checksum: "{key_sha}"}}}}
        _certify_bundle: {{stdout: '{{"nvml_version": "1.0"}}'}}
        _certify_pack: {{stdout: '{{"checksum": "{archive_sha}"}}'}}
        _slurm_expected_files: {slurm_files}
        _shared_mount_fstab_line: "{fstab_line}"
        _answers: {{}}
    - name: Read each case
      ansible.builtin.include_tasks: case.yml
      loop: {cases}
      loop_control:
        loop_var: case
      when: case.host == inventory_hostname
    - name: Write the answers
      ansible.builtin.copy:
        content: "{{{{ _answers | to_json }}}}"
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
"""
CASE = """\
- name: Give the case's node output and settings
  ansible.builtin.set_fact:
    node_output: "{{{{ case.lines }}}}"
    common_time_sync_enabled: "{{{{ case.time_sync }}}}"
- name: Run the role's own probe task
  ansible.builtin.include_tasks: "{roles}/{{{{ case.role }}}}/tasks/probe.yml"
- name: Record what the role decides
  ansible.builtin.set_fact:
    _answers: "{{{{ _answers | combine({{case.id: lookup('ansible.builtin.vars', case.decision)}}) }}}}"
"""


def _decision(role: str, expected) -> tuple[str, object]:
    return expected if isinstance(expected, tuple) else (TODO[role], expected)


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("probes")
    var_files = [str(ROLES / role / kind / "main.yml") for role in TODO for kind in ("defaults", "vars")]
    var_files.append(str(ROLES / "shared_mount" / "vars" / "glusterfs.yml"))  # the type's settings
    cases = [{"id": case_id, "host": host, "role": role.split("+")[0], "time_sync": role.endswith("+timesync"),
              "lines": lines, "decision": _decision(role.split("+")[0], expected)[0]}
             for case_id, host, role, lines, expected in CASES]
    (tmp / "action_plugins").mkdir()
    (tmp / "action_plugins" / "node_probe.py").write_text(FAKE_ACTION.format(plugin=str(PLUGIN)))
    (tmp / "hosts.yml").write_text(yaml.safe_dump(INVENTORY))
    (tmp / "case.yml").write_text(CASE.format(roles=ROLES))
    (tmp / "play.yml").write_text(PLAYBOOK.format(
        var_files=json.dumps(var_files), key_sha=KEY_SHA, cases=json.dumps(cases), out=tmp,
        slurm_files=json.dumps(FILES), archive_sha=ARCHIVE_SHA, fstab_line=FSTAB_LINE))
    env = {**os.environ, "ANSIBLE_ACTION_PLUGINS": str(tmp / "action_plugins"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FILTER_PLUGINS": os.pathsep.join(str(ROLES / role / "filter_plugins")
                                                     for role in ("shared_mount", "glusterfs_server"))}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml")],
                            capture_output=True, text=True, cwd=tmp, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]
    return {**json.loads((tmp / "ctl.json").read_text()), **json.loads((tmp / "node.json").read_text())}


@pytest.mark.parametrize("case_id, role, expected", [(c[0], c[2], c[4]) for c in CASES], ids=[c[0] for c in CASES])
def test_the_probe_reads_exactly_what_differs(answers, case_id, role, expected):
    assert answers[case_id] == _decision(role.split("+")[0], expected)[1]


def test_the_cases_cover_every_role_converged_and_fresh():
    converged = {role for _, _, role, lines, expected in CASES if expected == [] and lines != ["end"]}
    fresh = {role for _, _, role, lines, expected in CASES if lines == ["end"] and isinstance(expected, list)}
    assert converged == fresh == set(TODO)
