"""The runner end to end against a fake cluster at the SSH boundary: every failure lands on its node.

The fake answers the commands the runner sends (munge, sinfo, srun, sbatch/sacct, iperf3) the way the
sandbox does; the probe itself is the real one, run in-process with the shared mount in a temp folder.
"""
from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from provision.certify import bundle
from provision.certify.control import drain as drainer, iperf3_rounds, run as runner, user_jobs, user_steps
from provision.certify.control.fleet import Fleet, Outcome
from provision.certify.control.srun import NODE_MARK
from provision.certify.probe import collect
from provision.certify.probe.expect import NodeExpectation
from provision.certify.records import NetSampling
from provision.records import ClusterInfo, NodeInfo
from provision.spec import digest
from provision.spec.model import ClusterSpec
from local_steps import run_tasks
from test_enforcement import CONFINED, SANDBOX as SANDBOX_CONFIG

SPEC = ClusterSpec.model_validate({
    "name": "unit", "provider": {"type": "sandbox", "subnet": "10.99.0.0/24"},
    "node_groups": [{"name": "ctl", "roles": ["controller"], "count": 1},
                    {"name": "node", "roles": ["compute"], "count": 1, "partition": "batch",
                     "default_partition": True},
                    {"name": "store", "roles": ["compute", "storage"], "count": 2, "partition": "batch"}],
    "filesystem": {"type": "glusterfs", "mount_point": "/shared", "replica": 2},
})
ROLES = {"ctl01": ("controller",), "node01": ("compute",), "store01": ("compute", "storage"),
         "store02": ("compute", "storage")}
CLUSTER = ClusterInfo(name="unit", provider="sandbox", sandbox=True, nodes=tuple(
    NodeInfo(name=name, group=name[:-2], roles=roles, address=f"10.99.0.{10 + i}", state="running")
    for i, (name, roles) in enumerate(ROLES.items())))


HW = "NodeName={} CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"
DIGEST = "ab" * 32


