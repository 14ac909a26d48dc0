"""`provision users`: who has access, read from the controller's answer (tests/fixtures/people/: one recorded on the
shared e2e cluster, one edited to a later state). The live command is run by tests/e2e/test_users.py."""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from provision.status.people import COMMAND, READS, parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "people"
LISTED = ["alice", "bob", "carol"]


def _view(name: str, listed: list[str] = LISTED):
    return parse((FIXTURES / name).read_text(), listed)


def _rows(view) -> list[tuple]:
    return [(p.name, p.uid, p.state, p.listed, p.managed, p.accounts, p.qos) for p in view.people]


def test_the_recorded_cluster_lists_its_people_with_their_accounts_default_first():
    view = _view("now.txt")
    assert view.error is None and view.notes == ()
    assert _rows(view) == [
        ("alice", 2001, "active", True, True, ("physics",), ("long", "normal")),
        ("bob", 2002, "active", True, True, ("ml", "physics"), ("long", "normal")),  # ml is bob's default
        ("carol", 2003, "active", True, True, (), ()),
    ]
    assert view.people[0].home == "/shared/home/alice" and view.people[0].shell == "/bin/bash"
    # service accounts (munge 980, slurm 981), nobody, root and expired system accounts are not people
    assert all(p.uid >= 1000 for p in view.people)


def test_a_dropped_user_is_locked_a_hand_made_one_unmanaged_and_a_failed_read_a_note():
    view = _view("dropped.edited.txt", ["alice", "bob"])
    rows = {row[0]: row for row in _rows(view)}
    assert rows["carol"] == ("carol", 2003, "locked", False, True, (), ())
    assert rows["dave"] == ("dave", 3000, "unmanaged", False, False, (), ())
    assert [p.name for p in view.people] == ["alice", "bob", "carol", "dave"]  # the spec's first, then by name
    assert rows["alice"][5] == ()  # slurmdbd did not answer: no accounts known, and the note says why
    assert view.notes == ("associations: sacctmgr: error: Problem talking to the database: Connection refused",)
    assert view.to_dict()["people"][2]["state"] == "locked"


def test_a_listed_user_without_an_account_on_the_controller_is_missing():
    view = _view("now.txt", ["alice", "erin"])
    assert [(p.name, p.state, p.uid) for p in view.people][:2] == [("alice", "active", 2001), ("erin", "missing", None)]


def test_a_controller_that_cannot_list_its_accounts_is_an_error():
    text = (FIXTURES / "now.txt").read_text()
    broken = text.replace("@@ passwd\n", "@@ passwd\ngetent: cannot open database\n").replace(
        "carol:x:2003:2003::/shared/home/carol:/bin/bash\n@@ exit 0", "@@ exit 2")
    view = parse(broken, LISTED)
    assert view.people == () and view.error.startswith("the controller did not list its accounts (getent passwd)")
    assert parse("Permission denied\n", LISTED).error is not None


def test_the_shadow_read_never_carries_a_password_field(tmp_path):
    fake = tmp_path / "getent"
    fake.write_text("#!/bin/sh\necho 'alice:$y$j9T$secretsalt$secrethash:20785:0:99999:7::1:'\n"
                    "echo 'bob:!:20785:0:99999:7:::'\n")
    fake.chmod(stat.S_IRWXU)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    out = subprocess.run(["sh", "-c", READS["shadow"]], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["alice:1", "bob:"] and "secret" not in out and "shadow" in COMMAND
