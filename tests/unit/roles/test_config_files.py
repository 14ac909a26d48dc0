"""The config_files action (playbooks/roles/platform/action_plugins/config_files.py): the one way the roles write
their configuration files, in real runs and in --check alike. So:

- it renders a template as the template action does (the golden files of test_slurm_render.py are written by it),
  and an undefined variable fails the task;
- it writes only what differs (content, owner, group, mode), and --check reports the same change and the same diff
  while writing nothing;
- whatever the size, the files travel as one put and are installed by one command; with the node's records known
  (node_probe's answer), a converged file costs no command at all;
- no path, owner or mode reaches the shell as code, however it is written.
"""
from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from role_plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]
PLUGIN_DIR = REPO / "playbooks" / "roles" / "platform" / "action_plugins"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
ODD = "odd dir $(touch INJECTED)/it's `x`;\n\"a\".conf"  # quotes, a newline, command substitution


def _load():
    return load_plugin(PLUGIN_DIR / "config_files.py", "config_files_under_test")


cf = _load()
ME, MY_GROUP = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name


# --- Arguments ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    ({"files": [{"dest": "/a", "template": "a.j2"}], "src": "x"}, "unknown argument 'src'"),
    ({"files": {"dest": "/a"}}, "files: {'dest': '/a'} is not a list of files"),
    ({"files": [{"dest": "/a"}]}, "files[0]: {'dest': '/a'} is not a mapping of dest and either template or content"),
    ({"files": [{"dest": "/a", "template": "a.j2", "content": "x"}]}, "either template or content"),
    ({"files": [{"dest": "relative", "content": "x"}]}, "files[0].dest: 'relative' is not an absolute path"),
    ({"files": [{"dest": "/etc/", "content": "x"}]}, "is not an absolute path of a file"),
    ({"files": [{"dest": "/a", "content": "x", "mode": "u+rw"}]}, "files[0].mode: 'u+rw' is not an octal mode"),
    ({"files": [{"dest": "/a", "content": "x", "owner": ""}]}, "files[0].owner: '' is not a user name"),
    ({"files": [{"dest": "/a", "content": "x"}, {"dest": "/a", "content": "y"}]}, "a path is named twice"),
    ({"files": [], "known": ["/a"]}, "known: is not a mapping of paths to node_probe's file records"),
])
def test_a_file_named_wrongly_is_refused_with_its_place_and_the_fix(args, message):
    with pytest.raises(cf.ConfigFilesError, match="config_files: ") as raised:
        cf.normalise(args)
    assert message in str(raised.value)


def test_a_mode_is_four_octal_digits_however_yaml_read_it():
    files, _ = cf.normalise({"files": [{"dest": "/a", "content": "", "mode": 0o640}, {"dest": "/b", "content": "",
                                                                                      "mode": "755"}]})
    assert [f["mode"] for f in files] == ["0640", "0755"]
    assert cf.normalise({"files": [{"dest": "/c", "content": ""}]})[0][0]["mode"] == "0644"  # the default


# --- What differs ---------------------------------------------------------------------------------------------------

def _want(**fields):
    return {"dest": "/etc/x.conf", "template": None, "content": "x", "mode": "0644", "owner": None, "group": None,
            **fields}


def _has(data: bytes, **fields):
    return {"exists": True, "type": "file", "owner": "root", "group": "root", "mode": "0644",
            "sha1": hashlib.sha1(data).hexdigest(), **fields}


@pytest.mark.parametrize("want, has, changes", [
    (_want(), _has(b"x"), []),
    (_want(), _has(b"y"), ["content"]),
    (_want(mode="0600"), _has(b"x"), ["mode"]),
    (_want(owner="slurm", group="slurm"), _has(b"x", group="slurm"), ["owner"]),
    (_want(owner="root", group="root", mode="0600"), _has(b"y", group="adm"), ["content", "group", "mode"]),
    (_want(owner="slurm"), {"exists": False, "type": None}, ["content"]),  # written whole, attributes with it
    (_want(), _has(b"x", type="directory"), ["content"]),
])
def test_only_what_differs_is_planned_and_unnamed_attributes_are_left_alone(want, has, changes):
    assert cf.plan(want, b"x", has) == changes


def test_the_diff_shows_text_notes_for_large_or_binary_files_and_attributes_alone():
    want = _want(mode="0600")
    assert cf.diff_entry(want, b"new\n", {"exists": False}, ["content"], 100) == {
        "before_header": "/etc/x.conf", "after_header": "/etc/x.conf", "before": "", "after": "new\n"}
    large = cf.diff_entry(want, b"n" * 101, {"exists": True, "size": 500, "text": None}, ["content"], 100)
    assert large["dst_larger"] == 100 and large["src_larger"] == 100 and "before" not in large
    binary = cf.diff_entry(want, b"\0", {"exists": True, "size": 2, "text": b"a\0"}, ["content"], 100)
    assert binary["dst_binary"] == 1 and binary["src_binary"] == 1
    assert cf.diff_entry(want, b"x", _has(b"x"), ["mode"], 100) == {
        "before_header": "/etc/x.conf", "after_header": "/etc/x.conf",
        "before": {"path": "/etc/x.conf", "mode": "0644"}, "after": {"path": "/etc/x.conf", "mode": "0600"}}