class FakeSandbox(Fleet):
    """Answers like the 4-node sandbox; faults: down (no SSH), slurmd_off, bad_key, launch_fails, conf_drift
    (the node's slurm.conf differs), mem_claim (slurm.conf claims more memory than the node has), mpi_broken
    (MPI cannot start on the node), old_slurmd (another slurmd version on the node)."""

    faults: dict = {}
    shared = None
    log: list = []

    def connect(self, nodes):
        for node in nodes:
            if node.name in self.faults.get("down", ()):
                self.unreachable[node.name] = f"{node.address}:22: connection refused"
            else:
                self.clients[node.name] = object()
        return dict(self.unreachable)

    def close(self):
        self.clients.clear()

    def run(self, name, command, timeout=60.0):
        if name not in self.clients:
            return Outcome(name, None, error=self.unreachable.get(name, "not connected"))
        self.log.append((name, command))
        if command.startswith("runuser -u "):  # submitted as certify's user: the same command without the prefix
            self.users = getattr(self, "users", []) + [shlex.split(command)[2]]
            command = command.split(" -- ", 1)[1]
        if command == "munge -n":
            return Outcome(name, 0, "MUNGE:fake-credential:\n")
        if " srun " in command and iperf3_rounds.MARK in command:
            return self._net_round(name, command)
        if "iperf3 -s" in command:
            return Outcome(name, 0, "4242\n")
        if "iperf3" in command:
            return Outcome(name, 0, json.dumps({"end": {"sum_received": {"bits_per_second": 1e9}}}))
        if "expect.json" in command and "printf" in command:
            return Outcome(name, 0, self._precheck(name, command))
        if command == "scontrol show config":
            return Outcome(name, 0, CONFINED if self.faults.get("confined") else SANDBOX_CONFIG)
        if command.startswith("for i in 1 2 3 4 5; do kill -0 "):  # after the job that leaves a process
            return Outcome(name, 0, "left=alive\n" if name in self.faults.get("procs_escape", ()) else "left=gone\n")
        if command == "scontrol show node -o":
            return Outcome(name, 0, "".join(self._definition(n) for n, roles in ROLES.items() if "compute" in roles))
        if command.startswith("scontrol ping"):  # drained_later: drained from the second question on
            asked = self.asked = getattr(self, "asked", 0) + 1
            later = self.faults.get("drained_later", ()) if asked > 1 else ()
            rows = "\n".join(f"{n}|{'drained' if n in later else 'idle'}|none" for n, roles in ROLES.items()
                             if "compute" in roles)
            return Outcome(name, 0, f"Slurmctld(primary) at ctl01 is UP\n--\n{rows}\n")
        if command.startswith("sbatch"):
            return Outcome(name, 0, "42\n")
        if command.startswith("sacct"):
            return Outcome(name, 0, "COMPLETED|0:0\n")
        if " srun " in command:
            return self._srun(name, command)
        return Outcome(name, 0)  # rm -rf, kill, scontrol update

    def _precheck(self, name, command):
        argv = shlex.split(command.splitlines()[1])
        self.expectations = getattr(self, "expectations", {})
        self.expectations[name] = json.loads(argv[2])
        lines = ["slurmd=" + ("inactive" if name in self.faults.get("slurmd_off", ()) else "active"),
                 f"probe_digest={bundle.digest()}"]
        if name in self.faults.get("bad_key", ()):
            lines += ["munge_rc=1", "munge=unmunge: Error: Invalid credential"]
        else:
            lines += ["munge_rc=0", "munge=STATUS: Success (0)"]
        slurm_conf = "cd" * 32 if name in self.faults.get("conf_drift", ()) else DIGEST
        lines += [f"cfg|/etc/slurm/slurm.conf|{slurm_conf}", f"cfg|/etc/hosts|{DIGEST}", "cfg|/etc/slurm/gres.conf|-",
                  "pkg|munge|0.5.15-2|ii ", "pkg|slurm-client|22.05.8-4|ii "]
        slurmd = "22.05.8-1" if name in self.faults.get("old_slurmd", ()) else "22.05.8-4"
        if "compute" in ROLES[name]:
            lines += [f"pkg|slurmd|{slurmd}|ii ", f"slurmd_c|{HW.format(name)}", "gpu_device_files=0"]
        return "\n".join(lines) + "\n"

    def _definition(self, node):
        memory = 48000 if node in self.faults.get("mem_claim", ()) else 22900
        return (f"NodeName={node} Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 CPUTot=2 CPULoad=0.01 Gres=(null) "
                f"OS=Linux 6.1.0 #1 SMP RealMemory={memory} AllocMem=0 State=IDLE\n")

    def _srun(self, name, command):
        argv = shlex.split(command)
        nodes = argv[argv.index("-w") + 1].split(",")
        out, err = [], []
        if "--exclusive" in argv:
            return Outcome(name, 0, "".join(f"{t}: {NODE_MARK}{n}\n{t}: job_cpus=2\n{t}: job_cpus_per_task=2\n"
                                            for t, n in enumerate(nodes)))
        if "--mpi=pmix" in argv:
            return self._mpi(name, nodes)
        if "--mem=64M" in argv:  # over its --mem: stopped, unless the node does not enforce memory
            kept = self.faults.get("mem_unenforced", ())
            out = [f"{t}: {NODE_MARK}{n}\n{t}: mem=start\n" + (f"{t}: mem=survived\n{t}: rss_mib=257\n" if n in kept
                                                                  else "") for t, n in enumerate(nodes)]
            err = [f"srun: error: {n}: task {t}: Out Of Memory" for t, n in enumerate(nodes) if n not in kept]
            return Outcome(name, 1 if err else 0, "".join(out), "\n".join(err) + "\n")
        if "left_pid=" in command:
            return Outcome(name, 0, "".join(f"{t}: {NODE_MARK}{n}\n{t}: left_pid={4100 + t}\n"
                                            for t, n in enumerate(nodes)))
        if "user_check=" in command:
            return self._user_check(name, nodes, shlex.split(argv[-1])[-1])
        for task, node in enumerate(nodes):
            if node in self.faults.get("launch_fails", ()):
                err.append(f"srun: error: Task launch for StepId=7.0 failed on node {node}: "
                           "Communication connection failure")
                continue
            expect = NodeExpectation(**{**self.expectations[node], "fs_mount": str(self.shared), "fs_type": None})
            doc = collect.verify_filesystem(expect) if "--fs-verify" in command else collect.run(expect, "quick")
            out += [f"{task}: {NODE_MARK}{node}", f"{task}: {json.dumps(doc.to_dict())}"]
        return Outcome(name, 1 if err else 0, "\n".join(out) + "\n", "\n".join(err) + "\n")


    def _net_round(self, name, command):
        """A round of the iperf3 matrix (control/iperf3_rounds.py): each node's task run here by bash with the stand-in
        iperf3 (1 Gb/s; a connection `_refused` is refused)."""
        argv = shlex.split(command)
        nodes = argv[argv.index("-w") + 1].split(",")
        folder = self.shared.parent / "fake-iperf3"
        (folder / "refuse").mkdir(parents=True, exist_ok=True)
        for node in nodes:
            for other in CLUSTER.nodes:
                if self._refused(node, other.name):
                    (folder / "refuse" / f"{node}-{other.address}").write_text("always")
        texts = run_tasks(argv[-1], nodes, folder, default_gbps=1.0)
        return Outcome(name, 0, "".join(f"{t}: {line}\n" for t, n in enumerate(nodes) for line in texts[n].splitlines()))

    def _refused(self, node, peer):
        """No fault of this fake refuses an iperf3 connection."""
        return False

    def _user_check(self, name, nodes, script):
        """The real check script, run here as this test's user; user_gone: the node has no such uid (`id -un`
        fails there, as on a node where the user was never made)."""
        out = []
        for task, node in enumerate(nodes):
            gone = "id() { if [ \"$1\" = -u ]; then echo 59990; else return 1; fi; }\n" \
                if node in self.faults.get("user_gone", ()) else ""
            done = subprocess.run(["sh", "-c", gone + script], capture_output=True, text=True, timeout=30)
            out += [f"{task}: {NODE_MARK}{node}"] + [f"{task}: {line}" for line in done.stdout.splitlines()]
        return Outcome(name, 0, "\n".join(out) + "\n")

    def _mpi(self, name, nodes):
        """A rank that cannot start aborts the whole step (PMIx): its node exits 127, the others are cancelled.
        mpi_flaky: the first N launches across the nodes crash (a segfault in MPI_Init), later ones pass; mpi_pair: a
        job that holds both of these nodes fails (MPI between them is broken), any other passes."""
        crashes = getattr(self, "crashes", 0)
        if len(nodes) > 1 and crashes < int(self.faults.get("mpi_flaky", 0)):
            self.crashes = crashes + 1
            err = [f"srun: error: {nodes[0]}: task 0: Segmentation fault"] + [
                f"srun: error: {n}: tasks {2 * i}-{2 * i + 1}: Killed" for i, n in enumerate(nodes) if i]
            return Outcome(name, 139, "", "\n".join(err) + "\n")
        if set(self.faults.get("mpi_pair", ())) <= set(nodes) and self.faults.get("mpi_pair"):
            first = next(n for n in nodes if n in self.faults["mpi_pair"])
            return Outcome(name, 1, "", f"srun: error: {first}: tasks 0-1: Exited with exit code 1\n")
        broken = [n for n in nodes if n in self.faults.get("mpi_broken", ())]
        if broken:
            err = [f"srun: error: {n}: tasks {2 * i}-{2 * i + 1}: " + ("Exited with exit code 127" if n in broken
                                                                         else "Killed") for i, n in enumerate(nodes)]
            return Outcome(name, 1, "", "\n".join(err) + "\n")
        out, size = [], 2 * len(nodes)
        for index, node in enumerate(nodes):
            for rank in (2 * index, 2 * index + 1):
                out += [f"{rank}: {NODE_MARK}{node}", f"{rank}: mpi rank={rank} size={size} host={node} errors=0 "
                                                      "small_us=41.0 large_ms=12.500 bytes=8388608"]
        return Outcome(name, 0, "\n".join(out) + "\n")


