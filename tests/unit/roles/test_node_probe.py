"""The node_probe action (playbooks/roles/platform/action_plugins/node_probe.py): every role reads its node with it, in
one remote command, and decides from its answer. A wrong answer would make a node read as converged, so:

- what it makes of real output is pinned against recordings (tests/fixtures/node_probe/*.json, made by record.py
  there: the real dpkg-query, stat, getent, pgrep... on a Debian 12 machine) and against this machine read again;
- no value from a task reaches the shell as code, however it is written;
- a wrong argument, or output cut short or garbled, fails the task instead of reading as "absent";
- through Ansible it is one command on the node, nothing copied, changed=false, and it reads in --check too.
"""
from __future__ import annotations

import base64
import grp
import hashlib
import json
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from role_plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]
PLUGIN_DIR = REPO / "playbooks" / "roles" / "platform" / "action_plugins"
RECORDINGS = REPO / "tests" / "fixtures" / "node_probe"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"


def _load():
    return load_plugin(PLUGIN_DIR / "node_probe.py", "node_probe_under_test")


probe = _load()


def _recorded(name: str) -> tuple[dict, str]:
    recording = json.loads((RECORDINGS / f"{name}.json").read_text())
    return recording["args"], recording["output"]


def _read(args: dict, output: str) -> dict:
    return probe.parse_output(probe.normalise(args), output)


def _package(name, installed, status, version, held=False):
    return {"name": name, "installed": installed, "held": held, "status": status, "version": version}


def _file(path, kind, owner, group, mode, mtime, size, sha1=None):
    return {"path": path, "exists": True, "type": kind, "owner": owner, "group": group, "mode": mode, "mtime": mtime,
            "size": size, "sha1": sha1}


def _no_file(path):
    return {"path": path, "exists": False, "type": None, "owner": None, "group": None, "mode": None, "mtime": None,
            "size": None, "sha1": None}


def _account(name, uid=None, gid=None, home=None, shell=None, group_gid=None):
    return {"name": name, "uid": uid, "gid": gid, "home": home, "shell": shell, "group_gid": group_gid}