# --- The shell, run here --------------------------------------------------------------------------------------------

def _sh(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_the_read_answers_as_python_sees_the_files_odd_names_included(tmp_path):
    (tmp_path / "odd dir $(touch INJECTED)").mkdir()
    odd, small, absent = tmp_path / ODD, tmp_path / "small", tmp_path / "absent"
    odd.write_bytes(b"a\0b")
    small.write_text("text\n")
    os.chmod(odd, 0o600)
    done = _sh(cf.read_script([str(odd), str(small), str(absent), str(tmp_path)], [-1, 100, 100, 100]), tmp_path)
    odd_read, small_read, absent_read, dir_read = cf.parse_read(4, done.stdout)
    assert odd_read == {"exists": True, "type": "file", "owner": ME, "group": MY_GROUP, "mode": "0600", "size": 3,
                        "sha1": hashlib.sha1(b"a\0b").hexdigest(), "text": None}  # -1: its bytes are not read
    assert small_read["text"] == b"text\n" and absent_read == cf._absent() and dir_read["type"] == "directory"
    assert not list(tmp_path.rglob("INJECTED"))


@pytest.mark.parametrize("output, message", [
    ("file\t0\t81a4\troot\troot\t3\n", "no 'end' line"),
    ("file\t7\t81a4\troot\troot\t3\nend\n", "file number '7'"),
    ("file\t0\tzz\troot\nend\n", "cannot read the output line"),
])
def test_output_cut_short_or_garbled_fails_instead_of_reading_as_absent(output, message):
    with pytest.raises(cf.ConfigFilesError, match=message):
        cf.parse_read(1, output)


def test_one_command_installs_every_file_from_one_bundle_big_and_odd_ones_too(tmp_path):
    (tmp_path / "odd dir $(touch INJECTED)").mkdir()
    big = (b"NodeName=node%06d CPUs=192 RealMemory=2063000 Gres=gpu:H100-SXM:8\n" * 4000)  # ~260 KiB
    files = [_want(dest=str(tmp_path / ODD), mode="0640", owner=ME, group=MY_GROUP),
             _want(dest=str(tmp_path / "new" / "slurm.conf")), _want(dest=str(tmp_path / "attrs"), mode="0600")]
    (tmp_path / "attrs").write_text("kept\n")
    bundle, tmpdir = tmp_path / "t" / "bundle", tmp_path / "t"
    tmpdir.mkdir()
    bundle.write_bytes(b"odd\n" + big)
    writes = [(files[0], ["content"], 0, 4), (files[1], ["content"], 4, len(big)), (files[2], ["mode"], 0, 0)]
    done = _sh(cf.install_script(str(bundle), str(tmpdir), writes), tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ODD).read_bytes() == b"odd\n" and (tmp_path / "new" / "slurm.conf").read_bytes() == big
    assert oct((tmp_path / ODD).stat().st_mode & 0o7777) == "0o640"
    assert (tmp_path / "attrs").read_text() == "kept\n" and oct((tmp_path / "attrs").stat().st_mode & 0o777) == "0o600"
    assert not tmpdir.exists() and not list(tmp_path.rglob("*.gp-new")) and not list(tmp_path.rglob("INJECTED"))
    assert "NodeName" not in cf.install_script(str(bundle), str(tmpdir), writes)  # the content is never in it


def test_a_short_bundle_fails_before_anything_is_renamed(tmp_path):
    dest = tmp_path / "slurm.conf"
    dest.write_text("old\n")
    (tmp_path / "bundle").write_bytes(b"ne")
    done = _sh(cf.install_script(str(tmp_path / "bundle"), str(tmp_path / "t"), [(_want(dest=str(dest)), ["content"],
                                                                                  0, 4)]), tmp_path)
    assert done.returncode != 0 and "short write" in done.stderr and dest.read_text() == "old\n"


# --- Through Ansible ------------------------------------------------------------------------------------------------

PLAYBOOK = """\
- name: Write configuration files with config_files
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write the files
      config_files:
        files: "{{ files }}"
        known: "{{ known | default({}) }}"
        then: "{{ then | default([]) }}"
      register: written
      no_log: "{{ hide | default(false) }}"
    - name: Keep the answer
      ansible.builtin.copy:
        content: "{{ written | to_json }}"
        dest: "{{ answer }}"
        mode: "0644"
      check_mode: false
"""


class Node:
    """This machine as the node, reached by the local connection in a temporary directory."""

    def __init__(self, tmp: Path):
        self.tmp, self.runs = tmp, 0
        (tmp / "templates").mkdir()
        (tmp / "templates" / "slurm.conf.j2").write_text(
            "# {{ ansible_managed }}\nClusterName={{ cluster_name }}\n{% for n in nodes %}NodeName={{ n }}\n{% endfor %}")
        (tmp / "play.yml").write_text(PLAYBOOK)

    def run(self, files: list, *flags: str, **variables) -> tuple[dict, str]:
        """(the task's result, the output of its task) of one ansible-playbook run."""
        self.runs += 1
        answer = self.tmp / f"answer{self.runs}.json"
        values = {"ansible_python_interpreter": sys.executable, "files": files, "answer": str(answer),
                  "cluster_name": "golden", "nodes": ["a", "b"], **variables}
        (self.tmp / "vars.json").write_text(json.dumps(values))
        env = {**os.environ, "ANSIBLE_ACTION_PLUGINS": str(PLUGIN_DIR), "ANSIBLE_NOCOLOR": "1"}
        done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", "localhost,", "-c", "local", "-vvv", *flags,
                               "-e", f"@{self.tmp / 'vars.json'}", str(self.tmp / "play.yml")],
                              capture_output=True, text=True, cwd=self.tmp, env=env, timeout=300)
        assert "TASK [Write the files]" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
        task = done.stdout.split("TASK [Write the files]")[1].split("TASK [")[0]
        if not answer.exists():
            return {"failed": True, "rc": done.returncode}, task
        return json.loads(answer.read_text()), task