def install_fleet(fleet: type[FakeSandbox], tmp_path, monkeypatch) -> type[FakeSandbox]:
    """Certify's runs and drains talk to this fake fleet (no faults yet, an empty log, a shared folder of the test's);
    reports are not written to a cluster's state."""
    shared = tmp_path / "shared"
    shared.mkdir()
    fleet.faults, fleet.shared, fleet.log = {}, shared, []
    monkeypatch.setattr(runner, "Fleet", fleet)
    monkeypatch.setattr(drainer, "Fleet", fleet)
    monkeypatch.setattr(iperf3_rounds, "CONNECT_WINDOW_S", 1)  # a refused connection fails in a second here
    monkeypatch.setattr(iperf3_rounds, "REVERSE_WINDOW_S", 1)
    monkeypatch.setattr(runner, "write_to_state", lambda report, state: None)
    monkeypatch.setattr(runner, "publish_metrics", lambda spec, cluster, state, report: None)  # no monitoring node here
    return fleet


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    return install_fleet(FakeSandbox, tmp_path, monkeypatch)


def failures(report):
    return {(c.node, c.check) for c in report.all_checks() if c.verdict == "fail"}


def srun_nodes(log, network=False):
    """The nodes of each srun step in order: the checks' steps, or (network) the iperf3 matrix's rounds."""
    steps = [shlex.split(c) for _, c in log if " srun " in c and not c.startswith("sbatch")
             and (iperf3_rounds.MARK in c) == network]
    return [s[s.index("-w") + 1] for s in steps]


