"""deploy --check shows what each file would become: Ansible's diff results as unified diffs, one block per distinct
diff with the hostlist of the hosts that share it, carried in --json with `rc` the command's exit code; a no_log
task's diff is never shown (its result is censored, and a censored result is refused anyway)."""
from __future__ import annotations

import io
import json
import secrets
import sys
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from provision.adaptors.ansible import PlaybookRun, run_playbook
from provision.cli import deploy_view
from provision.deploy import diffs
from provision.deploy.events import EventTracker
from provision.deploy.records import DeployResult
from provision.errors import EXIT_CHANGES, EXIT_FAILED, EXIT_OK

HOSTS_DIFF = [  # blockinfile under --diff: the content, then the file's attributes
    {"before": "127.0.0.1 localhost\n# BEGIN gpu-provision\n10.0.0.1 ctl01\n# END gpu-provision\n",
     "after": "127.0.0.1 localhost\n# BEGIN gpu-provision\n10.0.0.1 ctl01\n10.0.0.2 cn01\n# END gpu-provision\n",
     "before_header": "/etc/hosts (content)", "after_header": "/etc/hosts (content)"},
    {"before": {"path": "/etc/hosts"}, "after": {"path": "/etc/hosts"},
     "before_header": "/etc/hosts (file attributes)", "after_header": "/etc/hosts (file attributes)"},
]


def test_a_content_diff_reads_as_diff_u_and_unchanged_attributes_add_nothing():
    assert diffs.unified(HOSTS_DIFF) == (
        "--- /etc/hosts (content)\n+++ /etc/hosts (content)\n@@ -1,4 +1,5 @@\n 127.0.0.1 localhost\n"
        " # BEGIN gpu-provision\n 10.0.0.1 ctl01\n+10.0.0.2 cn01\n # END gpu-provision\n")


@pytest.mark.parametrize("diff, expected", [
    ({"before": {"mode": "0644"}, "after": {"mode": "0600"}, "before_header": "f", "after_header": "f"},
     '--- f\n+++ f\n@@ -1,3 +1,3 @@\n {\n-    "mode": "0644"\n+    "mode": "0600"\n }\n'),
    ({"before": "a", "after": "b"}, "--- before\n+++ after\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n"
                                    "\\ No newline at end of file\n"),
    ({"dst_binary": 1}, "diff skipped: the file on the node is binary\n"),
    ({"dst_larger": 104448}, "diff skipped: the file on the node is larger than 104448 bytes\n"),
    ({"prepared": "The following NEW packages will be installed: iperf3"},
     "The following NEW packages will be installed: iperf3\n"),
    ({"before": "x\n", "after": "x\n"}, ""),
])
def test_each_kind_of_diff_result_has_its_text(diff, expected):
    assert diffs.unified(diff) == expected


def test_control_characters_from_a_node_reach_the_terminal_escaped():
    text = diffs.unified({"before": "ok\n", "after": "\x1b]0;owned\x07ok\n"})
    assert "\x1b" not in text and "\x07" not in text and "+\\x1b]0;owned\\x07ok" in text


def test_a_huge_diff_is_cut_and_says_so():
    text = diffs.unified({"before": "", "after": "".join(f"line {i}\n" for i in range(1000))})
    assert len(text.splitlines()) == diffs.MAX_LINES + 1 and "more lines" in text.splitlines()[-1]