def _text(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


# --- Recorded outputs -----------------------------------------------------------------------------------------------

def test_a_package_is_installed_only_in_dpkg_state_installed_without_an_error_flag():
    """Recorded from the real dpkg-query: half-installed (iU, iF), removed with its configuration left (rc), marked for
    reinstallation (iiR), known but never installed (un) and unknown packages all read as not installed; a held
    package is installed and held; an architecture-qualified name reads as its package."""
    assert _read(*_recorded("dpkg-states")) == {"packages": {
        "probe-ii": _package("probe-ii", True, "ii", "1.0-1"),
        "probe-hi": _package("probe-hi", True, "hi", "24.11.5-1", held=True),
        "probe-iu": _package("probe-iu", False, "iU", "2.0-1"),
        "probe-rc": _package("probe-rc", False, "rc", "0.9-2"),
        "probe-if": _package("probe-if", False, "iF", "3.1-1"),
        "probe-iir": _package("probe-iir", False, "iiR", "4.0-1"),
        "probe-un": _package("probe-un", False, "un", None),
        "probe-none": _package("probe-none", False, None, None),
        "probe-ii:all": _package("probe-ii:all", True, "ii", "1.0-1")}}


def test_a_fresh_node_reads_as_having_nothing_the_roles_ask_for():
    """Recorded on a machine without munge, Slurm, MPI or the certify probe (and without a running systemd)."""
    args, output = _recorded("fresh-node")
    state = _read(args, output)
    assert not any(p["installed"] for p in state["packages"].values()) and len(state["packages"]) == 5
    assert state["files"] == {key: _no_file(path) for key, path in args["files"].items()}
    assert state["executables"] == {"mpicc": False, "nvcc": False}
    assert state["services"] == {"munge": {"name": "munge", "active": None, "enabled": None},
                                 "slurmd": {"name": "slurmd", "active": None, "enabled": None}}
    assert state["accounts"] == {"munge": _account("munge"), "slurm": _account("slurm")}
    assert state["checks"] == {"credential": False, "wrapper": False}
    assert state["versions"] == {"slurm": None} and state["python_versions"] == {"nvidia_ml_py": None}
    assert state["blocks"] == {"mca": None}


def _offer(version, upstream, revision, epoch=0):
    return {"version": version, "epoch": epoch, "upstream": upstream, "revision": revision}


APT_ROOT = "/tmp/node-probe-fixture/apt/"


def test_apt_policy_answers_the_versions_repositories_offer_its_candidate_and_what_is_installed():
    """Recorded from the real apt-cache policy (apt 2.6) over two repositories: a version pinned to -1 is still offered
    (there is no candidate), a version only the dpkg status file has is installed but not offered, an epoch is split
    off, the repositories' order (newest first) is kept, and a package no repository knows offers nothing."""
    versions = _read(*_recorded("gpu-node"))["apt_versions"]
    assert versions["nvidia-driver-cuda"] == {"name": "nvidia-driver-cuda", "installed": None, "candidate": None,
                                              "offered": [_offer("575.51.03-1", "575.51.03", "1"),
                                                          _offer("570.124.06-1", "570.124.06", "1"),
                                                          _offer("570.86.15-1", "570.86.15", "1")]}
    assert versions["nvidia-smi"] == {"name": "nvidia-smi", "installed": "550.163.01-2", "candidate": "550.163.01-2",
                                      "offered": [_offer("570.124.06-1", "570.124.06", "1"),
                                                  _offer("550.163.01-2", "550.163.01", "2")]}
    assert versions["libnccl2"]["installed"] == "2.24.3-1+cuda12.8"
    assert [o["version"] for o in versions["libnccl2"]["offered"]] == [
        "2.26.2-1+cuda12.8", "2.26.2-1+cuda12.2", "2.25.1-1+cuda12.8"]
    assert versions["libnccl2"]["offered"][1]["revision"] == "1+cuda12.2"
    assert versions["datacenter-gpu-manager-4-core"]["offered"] == [_offer("1:4.4.1-1", "4.4.1", "1", epoch=1)]
    assert versions["linux-headers-6.12.99-amd64"]["candidate"] == "6.12.99-1"
    for name in ("linux-headers-0.0-none", "no-such-package"):
        assert versions[name] == {"name": name, "installed": None, "candidate": None, "offered": []}


def test_apt_sources_name_the_file_of_each_archive_with_its_origin_and_component():
    """Recorded from the real apt-get indextargets: a flat repository has no suite or component (apt leaves the
    $(SUITE) unfilled, read as None); one line per component."""
    assert _read(*_recorded("gpu-node"))["apt_sources"] == [
        {"file": APT_ROOT + "root/etc/apt/sources.list.d/cuda.sources", "entry": 1, "origin": "NVIDIA", "suite": None,
         "component": None},
        {"file": APT_ROOT + "root/etc/apt/sources.list.d/debian.sources", "entry": 1, "origin": "Debian",
         "suite": "stable", "component": "main"},
        {"file": APT_ROOT + "root/etc/apt/sources.list.d/debian.sources", "entry": 1, "origin": "Debian",
         "suite": "stable", "component": "non-free"}]


def test_packages_by_pattern_are_every_match_dpkg_knows_in_its_state():
    assert _read(*_recorded("gpu-node"))["package_patterns"] == {
        "libcuda1": _package("libcuda1", False, "iU", "550.163.01-2"),
        "nvidia-persistenced": _package("nvidia-persistenced", False, "rc", "550.163.01-1"),
        "nvidia-smi": _package("nvidia-smi", True, "hi", "550.163.01-2", held=True)}


def test_an_alternative_reads_as_its_mode_value_and_choices():
    alt = APT_ROOT + "alternatives/"
    assert _read(*_recorded("gpu-node"))["alternatives"] == {
        "cuda": {"name": "cuda", "registered": True, "status": "manual", "best": alt + "cuda-12.8",
                 "value": alt + "cuda-12.4", "choices": [alt + "cuda-12.4", alt + "cuda-12.8"]},
        "no-such-alternative": {"name": "no-such-alternative", "registered": False, "status": None, "best": None,
                                "value": None, "choices": []}}


def test_pci_devices_read_as_vendor_device_and_class_of_sysfs():
    """sysfs writes "0x10de" and "0x030200"; the answer is the lower-case hex ids, the class without its interface
    byte and the base class (03: display, 0680: a bridge of the NVSwitch kind). A missing folder reads as no device."""
    devices = _read(*_recorded("gpu-node"))["pci_devices"]
    assert devices["missing"] == []
    assert [(d["slot"], d["id"], d["base_class"]) for d in devices["bus"]] == [
        ("0000:00:00.0", "8086:1237:0600", "06"), ("0000:17:00.0", "10de:2330:0302", "03"),
        ("0000:18:00.0", "10de:22a3:0680", "06"), ("0000:19:00.0", "15b3:1021:0207", "02")]
    assert devices["bus"][1] == {"slot": "0000:17:00.0", "vendor": "10de", "device": "2330", "class": "0302",
                                 "base_class": "03", "id": "10de:2330:0302"}


@pytest.mark.parametrize("version, parts", [
    ("1:4.4.1-1", (1, "4.4.1", "1")), ("2.26.2-1+cuda12.8", (0, "2.26.2", "1+cuda12.8")),
    ("535.309.01-0+deb12u1", (0, "535.309.01", "0+deb12u1")), ("1.0", (0, "1.0", "")),
    ("2:1.2-3-4", (2, "1.2-3", "4")), ("a:1-2", (0, "a:1", "2")),
])
def test_a_debian_version_splits_into_epoch_upstream_and_revision(version, parts):
    found = probe.debian_version(version)
    assert (found["epoch"], found["upstream"], found["revision"]) == parts and found["version"] == version


FILES = "/tmp/node-probe-fixture/files/"
ODD = "odd name\nwith $(touch INJECTED) `touch INJECTED`; 'quotes' \"too\""
T = 1795821694  # the recording's time: the files' mtime, and the sleeper's start


def test_files_of_each_kind_and_mode_read_as_stat_sees_them_links_followed():
    state = _read(*_recorded("files"))
    plain_sha = "3f786850e387550fdab836ed7e6dc881de23001b"
    assert state["files"] == {
        "plain.conf": _file(FILES + "plain.conf", "file", "root", "root", "0644", T, 2, plain_sha),
        "key": _file(FILES + "key", "file", "nobody", "nogroup", "0400", T, 7, "fc683cd9ed1990ca2ea10b84e5e6fba048c24929"),
        "setuid": _file(FILES + "setuid", "file", "root", "root", "4755", T, 10, "bd971bec88149956458a10fc9c5ecb3eb99dd452"),
        "dir": _file(FILES + "dir", "directory", "root", "root", "0700", T, 4096),
        "socket": _file(FILES + "socket", "socket", "root", "root", "0755", T, 0),
        "link": _file(FILES + "link", "file", "root", "root", "0644", T, 2, plain_sha),
        "dangling": _no_file(FILES + "dangling"), "missing": _no_file(FILES + "missing"),
        "odd": _file(FILES + ODD, "file", "root", "root", "0600", T, 4, "07b5fa755b79e8c578a270d8cda41700c9e0e46b")}
    assert state["executables"] == {"setuid": True, "plain": False, "dir": False, "sh": True, "none": False}


def test_managed_blocks_accounts_processes_commands_and_os_release_read_as_recorded():
    state = _read(*_recorded("files"))
    # exactly one block between the markers, or nothing: two blocks, a block left open or no file read as differing
    assert state["blocks"] == {"one": ["btl_tcp_disable_family = 6"], "two": None, "open": None, "empty": [],
                               "missing": None}
    assert state["accounts"] == {
        "root": _account("root", 0, 0, "/root", "/bin/bash", 0),
        "nobody": _account("nobody", 65534, 65534, "/nonexistent", "/usr/sbin/nologin", None),  # its group: nogroup
        "no-such-account": _account("no-such-account")}
    assert state["processes"] == {"np-sleeper": {"name": "np-sleeper", "running": True, "pid": 3399, "started": T},
                                  "no-such-process": {"name": "no-such-process", "running": False, "pid": None,
                                                      "started": None}}
    assert state["outputs"] == {"odd": ODD, "fails": None}  # trailing newlines dropped; a failed command: null
    assert state["checks"] == {"true": True, "false": False, "missing": False}
    # the first readable file, values unquoted as a shell would; comments and stray lines passed over
    assert state["os_release"] == {"NAME": "Debian GNU/Linux", "VERSION_ID": "13", "ID": "debian",
                                   "PRETTY_NAME": 'Debian "13"', "VERSION_CODENAME": "trixie"}


# A converged compute node, in the formats the recordings show (systemctl show and ss -Hltn as they print; systemd
# does not run where the recordings were made).
CONVERGED_ARGS = {"packages": ["munge", "slurmd"], "services": ["munge", "slurmd", "absent"],
                  "tcp_listening": True, "versions": {"slurm": ["slurmd", "-V"]}}
CONVERGED = "\n".join([
    "package\tmunge\t0.5.15-2\tii ", "package\tslurmd\t22.05.8-4+deb12u3\thi ",
    "service\t0\tActiveState=active", "service\t0\tUnitFileState=enabled",
    "service\t1\tActiveState=active", "service\t1\tUnitFileState=enabled",
    "service\t2\tActiveState=inactive", "service\t2\tUnitFileState=",
    "version\t0\t0\t" + _text("slurm 22.05.8\n"),
    "tcp\t0.0.0.0:6818", "tcp\t[::]:22", "tcp\t*:6818", "tcp\t127.0.0.53%lo:53", "tcp\t0.0.0.0:22", "end", ""])


def test_a_converged_node_reads_as_converged():
    assert _read(CONVERGED_ARGS, CONVERGED) == {
        "packages": {"munge": _package("munge", True, "ii", "0.5.15-2"),
                     "slurmd": _package("slurmd", True, "hi", "22.05.8-4+deb12u3", held=True)},
        "services": {"munge": {"name": "munge", "active": "active", "enabled": "enabled"},
                     "slurmd": {"name": "slurmd", "active": "active", "enabled": "enabled"},
                     "absent": {"name": "absent", "active": "inactive", "enabled": None}},
        "versions": {"slurm": "22.05.8"}, "tcp_listening": [22, 53, 6818]}


@pytest.mark.parametrize("name", ["dpkg-states", "fresh-node", "files", "gpu-node"])
def test_every_answer_has_the_keys_an_absent_thing_has(name):
    """The roles read fields without defaults: a field present for one node must be there for every node."""
    args, output = _recorded(name)
    spec = probe.normalise(args)
    found, absent = probe.parse_output(spec, output), probe.parse_output(spec, "end\n")
    assert found.keys() == absent.keys()
    for read in set(absent) - {"os_release", "tcp_listening", "apt_sources", "package_patterns", "pci_devices"}:
        assert found[read].keys() == absent[read].keys(), read
        for key, answer in absent[read].items():
            if isinstance(answer, dict):
                assert found[read][key].keys() == answer.keys(), (read, key)


# --- This machine, read again -----------------------------------------------------------------------------------------

def _run(script: str, cwd: Path) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, cwd=cwd, timeout=60, check=True).stdout