def test_a_node_drained_before_the_matrix_is_measured_against_its_daemon_and_holds_no_round(sandbox):
    """Slurm drains a node after the MPI job ("Kill task failed"): the rounds' steps leave it out (a step naming it
    would wait for it until its timeout), an iperf3 daemon runs on it over SSH, and its links are still measured."""
    sandbox.faults = {"drained_later": ("store02",)}
    report = runner.certify(SPEC, CLUSTER, runner.CertifyOptions()).report
    rounds = srun_nodes(sandbox.log, network=True)
    assert rounds and all("store02" not in r.split(",") for r in rounds)
    assert sorted(n for n, c in sandbox.log if "iperf3 -s -D" in c) == ["ctl01", "store02"]
    links = [c for c in report.checks if c.check == "net.pairwise_bw" and "store02" in c.subject.split("->")]
    assert len(links) == 6 and {c.verdict for c in links} == {"pass"}


def test_healthy_cluster_passes_with_gpu_checks_not_applicable(sandbox):
    result = runner.certify(SPEC, CLUSTER, runner.CertifyOptions())
    report = result.report
    assert report.verdict == "pass" and failures(report) == set()
    # probe, the fs cross-check, the user's job, the whole-node job, the MPI job
    assert srun_nodes(sandbox.log) == ["node01,store01,store02"] * 5
    user, whole, mpi = [shlex.split(c) for _, c in sandbox.log
                        if " srun " in c and " sbatch " not in c and iperf3_rounds.MARK not in c][2:]
    assert [s[:4] for s in (user, whole, mpi)] == [["runuser", "-u", "gp-certify", "--"]] * 3
    assert all("--chdir=/tmp" in s for s in (user, whole, mpi))
    probe, verify = [shlex.split(c) for _, c in sandbox.log if " srun " in c][:2]
    assert probe[0] == verify[0] == "timeout"  # the probe and the filesystem's cross-check stay root's
    assert {"--exclusive", "--cpus-per-task=2", "--mem=20610M"} <= set(whole)
    assert "--mpi=pmix" in mpi and "--ntasks-per-node=2" in mpi
    # the matrix: one srun step per round (4 nodes: 3 rounds), the compute nodes' iperf3 in it; only the controller,
    # which takes no step, runs an iperf3 daemon over SSH, and no client runs over SSH
    rounds = srun_nodes(sandbox.log, network=True)
    assert len(rounds) == 3 and all(set(r.split(",")) <= {"node01", "store01", "store02"} for r in rounds)
    assert [n for n, c in sandbox.log if "iperf3 -s -D" in c] == ["ctl01"]
    assert not [c for _, c in sandbox.log if "iperf3 -c" in c and " srun " not in c]
    by_node = {n.name: {c.check: c.verdict for c in n.checks} for n in report.nodes}
    assert "slurm.srun" not in by_node["ctl01"] and by_node["ctl01"]["slurm.controller"] == "pass"
    assert by_node["node01"]["gpu.nvml"] == "na" and by_node["node01"]["fs.checksum"] == "pass"
    for node in ("node01", "store01", "store02"):
        assert {k: by_node[node][k] for k in ("slurm.node_definition", "slurm.node_resources", "mpi.start",
                                              "config.files", "config.packages")} == dict.fromkeys(
            ("slurm.node_definition", "slurm.node_resources", "mpi.start", "config.files", "config.packages"), "pass")
    assert by_node["ctl01"]["config.files"] == "pass" and "mpi.start" not in by_node["ctl01"]
    cluster = {c.check: c.verdict for c in report.checks if c.check.startswith(("slurm", "nccl", "mpi"))}
    assert cluster == {"slurm.srun_all": "pass", "slurm.sbatch": "pass", "slurm.gres": "na", "slurm.gres_single": "na",
                       "nccl.node_busbw": "na", "nccl.cluster_busbw": "na", "mpi.allreduce": "pass"}
    mpi = next(c for c in report.checks if c.check == "mpi.allreduce")
    assert "6 ranks on 3 nodes" in mpi.detail and "8 MiB allreduce 12.5 ms" in mpi.detail
    assert report.network.nodes == tuple(ROLES) and report.network.tool == "iperf3"
    assert report.network.sampling == NetSampling("all pairs", None, 3, 6)  # 4 nodes: every pair, at quick too
    assert any("kill 4242" in c for _, c in sandbox.log)
    assert report.spec_digest == digest.of_spec(SPEC) and report.tool_version


