"""Operating a cluster from its spec (issue 32, items 1 and 5, and the auto-subnet plan):

- on the shared cluster, `health.interval_s` (with the health program switched on) and one `software.slurm.config`
  parameter changed in a copy of its spec: `plan` shows them per node and exits 4, `up` applies them (slurm.conf,
  slurmctld's running configuration, the health service), then `plan` says "no changes" and `deploy --check` exits 0;
  the original spec is applied again at the end, so the tests after this one find the cluster as they expect;
- a second spec file with the cluster's name cannot shrink it without --rebind (exit 2, nothing changed);
- two small clusters of their own side by side, the second on a subnet the sandbox chose itself (the default one is
  taken): `plan` exits 0 right after its `up`, a grow and a shrink.
"""
from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from provision.cluster import lifecycle
from provision.providers.sandbox import network, record
from provision.spec.loader import load_spec

from conftest import LiveCluster, provision

pytestmark = pytest.mark.e2e

HEALTH_OFF = "health:\n  enabled: false\n"
HEALTH_EVERY_120 = "health:\n  enabled: true\n  interval_s: 120\n"
KILL_WAIT = "software:\n  slurm:\n    config: {KillWait: 45}\n"


def _plan(path: Path, text: bool = False) -> tuple[int, dict, str]:
    """(exit code, the change as --json gives it, the text plan when asked for)."""
    done = provision("plan", str(path), "--json", check=False)
    assert done.returncode in (0, 4), done.stderr
    shown = provision("plan", str(path), check=False) if text else None
    assert shown is None or shown.returncode == done.returncode, shown.stderr
    return done.returncode, json.loads(done.stdout)["change"], shown.stdout if shown else ""


def _health_drains(cluster: LiveCluster) -> str:
    return cluster.ssh(cluster.controller, "sinfo -h -N -R -o '%N %E' | grep gpu-provision-health || true").stdout


def test_a_setting_changed_in_the_spec_is_planned_per_node_and_applied_by_up(slurm_cluster, tmp_path):
    original = slurm_cluster.spec_path
    assert HEALTH_OFF in original.read_text()
    changed = tmp_path / "changed.yaml"
    changed.write_text(original.read_text().replace(HEALTH_OFF, HEALTH_EVERY_120) + KILL_WAIT)
    slurm_nodes = [n.name for n in slurm_cluster.info.nodes  # slurm.conf's nodes: site.yml's controller:compute:login
                   if any(n.has_role(role) for role in ("controller", "compute", "login"))]
    try:
        code, plan, text = _plan(changed, text=True)
        assert code == 4 and plan["changed"]
        settings = {s["variable"]: s for s in plan["settings"]}
        assert (settings["slurm_health_interval"]["before"], settings["slurm_health_interval"]["after"]) == (300, 120)
        assert settings["slurm_conf_parameters"]["after"] == {"KillWait": "45"}
        for name in ("slurm_health_interval", "slurm_health_enabled", "slurm_conf_parameters"):
            assert sorted(settings[name]["nodes"]) == sorted(slurm_nodes)
            assert settings[name]["restarts"] == ["slurmctld", "slurmd"]
        assert {n["name"]: n["action"] for n in plan["nodes"]} == {n: "change" for n in slurm_nodes}
        assert {"+HealthCheckInterval=120", "+KillWait=45"} <= set(plan["files"]["slurm.conf"])
        assert "300 -> 120" in text and "restarts: slurmctld, slurmd" in text

        refused = provision("up", str(changed), "--skip-certify", "--quiet", check=False)
        assert refused.returncode == 2 and "--rebind" in refused.stderr  # another file: the cluster's is original

        began = time.monotonic()
        done = provision("up", str(changed), "--rebind", "--skip-certify", timeout=1500)
        print(f"up with the changed settings: {time.monotonic() - began:.0f} s")
        assert "deploy: the spec changes slurm_conf_parameters, slurm_health_enabled, slurm_health_interval" in \
            done.stderr and "restarts slurmctld, slurmd" in done.stderr
        for node in slurm_nodes:
            conf = slurm_cluster.ssh(node, "grep -E '^(KillWait|HealthCheckInterval)=' /etc/slurm/slurm.conf").stdout
            assert sorted(conf.split()) == ["HealthCheckInterval=120", "KillWait=45"], (node, conf)
        running = slurm_cluster.ssh(slurm_cluster.controller, "scontrol show config").stdout
        assert re.search(r"^KillWait\s*=\s*45 sec", running, re.M), running
        assert re.search(r"^HealthCheckInterval\s*=\s*120 sec", running, re.M), running
        for node in slurm_cluster.compute:
            unit = slurm_cluster.ssh(node, "systemctl is-active gpu-provision-health && "
                                           "grep ^ExecStart= /etc/systemd/system/gpu-provision-health.service").stdout
            assert unit.split()[0] == "active" and unit.strip().endswith("--every 120"), (node, unit)

        code, plan, _ = _plan(changed)
        assert code == 0 and "no changes" in plan["summary"] and plan["settings"] == [], plan
        check = provision("deploy", str(changed), "--check", "--json", check=False, timeout=900)
        assert check.returncode == 0, check.stdout[-3000:]
        assert _health_drains(slurm_cluster) == ""
    finally:
        provision("up", str(original), "--rebind", "--skip-certify", "--quiet", timeout=1500)
    assert _plan(original)[0] == 0
    assert slurm_cluster.ssh(slurm_cluster.controller, "grep -c '^KillWait=' /etc/slurm/slurm.conf",
                             check=False).stdout.strip() == "0"
    assert _health_drains(slurm_cluster) == ""


