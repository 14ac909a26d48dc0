"""Slurm and munge checks: each failure lands on the node that causes it; drain names the failed checks."""
from __future__ import annotations

import shlex
from pathlib import Path
import subprocess

import pytest

from provision.certify.control import slurm_checks as sc
from provision.cluster import converge

OK = {"munge_rc": "0", "munge": "STATUS: Success (0)", "slurmd": "active"}
WRONG_KEY = {"munge_rc": "1", "munge": "unmunge: Error: Invalid credential", "slurmd": "active"}


def verdicts(checks):
    return {c.node: c.verdict for c in checks}


def test_precheck_writes_the_expectation_and_reports_fields(tmp_path, monkeypatch):
    monkeypatch.setattr(sc, "RUN_ROOT", str(tmp_path))
    digest = tmp_path / "DIGEST"
    digest.write_text("abc123\n")
    command = sc.precheck_command("r1", '{"node": "n1", "note": "it\'s"}', None, True, str(digest))
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
    fields = sc.parse_fields(done.stdout)
    assert fields["probe_digest"] == "abc123" and "slurmd" in fields
    assert (tmp_path / "r1" / "expect.json").read_text() == '{"node": "n1", "note": "it\'s"}\n'


def test_precheck_decodes_the_credential_it_is_given():
    command = sc.precheck_command("r1", "{}", "MUNGE:AAAA:", False, "/nonexistent")
    assert "printf '%s' MUNGE:AAAA: | unmunge" in command
    assert "slurmd" not in command and "probe_digest" not in command


def test_a_node_with_another_munge_key_fails_alone():
    checks = sc.munge_checks("MUNGE:x:", "ctl01", None, {"ctl01": OK, "node01": OK, "store01": WRONG_KEY,
                                                         "store02": OK})
    assert verdicts(checks) == {"ctl01": "pass", "node01": "pass", "store01": "fail", "store02": "pass"}
    bad = next(c for c in checks if c.node == "store01")
    assert "Invalid credential" in bad.value and "--limit store01" in bad.detail


def test_when_every_node_rejects_the_controller_it_is_the_controller_that_fails():
    checks = sc.munge_checks("MUNGE:x:", "ctl01", None, {"node01": WRONG_KEY, "store01": WRONG_KEY})
    assert verdicts(checks) == {"ctl01": "fail", "node01": "pass", "store01": "pass"}


def test_controller_that_cannot_make_a_credential_fails():
    checks = sc.munge_checks(None, "ctl01", "munge: Error: Failed to access socket", {"node01": OK})
    assert verdicts(checks) == {"ctl01": "fail"} and "Failed to access" in checks[0].detail


def test_slurmd_and_probe_checks():
    assert sc.slurmd_check("n1", {"slurmd": "active"}).verdict == "pass"
    down = sc.slurmd_check("n1", {"slurmd": "inactive"})
    assert down.verdict == "fail" and down.value == "inactive"
    assert sc.probe_check("n1", {"probe_digest": "d" * 64}, "d" * 64).verdict == "pass"
    stale = sc.probe_check("n1", {"probe_digest": "e" * 64}, "d" * 64)
    missing = sc.probe_check("n1", {"probe_digest": ""}, "d" * 64)
    assert stale.verdict == missing.verdict == "fail"
    assert "another version" in stale.detail and "not installed" in missing.detail
    assert "--tags certify --limit n1" in stale.detail


SINFO = """Slurmctld(primary) at ctl01 is UP
--
node01|idle|none
store01|drained|certify: slurm.srun,node.reachable
store02|idle*|none
node04|mixed|none
node05|down*|Not responding
"""


def test_sinfo_states_and_what_can_take_a_step():
    ping, states = sc.parse_states(SINFO)
    assert sc.controller_check("ctl01", ping).verdict == "pass"
    got = {n: sc.node_state_check(n, states.get(n)).verdict for n in [*states, "ghost"]}
    assert got == {"node01": "pass", "store01": "fail", "store02": "fail", "node04": "pass", "node05": "fail",
                   "ghost": "fail"}
    assert "certify: slurm.srun" in sc.node_state_check("store01", states["store01"]).detail
    assert [n for n in [*states, "ghost"] if sc.runnable(states.get(n))] == ["node01", "node04"]