def test_a_node_where_certifys_user_does_not_resolve_fails_named_and_the_users_jobs_run_on_the_others(sandbox):
    sandbox.faults = {"user_gone": {"store01"}}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == {("store01", "slurm.user_job")}
    user_job = {c.node: c for c in report.all_checks() if c.check == "slurm.user_job"}
    assert "uid 59990 does not resolve on this node" in user_job["store01"].detail
    assert user_job["node01"].verdict == "pass" and user_job["node01"].detail.startswith("ran as ")
    # the probe and the user check reach every node, the whole-node and MPI jobs only those where the user runs
    assert srun_nodes(sandbox.log) == ["node01,store01,store02"] * 3 + ["node01,store02"] * 2
    sbatch = next(c for _, c in sandbox.log if " sbatch " in f" {c}")
    assert shlex.split(sbatch)[:4] == ["runuser", "-u", "gp-certify", "--"] and "-w node01,store02" in sbatch
    by_node = {n.name: {c.check for c in n.checks} for n in report.nodes}
    assert "mpi.start" not in by_node["store01"] and "mpi.start" in by_node["node01"]


def test_where_slurm_confines_jobs_a_node_that_lets_memory_or_a_process_escape_fails_named(sandbox):
    sandbox.faults = {"confined": True, "mem_unenforced": {"store01"}, "procs_escape": {"node01"}}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == {("store01", "slurm.enforce_memory"), ("node01", "slurm.enforce_procs")}
    verdicts = {(c.node, c.check): c.verdict for c in report.all_checks() if c.check.startswith("slurm.enforce_")}
    assert verdicts == {**{(n, c): "pass" for n in ("node01", "store01", "store02")
                           for c in ("slurm.enforce_memory", "slurm.enforce_procs")},
                        ("store01", "slurm.enforce_memory"): "fail", ("node01", "slurm.enforce_procs"): "fail"}
    jobs = [shlex.split(c) for _, c in sandbox.log if "--mem=64M" in c or "left_pid=" in c]
    assert len(jobs) == 2 and all(j[:4] == ["runuser", "-u", "gp-certify", "--"] for j in jobs)


