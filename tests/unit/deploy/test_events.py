"""The event tracker: per-host recap, first failing task and message, check-mode changes."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.deploy.events import EventTracker, failure_message, host_key_message
from provision.deploy.records import DeployResult


def _ev(kind: str, **data) -> dict:
    return {"event": kind, "event_data": data}


def _run(events: list[dict]) -> EventTracker:
    tracker = EventTracker()
    for event in events:
        assert tracker(event) is True
    return tracker


def test_recap_counts_and_first_failure_per_host():
    tracker = _run([
        _ev("playbook_on_play_start", play="Prepare every node"),
        _ev("playbook_on_task_start", task="Install the base packages"),
        _ev("runner_on_ok", host="n1", task="Install the base packages", res={"changed": True}),
        _ev("runner_on_failed", host="n2", task="Install the base packages",
            res={"msg": "No package matching 'nope' is available"}),
        _ev("runner_on_unreachable", host="n3", task="Gathering Facts",
            res={"msg": "Failed to connect to the host via ssh: connect to host 10.99.0.13 port 22: No route to host"}),
        _ev("runner_on_failed", host="n2", task="Later task", res={"msg": "second failure"}),
        _ev("playbook_on_stats", ok={"n1": 5, "n2": 1}, changed={"n1": 1}, failures={"n2": 1}, dark={"n3": 1},
            skipped={"n1": 2}),
    ])
    hosts = {h.host: h for h in tracker.results()}
    assert (hosts["n1"].status, hosts["n1"].ok, hosts["n1"].changed, hosts["n1"].skipped) == ("changed", 5, 1, 2)
    assert hosts["n1"].changed_tasks == ["Install the base packages"]
    assert (hosts["n2"].status, hosts["n2"].failed_task) == ("failed", "Install the base packages")
    assert hosts["n2"].message == "No package matching 'nope' is available"
    assert hosts["n3"].status == "unreachable" and "No route to host" in hosts["n3"].message
    assert tracker.progress.play == "Prepare every node" and tracker.stats_seen


def test_ignored_failures_do_not_count():
    tracker = _run([_ev("runner_on_failed", host="n1", task="probe", ignore_errors=True, res={"msg": "x"}),
                    _ev("playbook_on_stats", ok={"n1": 1})])
    assert tracker.results()[0].status == "ok" and tracker.results()[0].failed_task is None


def test_failure_message_prefers_msg_then_last_stderr_line_and_hides_no_log():
    assert failure_message({"msg": "boom\nbang"}) == "boom bang"
    assert failure_message({"stderr": "warning\nE: Unable to locate package"}) == "E: Unable to locate package"
    assert "no_log" in failure_message({"censored": "the output has been hidden", "msg": "secret"})
    assert failure_message({}) == "failed without a message"


def test_progress_callback_sees_each_task():
    seen = []
    tracker = EventTracker(lambda p: seen.append(p.task))
    tracker(_ev("playbook_on_task_start", task="A"))
    tracker(_ev("playbook_on_task_start", task="B"))
    tracker(_ev("verbose"))
    assert seen == ["A", "B"]


def test_commands_check_mode_skipped_because_they_would_run_count_as_changes():
    tracker = EventTracker()
    tracker({"event": "runner_on_ok", "event_data": {"host": "n1", "task": "Render slurm.conf", "res": {"changed": True}}})
    tracker.would_run([("n2", "Create the volume"), ("n2", "Create the volume"), ("n1", "Start the volume")])
    by_host = {h.host: h for h in tracker.results()}
    assert by_host["n1"].changed_tasks == ["Render slurm.conf", "Start the volume"]
    assert by_host["n2"].changed_tasks == ["Create the volume"] and by_host["n2"].status == "changed"
    result = DeployResult(hosts=tracker.results(), artifacts_dir=Path("/tmp"), rc=0, check_mode=True)
    assert result.changed_hosts == ["n1", "n2"]


CHANGED = ("Task failed: Failed to connect to the host via ssh: @@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS "
           "CHANGED!     @\r\nOffending ECDSA key in /st/ssh/known_hosts:1\r\n  remove with:\r\n  ssh-keygen -f "
           "\"/st/ssh/known_hosts\" -R \"[10.0.0.5]:2222\"\r\nHost key for [10.0.0.5]:2222 has changed and you have "
           "requested strict checking.\r\nHost key verification failed.")
UNKNOWN = ("Task failed: Failed to connect to the host via ssh: No ED25519 host key is known for 10.0.0.5 and you have "
           "requested strict checking.\r\nHost key verification failed.")


@pytest.mark.parametrize("ssh_error, expected", [
    (CHANGED, "host key changed for [10.0.0.5]:2222: ssh refused to log in (an impostor at the node's address, or "
              "the node was reinstalled); if the change is expected: ssh-keygen -f /st/ssh/known_hosts -R "
              "'[10.0.0.5]:2222', then `provision preflight SPEC --accept-new-host-keys`"),
    (UNKNOWN, "host key unknown for 10.0.0.5: ssh refused to log in (the cluster's known_hosts has no key for it); "
              "verify the node, then record its key with `provision preflight SPEC --accept-new-host-keys`"),
])
def test_a_refused_host_key_is_reported_with_its_fix(ssh_error, expected):
    assert host_key_message(ssh_error) == expected
    assert failure_message({"msg": ssh_error, "unreachable": True}) == expected
