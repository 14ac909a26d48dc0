"""certify's own user: the check script run for real here (as this test's user), its judgement, and the command
line that submits a step as the user."""
from __future__ import annotations

import shlex
import subprocess

import pytest

from provision.certify.control import as_user, srun
from provision.certify.control.slurm_checks import parse_fields, sbatch_command
from provision.certify.control.srun import NODE_MARK, Step, StepOutput


def run_check(prelude: str = "") -> dict[str, str]:
    """The check script with shell functions in front of it that stand in for a broken node's commands."""
    done = subprocess.run(["sh", "-c", prelude + as_user.CHECK], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return parse_fields(done.stdout)


def test_the_check_passes_for_a_user_with_a_home_and_tmp():
    fields = run_check()
    assert fields["user_check"] == "pass" and fields["uid"].isdigit() and fields["home"].startswith("/")


@pytest.mark.parametrize("prelude, reason", [
    ('id() { if [ "$1" = -u ]; then echo 59990; else return 1; fi; }\n', "uid 59990 does not resolve on this node"),
    ('getent() { echo "gp:x:59990:59990::/nonexistent/gp:/usr/sbin/nologin"; }\n',
     "the home /nonexistent/gp of"),
    ('getent() { echo "gp:x:59990:59990::/proc:/usr/sbin/nologin"; }\n', "cannot write in its home /proc"),
    ('mktemp() { case "$2" in /tmp) return 1;; *) command mktemp "$@";; esac; }\n', "cannot write in /tmp"),
])
def test_the_check_names_what_stops_the_user_on_the_node(prelude, reason):
    fields = run_check(prelude)
    assert fields["user_check"] == "fail" and reason in fields["user_reason"]


def _output(texts: dict[str, str], errors: dict[str, str] | None = None) -> StepOutput:
    return StepOutput(0, {n: f"{NODE_MARK}{n}\n{t}" for n, t in texts.items()}, errors or {})


def test_each_node_is_judged_by_its_own_answer():
    one = as_user.step(["a01", "a02", "a03"], "gp-certify", "certify-user-x")
    results = as_user.checks(one, _output({
        "a01": "user=gp-certify\nuid=59990\nhome=/shared/home/gp-certify\naccount=gp-certify\nuser_check=pass\n",
        "a02": "user_check=fail\nuser_reason=uid 59990 does not resolve on this node (getent passwd 59990 ...)\n",
    }, {"a03": "Communication connection failure"}))
    got = {c.node: c for c in results}
    assert {n: c.verdict for n, c in got.items()} == {"a01": "pass", "a02": "fail", "a03": "fail"}
    assert "in account gp-certify" in got["a01"].detail and "/shared/home/gp-certify" in got["a01"].detail
    assert got["a02"].detail.startswith("uid 59990 does not resolve") and "people cannot run" in got["a02"].detail
    assert "Communication connection failure" in got["a03"].detail
    assert as_user.passed(results) == ["a01"]


def test_a_step_as_the_user_is_submitted_with_runuser_from_tmp():
    one = Step(("a01", "a02"), "hostname", "certify-x", 30, env=(("SLURM_RESERVATION", "hold it"),),
               user="gp-certify")
    argv = shlex.split(one.shell())
    assert argv[:6] == ["runuser", "-u", "gp-certify", "--", "env", "SLURM_RESERVATION=hold it"]
    assert argv[6:8] == ["timeout", "-k"] and "--chdir=/tmp" in argv and argv[-3:-1] == ["bash", "-c"]
    root = shlex.split(Step(("a01",), "hostname", "certify-x", 30).shell())
    assert root[0] == "timeout" and "--chdir=/tmp" not in root


def test_the_batch_job_is_submitted_as_the_user_too():
    argv = shlex.split(sbatch_command(["a01", "a02"], "certify-sbatch-x", "gp-certify"))
    assert argv[:5] == ["runuser", "-u", "gp-certify", "--", "sbatch"] and "--chdir=/tmp" in argv
    assert argv.index("--chdir=/tmp") < argv.index("--wrap")
    assert shlex.split(sbatch_command(["a01"], "certify-sbatch-x"))[0] == "sbatch"


def test_the_user_check_runs_a_real_shell_step_quoted_once():
    one = as_user.step(["a01"], "gp-certify", "certify-user-x")
    task = shlex.split(one.shell())[-1]
    assert task.startswith(f"echo {NODE_MARK}$SLURMD_NODENAME; exec sh -c ")
    assert shlex.split(task.split("; exec ", 1)[1])[-1] == as_user.CHECK
    assert one.timeout_s == as_user.TIMEOUT_S and srun.KILL_AFTER_S > 0
