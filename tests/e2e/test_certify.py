"""Issue 8 end to end on the shared 4-node sandbox: certify quick passes, and each fault fails the right
check on the right node. Every fault is undone in `finally`, and the test waits until the cluster is healthy in
Slurm again. A fault left behind fails the next test (each asserts the exact set of failed nodes), and the last test
runs certify once more: it passes after every fault was undone. Where undoing a fault means resuming a node Slurm
drained, certify runs again in that test itself.

Durations and network figures are printed even under -q, for quoting.
"""
from __future__ import annotations

import base64
import json
import statistics
import time
from datetime import datetime

import jsonschema
import pytest

from conftest import provision, report_checks as checks
from provision.certify.report import json_report
from provision.hostlist import expand as hostlist_expand
from provision.providers.sandbox import faults
from provision.spec.loader import load_spec
from provision.state import ClusterState
from test_deploy_faults import faults_target

pytestmark = pytest.mark.e2e

QUICK_LIMIT_S = 60
# The sandbox certify paces iperf3 at 1 Gb/s: this is a tenth of a healthy link, below the sandbox's floor (a quarter).
# 20mbit was used before: the run's MPI job then took 64 s of its 129 s.
SLOW_RATE = "100mbit"
CERTIFY_USER = "gp-certify"  # certify.user's default: the e2e spec names none


def certify(cluster, *args: str) -> tuple[int, dict]:
    """`provision certify SPEC --json`: (exit code, the JSON report)."""
    result = provision("certify", str(cluster.spec_path), "--json", *args, check=False, timeout=600)
    assert result.stdout.strip(), result.stderr
    return result.returncode, json.loads(result.stdout)


def seconds(doc: dict) -> float:
    return (datetime.fromisoformat(doc["finished_at"]) - datetime.fromisoformat(doc["started_at"])).total_seconds()


def failed(doc: dict) -> set[tuple[str | None, str]]:
    """(node, check) of every failed check; cluster-wide checks have node None."""
    return {(c["node"], c["check"]) for c in checks(doc) if c["verdict"] == "fail"}


def failed_nodes(doc: dict) -> set[str]:
    return {n["name"] for n in doc["nodes"] if n["verdict"] == "fail"}


def wait_healthy(cluster, timeout: float = 180) -> None:
    """Every compute node idle in Slurm with slurmd running and /shared mounted."""
    deadline = time.monotonic() + timeout
    states = ""
    while time.monotonic() < deadline:
        states = cluster.ssh(cluster.controller, "sinfo -h -N -o '%N %T'", check=False).stdout
        table = dict(line.split() for line in states.splitlines() if line.strip())
        if all(table.get(n) == "idle" for n in cluster.compute):
            if all(cluster.ssh(n, "systemctl is-active slurmd && findmnt -n /shared", check=False).returncode == 0
                   for n in cluster.compute):
                return
        time.sleep(2)
    raise AssertionError(f"cluster not healthy after {timeout} s:\n{states}")


def mpi_relaunched(check: dict) -> bool:
    """The one warning a healthy sandbox may give: Open MPI 4.1's TCP wire-up race (open-mpi/ompi#3035) crashes
    MPI_Init in about 1 launch in 100 on this machine; certify launches again and warns (see the README)."""
    return check["check"] == "mpi.allreduce" and check["verdict"] == "warn" and \
        check["detail"].startswith("the first launch failed")


def alarms(doc: dict) -> list[tuple]:
    """(node, check, verdict, detail) of every fail and warn but the MPI relaunch, which is printed."""
    for check in checks(doc):
        if mpi_relaunched(check):
            print(f"\n[certify e2e] {check['detail']}")
    return [(c["node"], c["check"], c["verdict"], c["detail"]) for c in checks(doc)
            if c["verdict"] in ("fail", "warn") and not mpi_relaunched(c)]


def assert_passes_again(cluster) -> dict:
    wait_healthy(cluster)
    rc, doc = certify(cluster)
    assert rc == 0 and alarms(doc) == [], failed(doc)
    return doc


def report(capsys, message: str) -> None:
    """Shown even under -q (figures for the lead to quote)."""
    with capsys.disabled():
        print(f"\n[certify e2e] {message}")