@pytest.mark.skipif(not (shutil.which("dpkg-query") and shutil.which("getent")), reason="needs a Debian-like machine")
def test_the_script_reads_this_machine_as_python_sees_it(tmp_path):
    (tmp_path / "file").write_text("content\n")
    (tmp_path / "file").chmod(0o640)
    paths = {"etc": "/etc", "passwd": "/etc/passwd", "file": str(tmp_path / "file"), "none": str(tmp_path / "none")}
    args = {"files": paths, "accounts": ["root"], "executables": {"sh": "sh", "python": sys.executable},
            "packages": ["dpkg"], "os_release": ["/etc/os-release"]}
    state = _read(args, _run(probe.build_script(probe.normalise(args)), tmp_path))
    for key, path in paths.items():
        read = state["files"][key]
        if not os.path.exists(path):
            assert read == _no_file(path)
            continue
        info = os.stat(path)
        assert read == _file(path, "directory" if stat.S_ISDIR(info.st_mode) else "file",
                             pwd.getpwuid(info.st_uid).pw_name, grp.getgrgid(info.st_gid).gr_name,
                             f"{stat.S_IMODE(info.st_mode):04o}", int(info.st_mtime), info.st_size,
                             hashlib.sha1(Path(path).read_bytes()).hexdigest() if stat.S_ISREG(info.st_mode) else None)
    root = pwd.getpwnam("root")
    assert state["accounts"]["root"] == _account("root", root.pw_uid, root.pw_gid, root.pw_dir, root.pw_shell,
                                                 grp.getgrnam("root").gr_gid)
    assert state["executables"] == {"sh": True, "python": True}
    assert state["packages"]["dpkg"]["installed"] and state["packages"]["dpkg"]["status"] == "ii"
    assert state["os_release"] == probe.os_release_fields(Path("/etc/os-release").read_text())