@pytest.fixture
def node(tmp_path) -> Node:
    return Node(tmp_path)


def _conf(node: Node, **fields) -> dict:
    return {"dest": str(node.tmp / "etc" / "slurm.conf"), "template": "slurm.conf.j2", "owner": ME, "group": MY_GROUP,
            "mode": "0644", **fields}


def _commands(task: str) -> tuple[int, int]:
    return task.count("<localhost> EXEC "), task.count("<localhost> PUT ")


TMPDIR = 2  # Ansible makes a temporary directory in two commands (the remote user's home, then mkdir)


def test_check_shows_the_diff_and_writes_nothing_then_a_run_writes_the_same_then_nothing(node):
    files = [_conf(node), {"dest": str(node.tmp / ODD), "content": "odd\n", "mode": "0600"}]
    (node.tmp / "odd dir $(touch INJECTED)").mkdir()
    checked, _ = node.run(files, "--check", "--diff")
    assert checked["changed"] and not (node.tmp / "etc").exists() and not (node.tmp / ODD).exists()
    assert [f["dest"] for f in checked["files"]] == [files[0]["dest"], files[1]["dest"]]
    assert checked["diff"][0] == {"before_header": files[0]["dest"], "after_header": files[0]["dest"], "before": "",
                                  "after": "# Ansible managed\nClusterName=golden\nNodeName=a\nNodeName=b\n"}
    written, task = node.run(files, "--diff")
    assert written["changed"] and written["diff"] == checked["diff"] and written["files"] == checked["files"]
    assert (node.tmp / "etc" / "slurm.conf").read_text() == checked["diff"][0]["after"]
    assert (node.tmp / ODD).read_text() == "odd\n" and oct((node.tmp / ODD).stat().st_mode & 0o777) == "0o600"
    # one read, the temporary directory, one put of the bundle, one command that installs both files
    assert _commands(task) == (1 + TMPDIR + 1, 1), task
    again, task = node.run(files, "--diff")
    assert not again["changed"] and again["files"] == [] and "diff" not in again and _commands(task) == (1, 0)
    assert not list(node.tmp.rglob("INJECTED")) and not list(node.tmp.rglob("*.gp-new"))


def test_a_changed_template_variable_and_a_changed_mode_are_what_changes(node):
    node.run([_conf(node)])
    os.chmod(node.tmp / "etc" / "slurm.conf", 0o600)
    mode_only, _ = node.run([_conf(node)], "--check", "--diff")
    assert mode_only["files"] == [{"dest": _conf(node)["dest"], "changes": ["mode"]}]
    assert mode_only["diff"][0]["after"] == {"path": _conf(node)["dest"], "mode": "0644"}
    nodes, _ = node.run([_conf(node)], "--diff", nodes=["a", "c"])
    assert nodes["files"][0]["changes"] == ["content", "mode"]
    assert "-NodeName=b\n" not in nodes["diff"][0]["before"] and "NodeName=c" in nodes["diff"][0]["after"]
    assert (node.tmp / "etc" / "slurm.conf").read_text().endswith("NodeName=a\nNodeName=c\n")
    assert oct((node.tmp / "etc" / "slurm.conf").stat().st_mode & 0o777) == "0o644"


