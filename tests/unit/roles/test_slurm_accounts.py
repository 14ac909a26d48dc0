"""The slurm_accounts action (playbooks/roles/slurm_accounts/action_plugins/slurm_accounts.py): it reads Slurm's
accounts, QoS, associations and queue in one command, and runs only the sacctmgr commands that make them what the
spec says. Pinned against sacctmgr's -P format (tests/fixtures/slurm_accounts/): a fresh cluster gets exactly the
commands to build the tree, a converged one none, a change of one limit one command, and nothing a job uses, nor
anything gpu-provision did not make, is removed."""
from __future__ import annotations

import base64
import copy
import importlib.util
import os
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "playbooks" / "roles" / "slurm_accounts" / "action_plugins" / "slurm_accounts.py"
FIXTURES = REPO / "tests" / "fixtures" / "slurm_accounts"


def _load():
    spec = importlib.util.spec_from_file_location("slurm_accounts_under_test", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sa = _load()

WANTED = {
    "cluster": "golden",
    "accounts": [{"name": "ml", "parent": "physics", "fairshare": 60, "max_jobs": None, "grp_tres": {}, "qos": []},
                 {"name": "physics", "parent": "root", "fairshare": 40, "max_jobs": 20,
                  "grp_tres": {"gres/gpu": 8, "cpu": 64}, "qos": ["long", "normal"]}],
    "qos": [{"name": "long", "priority": 10, "max_jobs_per_user": 2, "max_wall_minutes": 2880},
            {"name": "normal", "priority": 0, "max_jobs_per_user": None, "max_wall_minutes": 720}],
    "users": [{"name": "alice", "accounts": ["physics"]}, {"name": "bob", "accounts": ["ml", "physics"]}],
}


def _recorded(state: str) -> dict:
    return {read: sa.parse_records(read, (FIXTURES / state / f"{read}.txt").read_text()) for read in sa.READS}


def _plan(wanted: dict, state: str | dict):
    current = _recorded(state) if isinstance(state, str) else state
    changes, kept = sa.plan(sa.normalise(wanted), current)
    return [" ".join(c["argv"][2:]) for c in changes], kept


def _with(**changes) -> dict:
    wanted = copy.deepcopy(WANTED)
    for key, value in changes.items():
        wanted[key] = copy.deepcopy(value)
    return wanted


def test_a_fresh_cluster_gets_the_qos_then_the_tree_parents_first_then_the_users():
    commands, kept = _plan(WANTED, "fresh")
    assert commands == [
        "add qos long priority=10 maxjobsperuser=2 maxwall=2880 description=gpu-provision",
        "modify qos where name=normal set maxwall=720",
        "add account physics cluster=golden parent=root fairshare=40 maxjobs=20 grptres=cpu=64,gres/gpu=8 "
        "qos=long,normal defaultqos=long description=physics organization=gpu-provision",
        "add account ml cluster=golden parent=physics fairshare=60 description=ml organization=gpu-provision",
        "add user alice account=physics cluster=golden",
        "add user bob account=ml cluster=golden",
        "add user bob account=physics cluster=golden",
    ]
    assert kept == []


def test_a_converged_cluster_gets_no_command():
    assert _plan(WANTED, "converged") == ([], [])


# The spec tests/e2e's shared cluster was deployed with on this machine, and what its slurmdbd (Slurm 24.11.5)
# answered to the reads afterwards, with a job of each user queued (recorded-24.11/).
RECORDED_WANTED = {
    "cluster": "u33",
    "accounts": [{"name": "physics", "parent": "root", "fairshare": 40, "max_jobs": 20, "grp_tres": {},
                  "qos": ["normal", "long"]},
                 {"name": "ml", "parent": "physics", "fairshare": 60, "max_jobs": None, "grp_tres": {}, "qos": []}],
    "qos": [{"name": "long", "priority": 10, "max_jobs_per_user": 1, "max_wall_minutes": 2880}],
    "users": [{"name": "alice", "accounts": ["physics"]}, {"name": "bob", "accounts": ["ml", "physics"]}],
}


def test_a_cluster_as_slurmdbd_recorded_it_after_the_run_gets_no_command():
    """A sub-account without limits of its own reads as inheriting its parent's: no 'maxjobs=-1' on every run (the
    associations read asks for each one's own limits, sacctmgr's wopl; a plain show prints the parent's on the child)."""
    assert "wopl" in sa.READS["associations"]
    assert _plan(RECORDED_WANTED, "recorded-24.11") == ([], [])


def test_changing_one_limit_changes_only_that():
    wanted = copy.deepcopy(WANTED)
    wanted["accounts"][1]["max_jobs"] = 30
    assert _plan(wanted, "converged") == (["modify account where name=physics cluster=golden set maxjobs=30"], [])


def test_a_limit_taken_out_is_cleared_with_minus_one():
    wanted = copy.deepcopy(WANTED)
    wanted["accounts"][1].update(max_jobs=None, grp_tres={"cpu": 64})
    wanted["qos"][0]["max_wall_minutes"] = None
    commands, _ = _plan(wanted, "converged")
    assert commands == ["modify qos where name=long set maxwall=-1",
                        "modify account where name=physics cluster=golden set maxjobs=-1 grptres=cpu=64,gres/gpu=-1"]


def test_a_new_default_account_is_set_before_the_old_association_goes():
    commands, _ = _plan(_with(users=[{"name": "alice", "accounts": ["physics"]}, {"name": "bob", "accounts": ["physics"]}]),
                        _recorded("converged") | {"jobs": []})
    assert commands == ["modify user where name=bob set defaultaccount=physics",
                        "remove user where name=bob account=ml cluster=golden"]


def test_what_a_job_uses_is_kept_and_the_run_says_why():
    wanted = _with(accounts=[WANTED["accounts"][1]], qos=[WANTED["qos"][1]],
                   users=[{"name": "alice", "accounts": ["physics"]}])
    wanted["accounts"][0]["qos"] = ["normal"]
    commands, kept = _plan(wanted, "converged")
    assert commands == ["modify account where name=physics cluster=golden set qos=normal defaultqos=normal",
                        "remove user where name=bob account=physics cluster=golden"]
    assert kept == ["kept user bob in account ml: 1 job(s) of theirs there are pending or running",
                    "kept account ml: 1 job(s) in it are pending or running",
                    "kept QoS long: 1 job(s) with it are pending or running"]


def test_without_jobs_removals_go_users_first_then_children_then_qos():
    wanted = _with(accounts=[], qos=[], users=[])
    commands, kept = _plan(wanted, _recorded("converged") | {"jobs": []})
    assert commands == ["remove user where name=alice account=physics cluster=golden",
                        "remove user where name=bob account=ml cluster=golden",
                        "remove user where name=bob account=physics cluster=golden",
                        "remove account where name=ml cluster=golden",
                        "remove account where name=physics cluster=golden",
                        "remove qos where name=long"]
    assert kept == []


def test_what_gpu_provision_did_not_make_is_never_removed_and_is_adopted_when_listed():
    current = _recorded("converged") | {"jobs": []}
    current["accounts"] = [dict(a, organization="site") if a["account"] == "ml" else a for a in current["accounts"]]
    current["qos"] = [dict(q, description="site's own") for q in current["qos"]]
    commands, _ = _plan(_with(accounts=[WANTED["accounts"][1]], qos=[], users=[]), current)
    assert "remove account where name=ml cluster=golden" not in commands
    assert "remove qos where name=long" not in commands
    assert "remove user where name=bob account=ml cluster=golden" not in commands  # neither bob nor ml is ours now
    listed = copy.deepcopy(current)
    assert _plan(WANTED, listed)[0] == ["modify account where name=ml cluster=golden set organization=gpu-provision"]


def test_sacctmgr_times_read_as_minutes():
    assert [sa.minutes(t) for t in ("", "00:30:00", "12:00:00", "2-00:00:00", "1-00:00:01", "45:00")] == \
        [None, 30, 720, 2880, 1441, 45]


def test_the_grp_tres_list_reads_as_a_mapping():
    assert sa.tres("cpu=64,mem=1024,gres/gpu=8") == {"cpu": 64, "mem": 1024, "gres/gpu": 8}
    assert sa.tres("") == {}


def _fake_bin(tmp_path: Path, state: str, fail: str | None = None) -> dict:
    """sacctmgr and squeue that print the recorded answer of each read (by its `show` word)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    words = {"association": "associations", "account": "accounts", "qos": "qos", "user": "users"}
    cases = "\n".join(f"  *' show {word} '*) cat {FIXTURES / state / (read + '.txt')} ;;" for word, read in words.items())
    (bin_dir / "sacctmgr").write_text(f"#!/bin/sh\ncase \" $* \" in\n{cases}\n  *) exit 9 ;;\nesac\n"
                                      + (f"[ \"$3\" = {fail} ] && {{ echo 'sacctmgr: error: Problem talking to the "
                                         "database: Connection refused'; exit 1; }}\n" if fail else ""))
    (bin_dir / "squeue").write_text(f"#!/bin/sh\ncat {FIXTURES / state / 'jobs.txt'}\n")
    for tool in ("sacctmgr", "squeue"):
        (bin_dir / tool).chmod(stat.S_IRWXU)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_the_read_script_runs_every_read_once_and_parses_back(tmp_path):
    env = _fake_bin(tmp_path, "converged")
    out = subprocess.run(["sh", "-c", sa.read_script()], capture_output=True, text=True, env=env, check=True).stdout
    assert sa.parse_read(out) == _recorded("converged")


def test_a_read_that_fails_or_is_cut_short_fails_the_task():
    ok = "".join(f"read\t{k}\t0\t{base64.b64encode(b'').decode()}\n" for k in sa.READS)
    assert sa.parse_read(ok + "end\n")["jobs"] == []
    with pytest.raises(sa.AccountsError, match="cut short"):
        sa.parse_read(ok)
    refused = base64.b64encode(b"sacctmgr: error: Problem talking to the database").decode()
    with pytest.raises(sa.AccountsError, match="failed .exit 1.: sacctmgr: error: Problem talking"):
        sa.parse_read(ok.replace("read\tqos\t0\t", f"read\tqos\t1\t{refused}") + "end\n")
    with pytest.raises(sa.AccountsError, match="a qos line has 2 fields, not 5"):
        sa.parse_records("qos", "normal|0\n")


@pytest.mark.parametrize("bad", [{"cluster": "a b"}, {"cluster": "-x"}, {"users": [{"name": "a|b"}]},
                                 {"accounts": [{"name": "x=y"}]}, {"frobnicate": 1}])
def test_a_name_sacctmgr_would_read_otherwise_is_refused(bad):
    with pytest.raises(sa.AccountsError):
        sa.normalise({**WANTED, **bad})