def test_quick_passes_three_runs_in_a_row_with_gpu_checks_not_applicable(slurm_cluster, capsys):
    # three here; 20 in a row on a loaded machine, and the false-alarm rate per check, are bench/false_alarms.py's
    wait_healthy(slurm_cluster)
    durations = []
    for attempt in range(3):
        rc, doc = certify(slurm_cluster)
        durations.append(seconds(doc))
        found = alarms(doc)
        assert rc == 0 and found == [], f"run {attempt + 1}: {found}"
        assert durations[-1] < QUICK_LIMIT_S
        gpu = [c for c in checks(doc) if c["check"].startswith(("gpu.", "nccl.", "slurm.gres"))]
        assert gpu and all(c["verdict"] == "na" for c in gpu)
        jsonschema.validate(doc, json_report.schema())
    matrix = doc["network"]
    assert matrix["tool"] == "iperf3" and matrix["nodes"] == [n.name for n in slurm_cluster.info.nodes]
    links = [v for row in matrix["values"] for v in row if v is not None]
    assert len(links) == len(matrix["nodes"]) * (len(matrix["nodes"]) - 1)
    users = {c["check"] for c in checks(doc) if c["check"].startswith(("mpi.", "config.", "slurm.node_"))}
    assert users == {"mpi.start", "mpi.allreduce", "config.files", "config.packages", "slurm.node_definition",
                     "slurm.node_resources", "slurm.node_state"}
    enforce = [c for c in checks(doc) if c["check"].startswith("slurm.enforce_")]  # no cgroups on the sandbox
    assert len(enforce) == 2 * len(slurm_cluster.compute) and all(
        c["verdict"] == "na" and "ProctrackType=proctrack/linuxproc" in c["detail"] for c in enforce), enforce
    as_user = {c["node"]: c for c in checks(doc) if c["check"] == "slurm.user_job"}
    assert sorted(as_user) == sorted(slurm_cluster.compute)
    assert all(c["verdict"] == "pass" and c["detail"].startswith(f"ran as {CERTIFY_USER} (uid 59990) in account "
                                                                 f"{CERTIFY_USER}") for c in as_user.values()), as_user
    jobs = slurm_cluster.ssh(slurm_cluster.controller, f"sacct -X -n -P -u {CERTIFY_USER} -S now-30minutes "
                                                       "-o JobName,Account,User").stdout.split()
    for kind in ("user", "whole-node", "mpi", "sbatch"):
        assert any(j.startswith(f"certify-{kind}-") for j in jobs), (kind, jobs)
    assert {tuple(j.split("|")[1:]) for j in jobs} == {(CERTIFY_USER, CERTIFY_USER)}, jobs
    mpi = next(c for c in doc["checks"] if c["check"] == "mpi.allreduce")
    report(capsys, f"MPI job: {mpi['detail']}")
    report(capsys, f"quick on {len(matrix['nodes'])} nodes, 3 runs: {', '.join(f'{d:.1f}' for d in durations)} s; "
           f"iperf3 links (paced 1 Gb/s) min {min(links):.3f} median {statistics.median(links):.3f} "
           f"max {max(links):.3f} Gb/s")
    latest = max(ClusterState.for_spec(load_spec(slurm_cluster.spec_path)).reports_dir.glob("*-quick"))
    assert json.loads((latest / "report.json").read_text())["verdict"] == doc["verdict"]  # pass, or the MPI relaunch
    assert (latest / "report.xml").stat().st_size > 0
    html = (latest / "report.html").read_text()
    assert "<svg" in html and "<script src=" not in html and "<link " not in html  # self-contained


def test_stopped_slurmd_fails_the_slurm_checks_of_that_node(slurm_cluster):
    victim = "store01"
    root, name = faults_target(slurm_cluster)
    faults.stop_service(root, name, victim, "slurmd")
    try:
        rc, doc = certify(slurm_cluster)
    finally:
        slurm_cluster.ssh(victim, "systemctl start slurmd")
    assert rc == 1 and failed_nodes(doc) == {victim}
    assert {(victim, "slurm.slurmd"), (victim, "slurm.srun")} <= failed(doc)
    assert {node for node, _ in failed(doc)} == {victim, None}
    wait_healthy(slurm_cluster)


def test_wrong_munge_key_fails_munge_on_that_node(slurm_cluster):
    victim = "store02"
    key = "/etc/munge/munge.key"
    original = slurm_cluster.ssh(victim, f"base64 -w0 {key}").stdout.strip()  # never printed
    restore = (f"echo {original} | base64 -d > {key} && chown munge:munge {key} && chmod 0400 {key} "
               "&& systemctl restart munge")
    wrong = base64.b64encode(bytes(range(256)) * 4).decode()
    slurm_cluster.ssh(victim, restore.replace(original, wrong))
    try:
        rc, doc = certify(slurm_cluster)
    finally:
        slurm_cluster.ssh(victim, restore)
    assert rc == 1 and failed_nodes(doc) == {victim}
    munge = {c["node"]: c["verdict"] for c in checks(doc) if c["check"] == "munge.credential"}
    assert munge == {**{n.name: "pass" for n in slurm_cluster.info.nodes}, victim: "fail"}
    assert original not in json.dumps(doc)
    wait_healthy(slurm_cluster)