# --- Values are data --------------------------------------------------------------------------------------------------

HOSTILE = ["$(touch INJECTED)", "`touch INJECTED`", "a; touch INJECTED", "it's \"quoted\"", "two words",
           "line\nbreak", "tab\there", "*", "-rf", "${IFS}touch${IFS}INJECTED", "'; touch INJECTED; '"]


def test_no_value_reaches_the_shell_as_code(tmp_path):
    """Every value of every read, hostile as it may be, is one quoted word of the script: run, it creates nothing,
    reads each thing under its own name, and a command gets it back byte for byte."""
    for index, value in enumerate(HOSTILE):
        (tmp_path / f"f{index}").mkdir()
        (tmp_path / f"f{index}" / value.replace("/", "_")).write_text(value)
    args = {"packages": HOSTILE, "services": HOSTILE, "accounts": HOSTILE, "processes": HOSTILE,
            "files": {f"v{i}": str(tmp_path / f"f{i}" / v) for i, v in enumerate(HOSTILE)},
            "executables": {f"v{i}": v for i, v in enumerate(HOSTILE)},
            "outputs": {f"v{i}": ["printf", "%s", v] for i, v in enumerate(HOSTILE)},
            "checks": {f"v{i}": ["test", v, "=", v] for i, v in enumerate(HOSTILE)},
            "versions": {f"v{i}": ["echo", v] for i, v in enumerate(HOSTILE)},
            "python_versions": {f"v{i}": {"python": sys.executable, "name": v, "path": v} for i, v in enumerate(HOSTILE)},
            "blocks": {f"v{i}": {"path": v, "marker": v} for i, v in enumerate(HOSTILE)},
            "os_release": HOSTILE, "package_patterns": HOSTILE, "alternatives": HOSTILE,
            "pci_devices": {f"v{i}": v for i, v in enumerate(HOSTILE)}}
    spec = probe.normalise(args)
    script = probe.build_script(spec)
    for value in HOSTILE:
        assert shlex.quote(value) in script
    state = probe.parse_output(spec, _run(script, tmp_path))
    assert not (tmp_path / "INJECTED").exists()
    assert state["outputs"] == {f"v{i}": v.rstrip("\n") for i, v in enumerate(HOSTILE)}
    assert all(state["checks"].values())
    assert [state["files"][f"v{i}"]["sha1"] for i in range(len(HOSTILE))] == \
        [hashlib.sha1(v.encode()).hexdigest() for v in HOSTILE]
    assert list(state["packages"]) == HOSTILE and not any(p["installed"] for p in state["packages"].values())