def test_a_file_bigger_than_a_command_line_goes_in_one_put_and_one_command(node):
    nodes = [f"gpu{i:05d} CPUs=192 Boards=1 SocketsPerBoard=2 CoresPerSocket=48 RealMemory=2063000" for i in range(3000)]
    result, task = node.run([_conf(node)], "--diff", nodes=nodes)
    written = (node.tmp / "etc" / "slurm.conf").read_bytes()
    assert len(written) > 200 * 1024 and written.count(b"NodeName=") == 3000
    assert result["changed"] and result["diff"][0]["src_larger"] > 0 and _commands(task) == (1 + TMPDIR + 1, 1)
    assert not node.run([_conf(node)], nodes=nodes)[0]["changed"]


def test_known_records_spare_the_read_and_a_converged_file_costs_no_command(node):
    node.run([_conf(node)])
    path = node.tmp / "etc" / "slurm.conf"
    record = {"type": "file", "owner": ME, "group": MY_GROUP, "mode": "0644",
              "sha1": hashlib.sha1(path.read_bytes()).hexdigest()}
    result, task = node.run([_conf(node)], known={str(path): record})
    assert not result["changed"] and _commands(task) == (0, 0)
    stale, task = node.run([_conf(node)], known={str(path): {**record, "sha1": "0" * 40}})
    assert stale["changed"] and _commands(task) == (TMPDIR + 1, 1)  # no read: the temporary directory, the install


def test_then_runs_after_the_files_in_the_same_command_quoted_and_only_outside_check(node):
    log = node.tmp / "odd log $(touch INJECTED)"
    files = [_conf(node)]
    then = [["sh", "-c", 'cat "$1" >>"$2"', "sh", files[0]["dest"], str(log)], ["sh", "-c", 'echo done >>"$0"',
                                                                                 str(log)]]
    checked, task = node.run(files, "--check", then=then)
    assert checked["changed"] and checked["then"] == [" ".join(shlex.quote(w) for w in argv) for argv in then]
    assert not log.exists()
    written, task = node.run(files, then=then)  # the file is in place before the commands run, in one command
    assert written["changed"] and log.read_text().endswith("NodeName=b\ndone\n") and _commands(task) == (
        1 + TMPDIR + 1, 1)
    again, task = node.run(files, then=then[1:])  # nothing to write: the commands alone, one command, no put
    assert again["changed"] and again["files"] == [] and log.read_text().endswith("done\ndone\n")
    assert _commands(task) == (1 + 1, 0)
    assert not node.run(files)[0]["changed"] and not list(node.tmp.rglob("INJECTED"))


def test_a_failing_then_command_fails_the_task_with_its_stderr(node):
    result, task = node.run([_conf(node)], then=[["sh", "-c", "echo no unit here >&2; exit 5"], ["touch", "never"]])
    assert result.get("failed") and not (node.tmp / "never").exists(), task
    assert "no unit here" in task and (node.tmp / "etc" / "slurm.conf").exists()


@pytest.mark.parametrize("then", ["systemctl restart munge", [["systemctl", ""]], [[]], [["systemctl", 5]]])
def test_then_that_is_not_a_list_of_word_lists_is_refused(then):
    with pytest.raises(cf.ConfigFilesError, match="then: .* is not a list of commands"):
        cf.then_commands({"then": then})


def test_an_undefined_variable_or_a_missing_template_fails_the_task(node):
    (node.tmp / "templates" / "bad.j2").write_text("{{ not_defined_anywhere }}\n")
    for template in ("bad.j2", "missing.j2"):
        result, task = node.run([_conf(node, template=template)])
        assert result.get("failed") and not (node.tmp / "etc").exists(), task


def test_no_log_hides_the_diff_and_the_content(node):
    files = [{"dest": str(node.tmp / "secret.conf"), "content": "StoragePass=hunter2\n", "mode": "0600"}]
    result, task = node.run(files, "--diff", hide=True)
    assert "hunter2" not in json.dumps(result) and "hunter2" not in task
    assert (node.tmp / "secret.conf").read_text() == "StoragePass=hunter2\n"


def test_the_roles_write_their_files_with_config_files_only():
    """No role task of slurm writes a file any other way (template, copy, or a command carrying content)."""
    found = []
    for path in sorted((REPO / "playbooks" / "roles" / "slurm" / "tasks").rglob("*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            if any(key.split(".")[-1] in ("template", "copy") for key in task) or "b64encode" in str(task):
                found.append(f"{path.name}: {task['name']}")
    assert found == []


def _tasks(items):
    for task in items or []:
        yield from _tasks(task.get("block")) if "block" in task else [task]