def test_on_the_sandbox_the_enforcement_checks_are_na_naming_the_settings(sandbox):
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    found = [c for c in report.all_checks() if c.check.startswith("slurm.enforce_")]
    assert len(found) == 6 and all(c.verdict == "na" and "proctrack/linuxproc" in c.detail for c in found)
    assert not any("--mem=64M" in c for _, c in sandbox.log)


def test_without_certifys_user_every_step_runs_as_root(sandbox):
    spec = SPEC.model_copy(update={"certify": SPEC.certify.model_copy(update={"user": None})})
    report = runner.collect(spec, CLUSTER, runner.CertifyOptions())
    assert failures(report) == set()
    assert not any("runuser" in c for _, c in sandbox.log)
    assert not any(c.check == "slurm.user_job" for c in report.all_checks())
    assert srun_nodes(sandbox.log) == ["node01,store01,store02"] * 4


@pytest.mark.parametrize("fault, node, checks", [
    ("down", "store01", {"node.reachable", "slurm.srun"}),
    ("slurmd_off", "node01", {"slurm.slurmd", "slurm.srun"}),
    ("bad_key", "store02", {"munge.credential", "slurm.srun"}),
    ("launch_fails", "store02", {"slurm.srun"}),
])
def test_each_fault_fails_its_checks_on_its_node_only(sandbox, fault, node, checks):
    sandbox.faults = {fault: {node}}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == {(node, c) for c in checks} | {(None, "slurm.srun_all")}
    others = [n for n in ("node01", "store01", "store02") if n != node]
    if fault != "launch_fails":  # a node known to be broken is left out of the step
        assert srun_nodes(sandbox.log)[0] == ",".join(others)
    srun = next(c for c in report.all_checks() if c.node == node and c.check == "slurm.srun")
    assert srun.detail


@pytest.mark.parametrize("fault, node, checks, cluster_checks", [
    ("conf_drift", "store01", {"config.files"}, set()),
    ("mem_claim", "node01", {"slurm.node_definition"}, set()),
    ("mpi_broken", "store02", {"mpi.start"}, {"mpi.allreduce"}),
])
def test_user_job_faults_fail_on_their_node(sandbox, fault, node, checks, cluster_checks):
    sandbox.faults = {fault: {node}}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == {(node, c) for c in checks} | {(None, c) for c in cluster_checks}
    failed = next(c for c in report.all_checks() if c.node == node and c.check in checks)
    assert {"conf_drift": "/etc/slurm/slurm.conf differs", "mem_claim": "claims RealMemory=48000 MiB; the node "
            "has 24105 MiB", "mpi_broken": "Exited with exit code 127"}[fault] in failed.detail
    if fault == "mpi_broken":  # the job across the nodes failed everywhere; each node alone names the culprit
        cluster = next(c for c in report.checks if c.check == "mpi.allreduce")
        assert cluster.detail.endswith("alone, MPI does not start on store02")
        alone = [c for n, c in sandbox.log if " srun " in c and n != "ctl01"]
        assert sorted(n for n, c in sandbox.log if c in alone) == ["node01", "store01", "store02"]


@pytest.mark.parametrize("crashes", [1, 2])
def test_an_mpi_job_that_crashes_warns_when_a_later_launch_passes(sandbox, crashes):
    sandbox.faults = {"mpi_flaky": crashes}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == set() and report.verdict == "warn"
    allreduce = next(c for c in report.checks if c.check == "mpi.allreduce")
    assert allreduce.verdict == "warn" and "node01: Segmentation fault" in allreduce.detail
    assert {c.node: c.verdict for c in report.all_checks() if c.check == "mpi.start"} == dict.fromkeys(
        ("node01", "store01", "store02"), "pass")
    launches = [c for n, c in sandbox.log if n == "ctl01" and "--mpi=pmix" in c]
    assert len(launches) == crashes + 1  # launched again after every node started alone, until one passed


