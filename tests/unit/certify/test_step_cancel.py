"""A step that its timeout ended has its own job cancelled (session.step): srun stopped on the controller leaves the
allocation behind, and it held 32 nodes of the 64-node sandbox from every later bisection job."""
from __future__ import annotations

import shlex

from provision.certify.control import srun
from provision.certify.control.fleet import Outcome
from provision.certify.control.session import Session, step
from test_run_collect import CLUSTER, SPEC


class Controller:
    """The controller: srun ends with `rc` (124: `timeout` stopped it); every command is logged."""

    def __init__(self, rc):
        self.rc, self.log = rc, []

    def run(self, name, command, timeout=60.0):
        self.log.append((name, command))
        if " srun " in f" {command}":
            return Outcome(name, self.rc, "", "") if self.rc is not None else Outcome(name, None, error="lost")
        return Outcome(name, 0)


def job_names(log):
    steps = [shlex.split(c) for _, c in log if c.startswith("timeout ")]
    return [next(a.split("=", 1)[1] for a in s if a.startswith("--job-name=")) for s in steps]


def one():
    return srun.Step(("node01", "store01"), "true", "certify-mpi-bisect-r1", 180)


def test_every_step_has_a_job_name_of_its_own_and_a_finished_one_is_not_cancelled():
    run, fleet = Session(SPEC, CLUSTER, None, lambda _: None), Controller(0)
    step(run, fleet, one())
    step(run, fleet, one())
    assert job_names(fleet.log) == ["certify-mpi-bisect-r1-1", "certify-mpi-bisect-r1-2"]
    assert not [c for _, c in fleet.log if c.startswith("scancel")]


def test_a_step_its_timeout_ended_or_whose_command_was_lost_has_exactly_its_job_cancelled():
    for rc in (124, 137, None):
        run, fleet = Session(SPEC, CLUSTER, None, lambda _: None), Controller(rc)
        step(run, fleet, one())
        output, _, _ = step(run, fleet, one())
        assert output.timed_out or rc is None
        cancels = [(n, c) for n, c in fleet.log if c.startswith("scancel")]
        assert cancels == [("ctl01", "scancel --name=certify-mpi-bisect-r1-1"),
                           ("ctl01", "scancel --name=certify-mpi-bisect-r1-2")]