# --- Wrong arguments and garbled output fail --------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    ({"package": ["munge"]}, "unknown read 'package'; the reads are accounts, alternatives, apt_sources"),
    ({"packages": "munge"}, "packages: 'munge' is not a list"),
    ({"packages": ["munge", ""]}, "packages[1]: '' is not a non-empty string"),
    ({"files": "/etc/hosts"}, "files: '/etc/hosts' is not a mapping"),
    ({"files": {"key": None}}, "files.key: None is not a non-empty string"),
    ({"checks": {"ok": "test -f /etc/hosts"}}, "checks.ok: 'test -f /etc/hosts' is not a command as a list of words"),
    ({"outputs": {"name": []}}, "outputs.name: [] is not a command as a list of words"),
    ({"blocks": {"mca": {"path": "/etc/x"}}}, "blocks.mca: {'path': '/etc/x'} is not a mapping of marker, path"),
    ({"blocks": {"mca": {"path": "/x", "marker": "m", "mark": "x"}}}, "is not a mapping of marker, path"),
    ({"python_versions": {"nvml": {"python": "/usr/bin/python3"}}}, "python_versions.nvml: "),
    ({"tcp_listening": "yes"}, "tcp_listening: 'yes' is not true or false"),
    ({"packages": ["a\0b"]}, "packages[0]: 'a\\x00b' is not a non-empty string without NUL bytes"),
    ({"apt_versions": "libnccl2"}, "apt_versions: 'libnccl2' is not a list"),
    ({"apt_versions": ["libnccl2", "*"]}, "apt_versions[1]: '*' is not a package name"),
    ({"apt_versions": ["-rf"]}, "apt_versions[0]: '-rf' is not a package name"),
    ({"apt_sources": "yes"}, "apt_sources: 'yes' is not true or false"),
    ({"pci_devices": ["/sys/bus/pci/devices"]}, "pci_devices: ['/sys/bus/pci/devices'] is not a mapping"),
])
def test_a_read_written_wrongly_is_refused_with_its_name(args, message):
    with pytest.raises(probe.ProbeError) as refused:
        probe.normalise(args)
    assert message in str(refused.value)