def test_an_mpi_job_that_crashes_on_every_launch_fails_after_three_and_bisection_names_a_pair(sandbox):
    sandbox.faults = {"mpi_flaky": 10}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == {(None, "mpi.allreduce"), (None, "mpi.bisect"), ("node01", "mpi.pair"),
                                ("store01", "mpi.pair")}
    allreduce = next(c for c in report.checks if c.check == "mpi.allreduce")
    assert "every node starts MPI alone: the fault is between the nodes" in allreduce.detail
    assert "bisection: the fault is between node01 and store01" in allreduce.detail
    launches = [c for n, c in sandbox.log if n == "ctl01" and "--mpi=pmix" in c]
    assert len(launches) == 1 + user_steps.MPI_RELAUNCHES + 2  # then the first half, failing twice


def test_mpi_broken_between_two_nodes_is_bisected_to_that_pair_and_the_report_lists_the_jobs(sandbox):
    sandbox.faults = {"mpi_pair": ("store01", "store02")}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == {(None, "mpi.allreduce"), (None, "mpi.bisect"), ("store01", "mpi.pair"),
                                ("store02", "mpi.pair")}
    assert {c.node: c.verdict for c in report.all_checks() if c.check == "mpi.start"} == dict.fromkeys(
        ("node01", "store01", "store02"), "pass")  # each alone
    found = next(c for c in report.checks if c.check == "mpi.bisect")
    assert found.subject == "store01<->store02" and found.value == 4
    assert found.detail.startswith("the fault is between store01 and store02: a job on the two of them alone fails")
    assert found.detail.endswith("; 4 jobs on 3 subsets: 1. half node01,store01: pass; 2. across node01,store02: pass; "
                                 "3. pair store[01-02]: fail (store01: Exited with exit code 1)")
    bisected = [shlex.split(c) for n, c in sandbox.log if n == "ctl01" and "certify-mpi-bisect-" in c]
    assert [s[s.index("-w") + 1] for s in bisected] == ["node01,store01", "node01,store02", "store01,store02",
                                                        "store01,store02"]
    assert all(s[:4] == ["runuser", "-u", "gp-certify", "--"] and "--mpi=pmix" in s for s in bisected)
    peer = {c.node: c.subject for c in report.all_checks() if c.check == "mpi.pair"}
    assert peer == {"store01": "store01<->store02", "store02": "store02<->store01"}
    # Every launch has the same limit (a bound from the runs alone failed healthy subsets under load, README)
    limits = [int(a[a.index("timeout") + 3]) for a in (shlex.split(c) for n, c in sandbox.log if n == "ctl01"
                                                        and "--mpi=pmix" in c)]
    assert limits == [user_jobs.MPI_TIMEOUT_S] * (1 + user_steps.MPI_RELAUNCHES + 4), limits


def test_a_package_version_two_nodes_of_a_group_disagree_on_names_both(sandbox):
    sandbox.faults = {"old_slurmd": {"store01"}}
    report = runner.collect(SPEC, CLUSTER, runner.CertifyOptions())
    assert failures(report) == {("store01", "config.packages"), ("store02", "config.packages")}
    detail = next(c.detail for c in report.all_checks() if c.node == "store01" and c.check == "config.packages")
    assert "slurmd 22.05.8-1 (others: 22.05.8-4)" in detail


def test_drain_failed_drains_only_failed_compute_nodes_naming_the_checks(sandbox):
    sandbox.faults = {"slurmd_off": {"node01"}}
    result = runner.certify(SPEC, CLUSTER, runner.CertifyOptions(drain_failed=True))
    assert result.drained == {"node01": "certify:slurm.srun,slurm.slurmd"}
    drains = [c for _, c in sandbox.log if c.startswith("scontrol update")]
    assert [shlex.split(c) for c in drains] == [["scontrol", "update", "nodename=node01", "state=drain",
                                                 "reason=certify:slurm.srun,slurm.slurmd"]]
    assert not result.ok and result.failed_nodes == ["node01"]


def test_a_cluster_without_running_nodes_is_an_error():
    planned = ClusterInfo(name="unit", provider="sandbox", nodes=tuple(
        n.model_copy(update={"state": "planned"}) for n in CLUSTER.nodes))
    with pytest.raises(runner.CertifyError, match="no running nodes"):
        runner.certify(SPEC, planned)


def test_unknown_level_is_a_usage_error():
    with pytest.raises(runner.UsageError, match="--level"):
        runner.CertifyOptions(level="deep")