def test_slowed_link_is_localised_to_that_node(slurm_cluster, capsys):
    victim = "node01"
    root, name = faults_target(slurm_cluster)
    faults.slow_link(root, name, victim, rate=SLOW_RATE)
    try:
        rc, doc = certify(slurm_cluster)
    finally:
        faults.restore_link(root, name, victim)
    assert rc == 1 and failed_nodes(doc) == {victim}
    node_bw = {c["node"]: c for c in checks(doc) if c["check"] == "net.node_bw"}
    assert {n: c["verdict"] for n, c in node_bw.items()} == {
        **{n.name: "pass" for n in slurm_cluster.info.nodes}, victim: "fail"}
    slow = [c for c in doc["checks"] if c["check"] == "net.pairwise_bw" and c["verdict"] == "fail"]
    assert slow and all(victim in c["subject"].split("->") for c in slow)
    healthy = [c["value"] for c in doc["checks"] if c["check"] == "net.pairwise_bw" and c["verdict"] == "pass"]
    report(capsys, f"{victim} shaped to {SLOW_RATE}: its links {min(c['value'] for c in slow):.3f}-"
           f"{max(c['value'] for c in slow):.3f} Gb/s, node median {node_bw[victim]['value']} Gb/s; other links "
           f"median {statistics.median(healthy):.3f} Gb/s; run took {seconds(doc):.1f} s")
    wait_healthy(slurm_cluster)


def test_unmounted_shared_filesystem_fails_the_fs_checks_of_that_node(slurm_cluster):
    victim = "store01"
    slurm_cluster.ssh(victim, "umount -l /shared")
    try:
        rc, doc = certify(slurm_cluster)
    finally:
        slurm_cluster.ssh(victim, "findmnt -n /shared >/dev/null || mount /shared")
    assert rc == 1 and failed_nodes(doc) == {victim}
    assert {(victim, "fs.mount"), (victim, "slurm.user_job")} <= failed(doc)
    assert {check for node, check in failed(doc)} <= {"fs.mount", "fs.checksum", "slurm.user_job"}
    # homes are on the shared filesystem: people cannot run jobs on a node where it is not mounted
    user_job = next(c["detail"] for c in checks(doc, victim) if c["check"] == "slurm.user_job")
    assert user_job.startswith(f"the home /shared/home/{CERTIFY_USER} of {CERTIFY_USER} is missing here"), user_job
    wait_healthy(slurm_cluster)


def test_unreachable_node_fails_on_that_node_and_drain_failed_drains_it(slurm_cluster):
    victim = "node01"
    root, name = faults_target(slurm_cluster)
    faults.stop_node(root, name, victim)
    try:
        rc, doc = certify(slurm_cluster, "--drain-failed")
        reason = slurm_cluster.ssh(slurm_cluster.controller, f"sinfo -h -n {victim} -o '%T|%E'").stdout.strip()
    finally:
        faults.start_node(root, name, victim)
        slurm_cluster.ssh(slurm_cluster.controller, f"scontrol update nodename={victim} state=resume", check=False)
    assert rc == 1 and failed_nodes(doc) == {victim}
    reachable = next(c for c in checks(doc, victim) if c["check"] == "node.reachable")
    assert reachable["verdict"] == "fail" and "cannot reach the node" in reachable["detail"]
    state, _, why = reason.partition("|")
    assert state.startswith("drain") and why.startswith("certify:") and "node.reachable" in why
    assert_passes_again(slurm_cluster)


def test_a_node_whose_slurm_conf_differs_from_the_controllers_fails_config_files(slurm_cluster):
    victim = "node01"
    slurm_cluster.ssh(victim, "echo '# edited by hand' >> /etc/slurm/slurm.conf")
    try:
        rc, doc = certify(slurm_cluster)
    finally:
        slurm_cluster.ssh(victim, "sed -i '$d' /etc/slurm/slurm.conf")
    assert rc == 1 and failed_nodes(doc) == {victim}
    assert (victim, "config.files") in failed(doc)
    files = next(c for c in checks(doc, victim) if c["check"] == "config.files")
    assert "/etc/slurm/slurm.conf differs" in files["detail"]
    wait_healthy(slurm_cluster)