SPEC = probe.normalise({"files": {"a": "/a"}, "checks": {"ok": ["true"]}})


@pytest.mark.parametrize("output, message", [
    ("check\t0\t0\n", "stopped before its end"),
    ("", "stopped before its end"),
    ("file\t0\t81a4\troot\n" "end\n", "cannot read the output line"),
    ("check\t1\t0\nend\n", "the output names checks number '1', which the task did not read"),
    ("executable\t0\nend\n", "the output names executables number '0'"),
    ("version\tx\t0\tnot base64!\nend\n", "the output names versions"),
    ("output\t0\t0\tnot base64!\nend\n", "the output names outputs"),
    ("check\t0\t0\nfile\t0\tnot-hex\troot\troot\t1\t2\nend\n", "cannot read the output line"),
    ("tcp\t0.0.0.0:22\nend\n", "names listening ports, which the task did not read"),
    ("source\t0\t/etc/apt/sources.list:1\tDebian\tstable\tmain\nend\n", "names APT index targets, which the task"),
    ("matched\tnvidia-smi\t1-1\tii \nend\n", "names packages by pattern, which the task did not read"),
    ("policy\t0\tnvidia-smi:\nend\n", "the output names apt_versions number '0', which the task did not read"),
])
def test_output_cut_short_or_garbled_fails_instead_of_reading_as_absent(output, message):
    with pytest.raises(probe.ProbeError) as failed:
        probe.parse_output(SPEC, output)
    assert message in str(failed.value)


def test_a_login_shells_chatter_is_passed_over():
    output = "Welcome to node01\nlast login: yesterday\ncheck\t0\t0\nend\n"
    assert probe.parse_output(SPEC, output) == {"files": {"a": _no_file("/a")}, "checks": {"ok": True}}


# --- Through Ansible --------------------------------------------------------------------------------------------------

PLAYBOOK = """\
- name: Read this machine with node_probe
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read a few things
      node_probe:
        files: {{hosts: /etc/hosts, none: {tmp}/none}}
        checks: {{ok: ["true"]}}
        outputs: {{value: [printf, "%s", "{{{{ hostile }}}}"]}}
      register: read
    - name: Write the answer
      ansible.builtin.copy:
        content: "{{{{ read | to_json }}}}"
        dest: "{tmp}/answer{{{{ suffix }}}}.json"
        mode: "0644"
      check_mode: false
    - name: Name a read that does not exist
      node_probe:
        pakages: [munge]
      register: wrong
      ignore_errors: true
    - name: Write the refusal
      ansible.builtin.copy:
        content: "{{{{ wrong | to_json }}}}"
        dest: "{tmp}/wrong{{{{ suffix }}}}.json"
        mode: "0644"
      check_mode: false
"""


