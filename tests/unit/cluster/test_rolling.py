"""deploy --rolling: batch sizes, batches, what a roll reports; the hold and resume commands it sends to Slurm.
The roll itself runs on a sandbox cluster in tests/e2e/test_health.py."""
from __future__ import annotations

import pytest

from provision.cluster import rolling
from provision.cluster.rolling import BatchOutcome, RollResult, batch_size, plan_batches
from provision.errors import EXIT_BAD_INPUT, UsageError
from provision.records import ClusterInfo
from provision.remote.commands import CommandResult
from provision.slurm import admin
from provision.spec.model import ClusterSpec


@pytest.mark.parametrize("text, total, size", [("2", 6, 2), ("1", 1, 1), ("25%", 8, 2), ("10%", 6, 1),
                                               ("100%", 6, 6), ("50%", 5, 2), (" 3 ", 6, 3)])
def test_a_batch_is_a_count_or_a_share_of_the_compute_nodes(text, total, size):
    assert batch_size(text, total) == size


@pytest.mark.parametrize("text", ["0", "-1", "two", "0%", "101%", "2.5", "", "%"])
def test_a_bad_batch_size_is_a_usage_error(text):
    with pytest.raises(UsageError, match="is not a batch size") as caught:
        batch_size(text, 6)
    assert caught.value.exit_code == EXIT_BAD_INPUT


def test_batches_keep_the_node_order():
    assert plan_batches(["c1", "c2", "c3", "c4", "c5"], 2) == [["c1", "c2"], ["c3", "c4"], ["c5"]]


def test_a_roll_that_stopped_names_the_batches_it_never_touched():
    result = RollResult([["c1", "c2"], ["c3", "c4"], ["c5", "c6"]])
    result.outcomes = [BatchOutcome(1, ["c1", "c2"], True, "released"),
                       BatchOutcome(2, ["c3", "c4"], False, "certify", "certify failed on c3")]
    assert not result.ok and result.untouched == ["c5", "c6"]
    assert result.as_dict()["outcomes"][1] == {"index": 2, "nodes": ["c3", "c4"], "ok": False, "stage": "certify",
                                               "detail": "certify failed on c3"}
    result.outcomes = result.outcomes[:1] + [BatchOutcome(2, ["c3", "c4"], True, "released"),
                                             BatchOutcome(3, ["c5", "c6"], True, "released")]
    assert result.ok and result.untouched == []
    assert not RollResult([["c1"]], first_step="deploy failed on ctl01: x").ok


class Controller:
    """A fake controller: a hold reservation (or none), sinfo lines, every command recorded."""

    def __init__(self, held: str = "", sinfo: str = "", users: str = "root") -> None:
        self.held, self.sinfo, self.users, self.commands = held, sinfo, users, []

    def __call__(self, command: str) -> CommandResult:
        self.commands.append(command)
        if command.startswith("scontrol -o show reservation"):
            if not self.held:
                return CommandResult("ctl01", 1, "", "Reservation gpu_provision_certify not found")
            return CommandResult("ctl01", 0, f"ReservationName=gpu_provision_certify Nodes={self.held} "
                                             f"Users={self.users} Flags=MAINT", "")
        if command.startswith("sinfo"):
            return CommandResult("ctl01", 0, self.sinfo, "")
        return CommandResult("ctl01", 0, "", "")


def test_hold_creates_the_reservation_or_adds_to_it():
    new = Controller()
    admin.hold(new, ["c3", "c4"], users="root,admin")
    assert new.commands[-1] == ("scontrol create reservation ReservationName=gpu_provision_certify Nodes='c[3-4]' "
                                "StartTime=now Duration=infinite Users=root,admin Flags=MAINT,IGNORE_JOBS")
    more = Controller(held="c1")
    admin.hold(more, ["c3"])
    assert more.commands[-1] == "scontrol update ReservationName=gpu_provision_certify Nodes='c[1,3]'"
    same = Controller(held="c[1,3]")
    admin.hold(same, ["c3"])
    assert not any("update" in c or "create" in c for c in same.commands)


def test_only_nodes_drained_with_the_prefix_are_resumed():
    ctl = Controller(sinfo="c1|drained$|certify: slurm.srun\nc2|drained|admin: bad fan\nc3|maint|none\n"
                           "c4|draining|certify: mpi.start\n")
    assert admin.resume_drained(ctl, ["c1", "c2", "c3", "c4"], "certify:", sleep=lambda s: None) == ["c1", "c4"]
    assert "scontrol update nodename='c[1,4]' state=resume" in ctl.commands


class Busy(Controller):
    """A controller whose nodes run the given jobs, one squeue answer per poll."""

    def __init__(self, polls: list[str]) -> None:
        super().__init__()
        self.polls = polls

    def __call__(self, command: str) -> CommandResult:
        if command.startswith("squeue"):
            self.commands.append(command)
            return CommandResult("ctl01", 0, self.polls.pop(0) if self.polls else "", "")
        return super().__call__(command)


def test_waiting_for_jobs_says_which_jobs_how_long_and_the_timeout():
    lines: list[str] = []
    admin.wait_for_jobs(Busy(["41\n42\n", "41\n42\n", "42\n", ""]), ["c1", "c2"], 600.0, False, lines.append,
                              sleep=lambda s: None)
    assert lines == ["waiting for job(s) 41, 42 on c[1-2]: 0 s of 600 s (--drain-timeout)",
                     "waiting for job(s) 42 on c[1-2]: 0 s of 600 s (--drain-timeout)"]  # the same jobs: said once


def test_certifys_user_may_run_in_a_batchs_hold():
    spec = ClusterSpec.model_validate({"name": "r", "provider": {"type": "sandbox"},
                                       "node_groups": [{"name": "ctl", "roles": ["controller"], "count": 1}]})
    cluster = ClusterInfo(name="r", provider="static", ssh_user="admin", nodes=())
    assert rolling.hold_users(spec, cluster) == "root,admin,gp-certify"
    as_root = spec.model_copy(update={"certify": spec.certify.model_copy(update={"user": None})})
    assert rolling.hold_users(as_root, cluster.model_copy(update={"ssh_user": "root"})) == "root"


def test_hold_admits_users_a_reservation_made_earlier_lacks():
    earlier = Controller(held="c1", users="root")
    admin.hold(earlier, ["c1"], users="root,gp-certify")
    assert earlier.commands[-1] == "scontrol update ReservationName=gpu_provision_certify Users+=gp-certify"
    admitted = Controller(held="c1", users="root,gp-certify")
    admin.hold(admitted, ["c1"], users="root,gp-certify")
    assert not any(c.startswith("scontrol update") for c in admitted.commands)