def _split_node_line(conf: str, victim: str, memory: int) -> str:
    """slurm.conf with the victim on a NodeName line of its own that claims `memory` MiB."""
    line = next(entry for entry in conf.splitlines() if entry.startswith("NodeName="))
    names, _, rest = line.removeprefix("NodeName=").partition(" ")
    others = [n for n in hostlist_expand(names) if n != victim]
    claim = rest.replace(f"RealMemory={rest.split('RealMemory=')[1].split()[0]}", f"RealMemory={memory}")
    return conf.replace(line, f"NodeName={','.join(others)} {rest}\nNodeName={victim} {claim}")


def test_a_node_defined_with_more_memory_than_it_has_fails_its_node_definition(slurm_cluster):
    victim, ctl = "store01", slurm_cluster.controller
    real = int(slurm_cluster.ssh(victim, "slurmd -C").stdout.split("RealMemory=")[1].split()[0])
    original = slurm_cluster.ssh(ctl, "cat /etc/slurm/slurm.conf").stdout
    every = [n.name for n in slurm_cluster.info.nodes]

    def install(conf: str) -> None:
        for node in every:
            slurm_cluster.ssh(node, "cat > /etc/slurm/slurm.conf", input=conf)
        slurm_cluster.ssh(ctl, "scontrol reconfigure")

    install(_split_node_line(original, victim, real + 4096))
    try:
        time.sleep(3)  # slurmd re-registers and slurmctld compares
        rc, doc = certify(slurm_cluster)
    finally:
        install(original)
        slurm_cluster.ssh(ctl, f"scontrol update nodename={victim} state=resume", check=False)
    assert rc == 1 and failed_nodes(doc) == {victim}
    definition = next(c for c in checks(doc, victim) if c["check"] == "slurm.node_definition")
    assert definition["verdict"] == "fail"
    assert f"claims RealMemory={real + 4096} MiB; the node has {real} MiB" in definition["detail"]
    assert all(c["verdict"] == "pass" for c in checks(doc) if c["check"] == "config.files")  # same file everywhere
    assert_passes_again(slurm_cluster)


def test_a_node_where_mpi_cannot_start_fails_mpi_on_that_node(slurm_cluster):
    victim = "store02"
    library = "/usr/lib/x86_64-linux-gnu/libmpi.so.40"
    slurm_cluster.ssh(victim, f"mv {library} /root/libmpi.so.40.moved")
    try:
        rc, doc = certify(slurm_cluster)
    finally:
        slurm_cluster.ssh(victim, f"mv /root/libmpi.so.40.moved {library}")
    assert rc == 1 and failed_nodes(doc) == {victim}
    assert {(victim, "mpi.start"), (None, "mpi.allreduce")} <= failed(doc)
    start = {c["node"]: c["verdict"] for c in checks(doc) if c["check"] == "mpi.start"}
    assert start == {**{n: "pass" for n in slurm_cluster.compute}, victim: "fail"}
    allreduce = next(c for c in doc["checks"] if c["check"] == "mpi.allreduce")
    assert f"alone, MPI does not start on {victim}" in allreduce["detail"]
    wait_healthy(slurm_cluster)


def test_a_node_where_certifys_user_is_missing_fails_that_node_named(slurm_cluster):
    victim = slurm_cluster.compute[-1]
    slurm_cluster.ssh(victim, f"cp -p /etc/passwd /root/passwd.certify && sed -i '/^{CERTIFY_USER}:/d' /etc/passwd")
    try:
        rc, doc = certify(slurm_cluster)
    finally:
        slurm_cluster.ssh(victim, "cp -p /root/passwd.certify /etc/passwd && rm /root/passwd.certify")
    assert rc == 1 and failed(doc) == {(victim, "slurm.user_job")}, failed(doc)
    detail = next(c["detail"] for c in checks(doc, victim) if c["check"] == "slurm.user_job")
    assert "uid 59990 does not resolve on this node" in detail or "did not run here" in detail, detail
    # the user-shaped jobs ran on the other nodes as certify's user, and passed there
    others = [n for n in slurm_cluster.compute if n != victim]
    ran = {c["node"] for c in checks(doc) if c["check"] == "mpi.start" and c["verdict"] == "pass"}
    assert ran == set(others), ran
    wait_healthy(slurm_cluster)


def test_after_every_fault_was_undone_certify_passes_again(slurm_cluster):
    assert_passes_again(slurm_cluster)