def test_another_spec_file_with_the_same_name_cannot_shrink_the_cluster(slurm_cluster, tmp_path):
    original = slurm_cluster.spec_path
    state = lifecycle.get_provider(load_spec(original)).state
    before = {name: (state.path / name).read_text() for name in ("applied.json", "stages.json", "spec.yaml")}
    other = tmp_path / "cluster.yaml"  # an experiment elsewhere that kept the name
    shrunk = original.read_text().replace("  - name: store\n    roles: [compute, storage]\n    count: 2\n",
                                          "  - name: store\n    roles: [compute, storage]\n    count: 1\n")
    other.write_text(shrunk.replace("  replica: 2\n", "  replica: 1\n"))  # a valid spec: one brick node, one copy
    assert other.read_text() != original.read_text()
    for command in (["up", "--skip-certify"], ["deploy"], ["down"]):
        done = provision(command[0], str(other), *command[1:], check=False)
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert len(errors) == 1 and str(original) in errors[0] and str(other) in errors[0] and "--rebind" in errors[0]
        assert "-    count: 2" in done.stderr and "+    count: 1" in done.stderr  # the difference, shown
    assert {name: (state.path / name).read_text() for name in before} == before
    nodes = slurm_cluster.ssh(slurm_cluster.controller, "sinfo -h -N -o %N | sort -u").stdout.split()
    assert nodes == sorted(slurm_cluster.compute)


SMALL = """\
name: {name}
provider: {{type: sandbox{subnet}}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute], count: {count}}}
health: {{enabled: false}}
"""
DEFAULT = ipaddress.IPv4Network("10.99.0.0/24")  # the sandbox's default subnet (provider.subnet)
HOLDER = "gp-specs-dflt"  # a bridge of this test's own, no port, that holds the default subnet when nothing else does


def _take_the_default_subnet() -> bool:
    """Make the spec's default subnet taken, as another cluster on this machine would (the demo's, say); True when
    this test took it."""
    subprocess.run(["ip", "link", "del", HOLDER], check=False, capture_output=True)  # left by an interrupted run
    if network.conflicts(DEFAULT, network.host_routes(), None):
        return False
    for argv in (["ip", "link", "add", HOLDER, "type", "bridge"],
                 ["ip", "addr", "add", "10.99.0.254/24", "dev", HOLDER], ["ip", "link", "set", HOLDER, "up"]):
        subprocess.run(argv, check=True, capture_output=True)
    return True


def _timed(*args: str) -> None:
    began = time.monotonic()
    provision(*args, timeout=1500)
    print(f"provision {' '.join(a for a in args if not a.startswith('/'))}: {time.monotonic() - began:.0f} s")


def test_plan_right_after_each_up_on_a_subnet_the_sandbox_chose(tmp_path):
    """The first cluster holds 10.89.0.0/24 with its nodes (made by the provider alone: a deploy there would add
    minutes and prove nothing more here); the second, whose spec leaves the subnet to the sandbox, finds the default
    taken and gets another one. Right after its `up`, a grow (the new node certified and released) and a shrink,
    `plan` exits 0: it plans on the subnet the cluster runs on, not the spec's default."""
    fixed, auto = tmp_path / "fixed.yaml", tmp_path / "auto.yaml"
    fixed.write_text(SMALL.format(name="specs-fixed", subnet=", subnet: 10.89.0.0/24", count=1))
    auto.write_text(SMALL.format(name="specs-auto", subnet="", count=1))
    for path in (fixed, auto):
        provision("down", str(path), check=False)
    took = _take_the_default_subnet()
    try:
        beside = lifecycle.get_provider(load_spec(fixed)).create()
        assert [n.address for n in beside.nodes] == ["10.89.0.10", "10.89.0.11"]
        _timed("up", str(auto), "--skip-certify", "--quiet")
        chosen = ipaddress.IPv4Network(record.load(lifecycle.get_provider(load_spec(auto)).state).subnet)
        assert chosen != DEFAULT and not chosen.overlaps(ipaddress.IPv4Network("10.89.0.0/24")), chosen
        assert _plan(auto)[0] == 0

        auto.write_text(SMALL.format(name="specs-auto", subnet="", count=2))
        code, plan, _ = _plan(auto)
        assert code == 4 and [n["name"] for n in plan["nodes"] if n["action"] == "add"] == ["cn02"]
        assert not [n for n in plan["nodes"] if "address" in " ".join(n["details"])], plan["nodes"]
        _timed("up", str(auto), "--quiet")  # the new node is certified inside the hold reservation, then released
        assert _plan(auto)[0] == 0

        auto.write_text(SMALL.format(name="specs-auto", subnet="", count=1))
        _timed("up", str(auto), "--skip-certify", "--quiet")
        assert _plan(auto)[0] == 0
        assert [n.address for n in lifecycle.current_cluster(load_spec(auto)).nodes] == [
            str(chosen.network_address + 10), str(chosen.network_address + 11)]
    finally:
        for path in (auto, fixed):
            provision("down", str(path), check=False)
        if took:
            subprocess.run(["ip", "link", "del", HOLDER], check=False, capture_output=True)