def test_controller_down():
    check = sc.controller_check("ctl01", "Slurmctld(primary) at ctl01 is DOWN")
    assert check.verdict == "fail" and check.node == "ctl01"


@pytest.mark.parametrize("text, state, done", [
    ("COMPLETED|0:0\n", "COMPLETED", True),
    ("RUNNING|0:0\n", "RUNNING", False),
    ("", None, False),
    ("FAILED|1:0\n", "FAILED", True),
])
def test_sacct_parsing(text, state, done):
    accounted = sc.parse_sacct(text)
    assert accounted.state == state and accounted.done is done


def test_sbatch_check_verdicts():
    assert sc.sbatch_check("12", sc.Accounted("COMPLETED", "0:0"), seconds=2.0).verdict == "pass"
    failed = sc.sbatch_check("12", sc.Accounted("FAILED", "1:0"))
    assert failed.verdict == "fail" and "FAILED" in failed.detail
    assert "never appeared in sacct" in sc.sbatch_check("12", sc.Accounted(None, None)).detail
    assert sc.sbatch_check(None, None, "sbatch: error: Batch job submission failed").verdict == "fail"
    assert all(c.node is None for c in (failed,))


def test_sbatch_command_spans_the_nodes_and_discards_output():
    argv = shlex.split(sc.sbatch_command(["n1", "n2"], "certify-sbatch-r1"))
    assert argv[:2] == ["sbatch", "--parsable"] and "-N2" in argv and argv[argv.index("-w") + 1] == "n1,n2"
    assert argv[argv.index("-o") + 1] == "/dev/null" and argv[-1] == "srun hostname"


def test_srun_all_names_the_missing_nodes():
    check = sc.srun_all_check(["a", "b", "c"], ["a", "c"], 3.2)
    assert check.verdict == "fail" and check.value == "2/3" and "b" in check.detail
    assert sc.srun_all_check(["a"], ["a"], 1.0).verdict == "pass"


def test_drain_command_names_each_failed_check_once_and_is_quoted():
    command = sc.drain_command("node01", ["slurm.srun", "node.reachable", "slurm.srun"])
    assert shlex.split(command) == ["scontrol", "update", "nodename=node01", "state=drain",
                                    "reason=certify:slurm.srun,node.reachable"]
    long = sc.drain_reason([f"check.number_{i}" for i in range(40)])
    assert len(long) == 200 and long.endswith("...")


def test_a_drain_reason_names_the_failed_check_in_sinfo_r_width_and_certify_knows_it_as_its_own():
    reason = sc.drain_reason(["slurm.srun", "node.reachable"])
    assert reason[:20] == "certify:slurm.srun,n"  # sinfo -R's default column: the first check whole
    assert reason.startswith(converge.CERTIFY_REASON)  # `certify --release` resumes it (and older "certify: ...")


def test_reachable_check():
    assert sc.reachable_check("n1", None).verdict == "pass"
    failed = sc.reachable_check("n1", "10.0.0.1:22: timed out")
    assert failed.verdict == "fail" and "timed out" in failed.detail


def test_without_accounting_the_batch_job_is_read_from_slurmctld():
    completed, failed = (Path(__file__).resolve().parents[2] / "fixtures" / "slurm" /
                         "scontrol_show_job_22.05_no_accounting.txt").read_text().splitlines()
    assert sc.job_state_command("42", accounting=False) == "scontrol show job -o 42"
    assert sc.job_state_command("42", accounting=True).startswith("sacct ")
    ok = sc.parse_job_state(completed, accounting=False)
    assert (ok.state, ok.exit_code, ok.done) == ("COMPLETED", "0:0", True)
    check = sc.sbatch_check("1120", ok, accounting=False)
    assert check.verdict == "pass" and check.source == "sbatch + scontrol show job (no accounting)"
    assert "accounted" not in check.detail
    bad = sc.parse_job_state(failed, accounting=False)
    assert sc.sbatch_check("1121", bad, accounting=False).detail == "job 1121 ended FAILED (exit 1:0)"
    gone = sc.sbatch_check("7", sc.parse_job_state("slurm_load_jobs error: Invalid job id specified", False),
                           accounting=False)
    assert gone.verdict == "fail" and gone.detail == "slurmctld does not know the job it accepted"
