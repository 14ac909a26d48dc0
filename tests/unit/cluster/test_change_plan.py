"""Changing a running cluster, without nodes: the node diff, the file lines, the refusals, the drain and hold steps
against a fake controller, and `plan`'s exit codes against a recorded state."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from provision.cluster import change, converge, lifecycle
from provision.errors import EXIT_BAD_INPUT, EXIT_CHANGES
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult
from provision.settings import applied, planned
from provision.slurm import admin
from provision.spec.loader import load_spec
from provision.state import ClusterState

SPEC = """\
name: change
provider: {{type: sandbox, subnet: 10.98.7.0/24}}
node_groups:
  - {{name: {ctl}, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute], count: {count}}}
"""


def node(name: str, group: str = "cn", roles=("compute",), **extra) -> NodeInfo:
    return NodeInfo(name=name, group=group, roles=roles, partition=group if "compute" in roles else None, **extra)


CTL = node("ctl01", "ctl", ("controller",))


def test_the_node_diff_names_adds_removes_and_what_changed():
    old = [CTL, node("cn01", address="10.0.0.2"), node("cn02"), node("cn03")]
    new = [CTL, node("cn01", address=None), node("cn02", gpu_model="H100-SXM", gpu_count=8), node("cn04")]
    found = {c.name: c for c in change.diff_nodes(old, new)}
    assert {n: c.action for n, c in found.items()} == {"ctl01": "unchanged", "cn01": "unchanged", "cn02": "change",
                                                         "cn04": "add", "cn03": "remove"}
    assert found["cn02"].details == ("gpu_model None -> H100-SXM", "gpu_count 0 -> 8")
    assert [c.action for c in change.diff_nodes(None, new)] == ["add"] * 4


def test_removing_the_controller_or_every_compute_node_is_refused():
    old = [CTL, node("cn01"), node("cn02")]
    assert change.refusal(change.diff_nodes(old, old[:2]), old, old[:2]) is None
    head = [node("head01", "head", ("controller",)), node("cn01")]
    assert "controller ctl01" in change.refusal(change.diff_nodes(old, head), old, head)
    assert "every compute node" in change.refusal(change.diff_nodes(old, [CTL]), old, [CTL])
    assert change.refusal(change.diff_nodes(None, [CTL]), None, [CTL]) is None


def test_the_cluster_wide_lines_that_follow_the_node_set():
    before = ClusterInfo(name="c", provider="sandbox", nodes=(CTL, node("cn01", address="10.0.0.2")))
    after = before.model_copy(update={"nodes": before.nodes + (node("cn02", address="10.0.0.3"),)})
    files = change.diff_files(before, after, {})
    assert "+10.0.0.3 cn02" in files["/etc/hosts"]
    assert "-PartitionName=cn Nodes=cn01 Default=YES" in files["slurm.conf"]
    assert "+PartitionName=cn Nodes=cn[01-02] Default=YES" in files["slurm.conf"]
    assert change.diff_files(before, before, {}) == {}


def test_nodes_an_interrupted_change_left_unfinished_are_still_to_add():
    changes = [change.NodeChange("cn01", "unchanged", "cn"), change.NodeChange("cn02", "unchanged", "cn"),
               change.NodeChange("cn03", "unchanged", "cn")]
    found = change.unfinished(changes, {"cn01", "cn03"}, ["cn03"])
    assert [(c.name, c.action) for c in found] == [("cn01", "unchanged"), ("cn02", "add"), ("cn03", "add")]
    assert found[2].details == ("held until certify passes",)


class Controller:
    """A fake controller: answers squeue from a script of job lists, records every command."""

    def __init__(self, jobs: list[str], held: str = "") -> None:
        self.jobs, self.held, self.commands = list(jobs), held, []

    def __call__(self, command: str) -> CommandResult:
        self.commands.append(command)
        if command.startswith("squeue"):
            return CommandResult("ctl01", 0, self.jobs.pop(0) if len(self.jobs) > 1 else self.jobs[0], "")
        if command.startswith("scontrol -o show reservation"):
            if not self.held:
                return CommandResult("ctl01", 1, "", "Reservation gpu_provision_certify not found")
            return CommandResult("ctl01", 0, f"ReservationName=gpu_provision_certify Nodes={self.held} "
                                             "NodeCnt=2 Flags=MAINT", "")
        return CommandResult("ctl01", 0, "", "")


def test_a_removal_drains_then_waits_for_the_jobs_to_end():
    ctl = Controller(["12\n", "12\n", ""])
    admin.drain_for_removal(ctl, ["cn02", "cn03"], timeout_s=30, sleep=lambda s: None)
    assert ctl.commands[0] == ("scontrol update nodename='cn[02-03]' state=drain "
                               "reason='gpu-provision: removing from the cluster'")
    assert not any(c.startswith("scancel") for c in ctl.commands)


def test_jobs_outliving_the_drain_timeout_stop_the_removal_unless_forced():
    with pytest.raises(admin.DrainTimeout, match="still run job.* 12.*nothing was removed"):
        admin.drain_for_removal(Controller(["12\n"]), ["cn02"], timeout_s=0, sleep=lambda s: None)
    forced = Controller(["12\n", ""])
    admin.drain_for_removal(forced, ["cn02"], timeout_s=0, force=True, sleep=lambda s: None)
    assert "scancel --nodelist=cn02" in forced.commands


def test_release_takes_passing_nodes_out_of_the_hold_reservation():
    partly = Controller([""], held="cn[03-04]")
    assert admin.release(partly, ["cn03"]) == ["cn04"]
    assert partly.commands[-1] == "scontrol update ReservationName=gpu_provision_certify Nodes=cn04"
    whole = Controller([""], held="cn[03-04]")
    assert admin.release(whole, ["cn03", "cn04"]) == []
    assert whole.commands[-1] == "scontrol delete ReservationName=gpu_provision_certify"
    nothing = Controller([""])
    assert admin.release(nothing, ["cn03"]) == [] and len(nothing.commands) == 1


def test_only_nodes_joining_a_deployed_cluster_are_held(tmp_path):
    state = ClusterState(tmp_path, "c")
    cluster = ClusterInfo(name="c", provider="sandbox", nodes=(CTL, node("cn01"), node("cn02")))
    assert converge.with_hold(state, cluster) == cluster  # a first deploy: the whole cluster is certified
    state.mark_stage("deploy", nodes=["ctl01", "cn01"])
    held = converge.with_hold(state, cluster)
    assert held.vars[converge.HOLD_VAR] == "cn02" and converge.held(state, cluster) == ["cn02"]
    state.forget_stage_nodes(["cn01"])
    assert state.stage_nodes("deploy") == {"ctl01"}


def test_a_stage_is_covered_for_the_right_node_sets(tmp_path):
    state = ClusterState(tmp_path, "c")
    state.mark_stage("deploy", nodes=["ctl01", "cn01", "cn02"])
    state.mark_stage("certify", nodes=["ctl01", "cn01", "cn02"])
    assert not lifecycle._covered(state, "deploy", ["ctl01", "cn01"])  # the files must lose cn02
    assert lifecycle._covered(state, "certify", ["ctl01", "cn01"])  # nothing new to certify
    assert not lifecycle._covered(state, "certify", ["ctl01", "cn01", "cn03"])
    state.write("stages", {"done": ["deploy"]})  # a state from before node tracking
    assert lifecycle._covered(state, "deploy", ["ctl01"])


def cli(*args: str, state_dir) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess (its error handling included), state under state_dir."""
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PROVISION_STATE_DIR": str(state_dir)})


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A spec file and a state that says the cluster has ctl01, cn01 and cn02, deployed with what the spec renders."""
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "change.yaml"
    path.write_text(SPEC.format(ctl="ctl", count=2))
    spec = load_spec(path)
    state = ClusterState.for_spec(spec)
    change.save_applied(state, lifecycle.planned_cluster(spec).nodes)
    state.mark_stage("deploy", nodes=["ctl01", "cn01", "cn02"])
    applied.record(state, planned.settings_now(spec, lifecycle.planned_cluster(spec)))
    return path, state


def test_plan_exits_0_without_changes_and_4_with_them(recorded):
    path, state = recorded
    same = cli("plan", str(path), state_dir=state.root)
    assert same.returncode == 0 and "no changes" in same.stdout
    path.write_text(SPEC.format(ctl="ctl", count=3))
    grown = cli("plan", str(path), "--json", state_dir=state.root)
    assert grown.returncode == EXIT_CHANGES
    body = json.loads(grown.stdout)["change"]
    assert [n["name"] for n in body["nodes"] if n["action"] == "add"] == ["cn03"] and body["changed"]


def test_up_refuses_to_remove_the_controller_and_changes_nothing(recorded):
    path, state = recorded
    before = sorted(p.name for p in state.path.iterdir())
    applied = (state.path / "applied.json").read_text()
    path.write_text(SPEC.format(ctl="head", count=2))
    result = cli("up", str(path), state_dir=state.root)
    assert result.returncode == EXIT_BAD_INPUT and "controller ctl01" in result.stderr
    assert "Traceback" not in result.stderr
    assert (state.path / "applied.json").read_text() == applied
    assert sorted(p.name for p in state.path.iterdir()) == before


CHANGED = "health: {interval_s: 120}\nsoftware: {slurm: {config: {KillWait: 45}}}\n"


def test_plan_shows_each_setting_per_node_with_the_daemons_it_restarts(recorded):
    path, state = recorded
    path.write_text(SPEC.format(ctl="ctl", count=2) + CHANGED)
    result = cli("plan", str(path), "--json", state_dir=state.root)
    assert result.returncode == EXIT_CHANGES, result.stderr
    body = json.loads(result.stdout)["change"]
    settings = {s["variable"]: s for s in body["settings"]}
    assert settings["slurm_health_interval"]["before"] == 300 and settings["slurm_health_interval"]["after"] == 120
    assert settings["slurm_conf_parameters"]["after"] == {"KillWait": "45"}
    for item in settings.values():
        assert item["hostlist"] == "cn[01-02],ctl01" and item["restarts"] == ["slurmctld", "slurmd"]
    assert body["restarts"] == ["slurmctld", "slurmd"]
    assert {n["action"] for n in body["nodes"]} == {"change"}
    assert body["nodes"][0]["details"] == ["settings: slurm_conf_parameters, slurm_health_interval"]
    assert body["files"]["slurm.conf"][:2] == ["--- slurm.conf (applied)", "+++ slurm.conf (spec)"]
    assert {"-HealthCheckInterval=300", "+HealthCheckInterval=120", "+KillWait=45"} <= set(body["files"]["slurm.conf"])
    text = cli("plan", str(path), state_dir=state.root).stdout
    assert "slurm_health_interval" in text and "300 -> 120" in text and "restarts: slurmctld, slurmd" in text
    assert "2 setting(s) change, restarting slurmctld, slurmd" in text


def test_plan_shows_active_checks_turned_on_with_the_preemption_they_bring(recorded):
    path, state = recorded
    path.write_text(SPEC.format(ctl="ctl", count=2) + "health: {active: {interval_s: 600}}\n")
    result = cli("plan", str(path), "--json", state_dir=state.root)
    assert result.returncode == EXIT_CHANGES, result.stderr
    body = json.loads(result.stdout)["change"]
    settings = {s["variable"]: s for s in body["settings"]}
    assert settings["slurm_active_enabled"]["before"] is False and settings["slurm_active_enabled"]["after"] is True
    assert set(settings["slurm_active_enabled"]["restarts"]) == {"slurmctld", "slurmd"}  # slurm.conf changes
    assert settings["slurm_active_interval"]["after"] == 600
    assert {"+PreemptType=preempt/partition_prio", "+PreemptMode=CANCEL"} <= set(body["files"]["slurm.conf"])


def test_up_deploys_again_for_a_setting_and_says_why(recorded):
    path, state = recorded
    spec = load_spec(path)
    provider = lifecycle.get_provider(spec)
    assert lifecycle._why_deploy(provider, spec, ["ctl01", "cn01", "cn02"]) is None  # the record matches the spec
    path.write_text(SPEC.format(ctl="ctl", count=2) + CHANGED)
    changed = load_spec(path)
    why = lifecycle._why_deploy(lifecycle.get_provider(changed), changed, ["ctl01", "cn01", "cn02"])
    assert why == ("the spec changes slurm_conf_parameters, slurm_health_interval on cn[01-02],ctl01; "
                   "restarts slurmctld, slurmd")
    grown = lifecycle._why_deploy(lifecycle.get_provider(changed), changed, ["ctl01", "cn01", "cn02", "cn03"])
    assert grown.startswith("cn03 join; the spec changes")


def test_a_cluster_whose_last_deploy_recorded_nothing_deploys_once_to_record_it(recorded):
    path, state = recorded
    state.remove(applied.DOCUMENT)  # deployed by an older version
    result = cli("plan", str(path), "--json", state_dir=state.root)
    assert result.returncode == EXIT_CHANGES
    body = json.loads(result.stdout)["change"]
    assert body["settings_recorded"] is False and change.UNRECORDED in body["summary"]


def test_plan_on_a_subnet_the_sandbox_chose_keeps_the_addresses_up_keeps(tmp_path, monkeypatch):
    """The spec's default subnet was taken by another cluster here: the provider recorded another one, and the plan
    of the running cluster is on that one (not every address changed)."""
    from provision.providers.sandbox import record
    from provision.providers.sandbox.record import SandboxRecord

    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "auto.yaml"
    path.write_text(SPEC.format(ctl="ctl", count=2).replace("subnet: 10.98.7.0/24", "os: debian-13"))
    spec = load_spec(path)
    state = ClusterState.for_spec(spec)
    record.save(state, SandboxRecord(cluster="change", subnet="10.99.3.0/24", bridge="pv-change-x",
                                     bridge_address="10.99.3.1", mirror="http://deb.example/debian", os="debian-13"))
    cluster = lifecycle.planned_cluster(spec)
    assert [n.address for n in cluster.nodes] == ["10.99.3.10", "10.99.3.11", "10.99.3.12"]
    change.save_applied(state, cluster.nodes)
    state.mark_stage("deploy", nodes=["ctl01", "cn01", "cn02"])
    applied.record(state, planned.settings_now(spec, cluster))
    assert cli("plan", str(path), state_dir=state.root).returncode == 0
    path.write_text(SPEC.format(ctl="ctl", count=3).replace("subnet: 10.98.7.0/24", "os: debian-13"))
    grown = json.loads(cli("plan", str(path), "--json", state_dir=state.root).stdout)["change"]
    assert [(n["name"], n["action"], n["details"]) for n in grown["nodes"]] == [
        *[(name, "change", ["settings: slurm_nodes, slurm_partitions"]) for name in ("ctl01", "cn01", "cn02")],
        ("cn03", "add", [])]  # no address changes: slurm.conf's node lines do, on every node
    assert "+10.99.3.13 cn03" in grown["files"]["/etc/hosts"]


def test_nodes_certify_released_leave_the_rendered_inventory(tmp_path, monkeypatch):
    """After `up` certified and released joining nodes, the inventory a plain ansible-playbook run reads holds
    only the nodes still held (else that run would put nodes in service back into the hold reservation)."""
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "change.yaml"
    path.write_text(SPEC.format(ctl="ctl", count=3))
    spec = load_spec(path)
    state = ClusterState.for_spec(spec)
    state.mark_stage("deploy", nodes=["ctl01", "cn01"])
    cluster = converge.with_hold(state, lifecycle.planned_cluster(spec))
    converge.inventory.write(spec, cluster, state.inventory_dir)
    rendered = state.inventory_dir / "group_vars/all/cluster.yml"
    assert 'slurm_hold_nodes: !unsafe "cn02,cn03"' in rendered.read_text()
    monkeypatch.setattr(converge, "run_certify", lambda *a: _certify_run(failed_nodes=["cn03"]))
    monkeypatch.setattr(admin, "controller_runner", lambda cluster: None)
    monkeypatch.setattr(admin, "resume_drained", lambda *a: None)
    monkeypatch.setattr(admin, "release", lambda runner, passed, progress: ["cn03"])
    converge.certify_held(spec, cluster, ["cn02", "cn03"], converge.CertifyOptions(), print)
    assert 'slurm_hold_nodes: !unsafe "cn03"' in rendered.read_text()
    monkeypatch.setattr(converge, "run_certify", lambda *a: _certify_run(failed_nodes=[]))
    monkeypatch.setattr(admin, "release", lambda runner, passed, progress: [])
    converge.certify_held(spec, cluster, ["cn03"], converge.CertifyOptions(), print)
    assert "slurm_hold_nodes" not in rendered.read_text()


def _certify_run(failed_nodes: list[str]):
    """What certify_held reads of a certify run."""
    return type("Run", (), {"failed_nodes": failed_nodes, "ok": not failed_nodes})()