@pytest.mark.parametrize("res", [
    {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified for this result"},
    {"changed": True, "_ansible_no_log": True, "diff": {"before": "password=old\n", "after": "password=s3cret\n"}},
    {"changed": True, "results": [{"_ansible_no_log": True, "diff": {"before": "", "after": "s3cret\n"}}]},
])
def test_a_no_log_result_never_gives_a_diff(res):
    assert diffs.task_diff("Render slurmdbd.conf", res) is None


def _ev(kind: str, **data) -> dict:
    return {"event": kind, "event_data": data}


def _check_run(events: list[dict]) -> DeployResult:
    tracker = EventTracker()
    for event in events:
        tracker(event)
    return DeployResult(hosts=tracker.results(), artifacts_dir=Path("/runs/1"), rc=0, check_mode=True)


def _hosts_events(*hosts: str) -> list[dict]:
    task = "List every cluster node in /etc/hosts (from the inventory, not live facts)"
    return [_ev("playbook_on_task_start", task=task)] + [
        _ev("runner_on_ok", host=h, task=task, res={"changed": True, "diff": HOSTS_DIFF}) for h in hosts]


def test_the_same_diff_on_many_hosts_is_one_block_with_their_hostlist_and_json_carries_it():
    result = _check_run(_hosts_events("cn01", "cn02", "cn03") + [
        _ev("runner_on_ok", host="cn02", task="Render cgroup.conf",
            res={"changed": True, "diff": {"before": "a\n", "after": "b\n", "before_header": "/etc/slurm/cgroup.conf",
                                           "after_header": "cgroup.conf.j2"}}),
        _ev("runner_on_ok", host="ctl01", task="Read the hosts", res={"changed": False, "diff": HOSTS_DIFF}),
        _ev("playbook_on_stats", ok={"cn01": 1}, changed={"cn01": 1, "cn02": 2, "cn03": 1})])
    blocks = result.diffs
    assert [(b.hostlist, b.task) for b in blocks] == [
        ("cn[01-03]", "List every cluster node in /etc/hosts (from the inventory, not live facts)"),
        ("cn02", "Render cgroup.conf")]
    data = json.loads(json.dumps(result.as_dict()))
    assert data["rc"] == EXIT_CHANGES == result.exit_code and data["ansible_rc"] == 0
    assert data["diffs"][0] == {"task": blocks[0].task, "hosts": "cn[01-03]", "nodes": ["cn01", "cn02", "cn03"],
                                "diff": diffs.unified(HOSTS_DIFF)}
    assert "diffs" not in data["hosts"][0]  # once, folded, not once per host


@pytest.mark.parametrize("rc, check, changed, code", [
    (0, True, True, EXIT_CHANGES), (0, True, False, EXIT_OK), (2, True, True, EXIT_FAILED), (0, False, True, EXIT_OK),
    (2, False, False, EXIT_FAILED)])
def test_json_rc_is_the_command_s_exit_code(rc, check, changed, code):
    events = _hosts_events("cn01") if changed else []
    tracker = EventTracker()
    for event in events:
        tracker(event)
    result = DeployResult(hosts=tracker.results(), artifacts_dir=Path("/r"), rc=rc, check_mode=check)
    assert result.exit_code == code == result.as_dict()["rc"] and result.as_dict()["ansible_rc"] == rc


def test_the_recap_prints_each_diff_once_under_the_hosts_that_share_it():
    result = _check_run(_hosts_events("cn01", "cn02"))
    buffer = io.StringIO()
    deploy_view.recap(result, Console(file=buffer, width=200, markup=False, emoji=False, highlight=False))
    shown = buffer.getvalue()
    assert "diff on cn[01-02] (2 hosts): List every cluster node in /etc/hosts" in shown
    assert shown.count("+10.0.0.2 cn01\n") == 1 and "--- /etc/hosts (content)\n" in shown
    assert "drift on cn01, cn02" in shown


PLAY = """\
- name: Configure
  hosts: all
  gather_facts: false
  tasks:
    - name: Render the public file
      ansible.builtin.copy: {content: "line one\\nline two, new\\n", dest: "{{ out }}/public.conf", mode: "0644"}
    - name: Render the secret file
      ansible.builtin.copy: {content: "password={{ lookup('file', secret_file) }}\\n", dest: "{{ out }}/secret.conf",
                             mode: "0600"}
      no_log: true
    - name: Put the secret in a managed block
      ansible.builtin.blockinfile: {path: "{{ out }}/block.conf", block: "key {{ lookup('file', secret_file) }}"}
      no_log: true
    - name: Manage a block
      ansible.builtin.blockinfile: {path: "{{ out }}/hosts", block: "10.0.0.2 cn01"}
"""


def test_a_real_check_run_shows_the_diffs_and_never_a_no_log_task_s(tmp_path):
    """ansible-playbook --check --diff for real (local connection, two hosts): the public file's and the block's
    diffs come back folded; the secret of the no_log tasks is in no result, no JSON and no printed line."""
    secret = secrets.token_hex(16)
    (tmp_path / "secret").write_text(secret)
    out = tmp_path / "files"
    out.mkdir()
    (out / "public.conf").write_text("line one\nline two\n")
    (out / "secret.conf").write_text("password=old\n")
    (out / "block.conf").write_text("key old\n")
    (out / "hosts").write_text("127.0.0.1 localhost\n")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "play.yml").write_text(PLAY)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"cn01": local, "cn02": local}}}))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    run = PlaybookRun(private_data_dir=tmp_path / "run", project_dir=tmp_path / "project", playbook="play.yml",
                      inventory=tmp_path / "hosts.yml", ansible_cfg=tmp_path / "ansible.cfg", check=True,
                      extra_vars={"out": str(out), "secret_file": str(tmp_path / "secret")})
    tracker = EventTracker()
    outcome = run_playbook(run, tracker)
    result = DeployResult(hosts=tracker.results(), artifacts_dir=outcome.artifacts_dir, rc=outcome.rc,
                          check_mode=True)

    assert [(b.hostlist, b.task) for b in result.diffs] == [("cn[01-02]", "Render the public file"),
                                                            ("cn[01-02]", "Manage a block")]
    assert "-line two\n+line two, new\n" in result.diffs[0].text and "+10.0.0.2 cn01" in result.diffs[1].text
    assert (out / "public.conf").read_text() == "line one\nline two\n"  # check mode changed nothing
    assert result.exit_code == EXIT_CHANGES and result.as_dict()["rc"] == EXIT_CHANGES
    buffer = io.StringIO()
    deploy_view.recap(result, Console(file=buffer, width=200, markup=False, emoji=False, highlight=False))
    assert secret not in json.dumps(result.as_dict()) and secret not in buffer.getvalue()
    assert "line two, new" in buffer.getvalue()