@pytest.fixture(scope="module")
def ansible_runs(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("node_probe")
    (tmp / "play.yml").write_text(PLAYBOOK.format(tmp=tmp))
    env = {**os.environ, "ANSIBLE_ACTION_PLUGINS": str(PLUGIN_DIR), "ANSIBLE_NOCOLOR": "1"}
    runs = {}
    for suffix, extra in (("", []), ("-check", ["--check"])):
        variables = {"ansible_python_interpreter": sys.executable, "suffix": suffix, "hostile": "$(touch INJECTED)"}
        (tmp / "vars.json").write_text(json.dumps(variables))
        done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", "localhost,", "-c", "local", "-vvv", *extra,
                               "-e", f"@{tmp / 'vars.json'}", str(tmp / "play.yml")],
                              capture_output=True, text=True, cwd=tmp, env=env, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:]
        runs[suffix or "run"] = {"stdout": done.stdout, "answer": json.loads((tmp / f"answer{suffix}.json").read_text()),
                                 "wrong": json.loads((tmp / f"wrong{suffix}.json").read_text())}
    runs["tmp"] = tmp
    return runs


@pytest.mark.parametrize("mode", ["run", "-check"])
def test_through_ansible_it_answers_data_changes_nothing_and_reads_in_check_mode(ansible_runs, mode):
    answer = ansible_runs[mode]["answer"]
    assert answer["changed"] is False and not answer.get("failed") and not answer.get("skipped")
    assert answer["files"]["hosts"]["exists"] and answer["files"]["none"] == _no_file(f"{ansible_runs['tmp']}/none")
    assert answer["checks"] == {"ok": True} and answer["outputs"] == {"value": "$(touch INJECTED)"}
    assert not (ansible_runs["tmp"] / "INJECTED").exists()


def test_through_ansible_it_is_one_command_on_the_node_and_nothing_copied(ansible_runs):
    """As the raw action: the connection executes one command for the task and puts no file (a module run puts its
    payload, or pipelines it into a Python on the node)."""
    task = ansible_runs["run"]["stdout"].split("TASK [Read a few things]")[1].split("TASK [")[0]
    assert task.count("<localhost> EXEC ") == 1 and "PUT " not in task and "python" not in task.split("EXEC")[1]


def test_through_ansible_a_wrong_read_fails_the_task_with_its_name(ansible_runs):
    wrong = ansible_runs["run"]["wrong"]
    assert wrong["failed"] and "unknown read 'pakages'" in wrong["msg"]


def test_every_role_reads_its_node_with_node_probe_not_raw():
    """The read-only probes of these roles answer data: no raw command of theirs is a read (changed_when: false); those
    left change something, and read back no more than whether they did."""
    roles = REPO / "playbooks" / "roles"
    reads, raw_reads = [], []
    for role in ("common", "munge", "slurm", "mpi", "certify", "platform", "gpu_base", "nvidia_driver", "cuda", "nccl",
                 "nvidia_fabricmanager", "dcgm", "rdma", "monitoring"):
        for path in sorted((roles / role / "tasks").glob("**/*.yml")):
            name = path.relative_to(roles / role / "tasks").as_posix()
            for task in _tasks(yaml.safe_load(path.read_text())):
                if "node_probe" in task:
                    reads.append(f"{role}/{name}")
                    assert task["name"].startswith("Read "), task["name"]
                elif "ansible.builtin.raw" in task and task.get("changed_when") is False:
                    raw_reads.append(f"{role}/{name}: {task['name']}")
    assert raw_reads == []
    gpu = {"cuda/default.yml", "dcgm/dcgm.yml", "dcgm/exporter.yml", "gpu_base/detect.yml", "nccl/install.yml", "nvidia_driver/headers.yml",
           "nvidia_driver/install.yml", "nvidia_driver/installed.yml", "nvidia_driver/reboot_now.yml",
           "nvidia_driver/resolve.yml", "nvidia_fabricmanager/fabricmanager.yml"}
    assert gpu <= set(reads)
    assert sorted(set(reads) - gpu) == ["certify/probe.yml", "common/probe.yml", "monitoring/grafana.yml", "monitoring/main.yml",
                                        "mpi/probe.yml", "munge/probe.yml", "platform/check.yml", "slurm/configure.yml", "slurm/probe.yml",
                                        "slurm/repository/Debian.yml"]


def _tasks(items):
    for task in items or []:
        yield from _tasks(task.get("block")) if "block" in task else [task]
