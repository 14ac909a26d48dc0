"""`provision users`: who has access, read from the controller's answer (tests/fixtures/people/: one recorded on the
shared e2e cluster, two edited to a later state and to a cluster with a directory). The live command is run by
tests/e2e/test_users.py."""
from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

from provision.status.people import READS, command, parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "people"
LISTED = ["alice", "bob", "carol"]
WITH_DIRECTORY = [*LISTED, "dave", "frank"]  # the users, then accounting.users (the directory's people)


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
    assert out.split() == ["alice:1", "bob:"] and "secret" not in out and READS["shadow"] in command(LISTED)


def test_a_directory_person_is_found_by_name_and_marked_directory_the_listed_ones_local():
    view = _view("directory.edited.txt", WITH_DIRECTORY)
    assert view.error is None and view.notes == ()  # a name getent did not find (exit 2) is not a failed read
    assert [(p.name, p.uid, p.source, p.state, p.listed, p.managed, p.accounts) for p in view.people] == [
        ("alice", 2001, "local", "active", True, True, ("physics",)),
        ("bob", 2002, "local", "active", True, True, ("ml", "physics")),
        ("carol", 2003, "local", "active", True, True, ()),
        ("dave", 3001, "directory", "active", True, False, ("physics",)),  # not in the listing of passwd
        ("frank", None, "", "missing", True, False, ("physics",)),  # an association, but no one of that name
    ]
    dave = view.to_dict()["people"][3]
    assert (dave["source"], dave["home"], dave["shell"]) == ("directory", "/shared/home/dave", "/bin/bash")


def test_without_the_lookup_by_name_a_directory_person_would_read_as_missing():
    text = (FIXTURES / "directory.edited.txt").read_text()
    assert "\n@@ named\n" in text
    without = parse(text[:text.index("@@ named\n")], WITH_DIRECTORY)
    assert [(p.name, p.uid, p.source, p.state) for p in without.people][3] == ("dave", None, "", "missing")


def test_a_person_of_the_node_s_files_not_in_the_spec_is_local():
    people = {p.name: p for p in _view("dropped.edited.txt", ["alice", "bob"]).people}
    assert (people["dave"].source, people["carol"].source, people["alice"].source) == ("local",) * 3


def test_a_failed_lookup_by_name_is_a_note():
    text = (FIXTURES / "directory.edited.txt").read_text().replace("@@ exit 2", "@@ exit 1")
    view = parse(text, WITH_DIRECTORY)
    assert view.notes == ("named: dave:*:3001:3001:dave:/shared/home/dave:/bin/bash",)
    assert [(p.name, p.state) for p in view.people][3] == ("dave", "missing")


def test_the_names_are_looked_up_only_when_there_are_some():
    assert "@@ named" not in command([])  # `getent passwd --` without a key would list every account
    assert "getent passwd -- alice dave 2>&1;" in command(["alice", "dave"])


def test_a_hostile_name_reaches_getent_as_one_argument_and_runs_nothing(tmp_path):
    hostile = "x'; touch pwned; echo \"$(touch pwned2)\" `touch pwned3` -s files #"
    fake = tmp_path / "getent"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf \'%s\\n\' "$a"; done\n')
    fake.chmod(stat.S_IRWXU)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    text = command(["alice", hostile])
    assert shlex.quote(hostile) in text
    out = subprocess.run(["sh", "-c", text], capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    named = out[out.index("@@ named\n") + len("@@ named\n"):].splitlines()
    assert named[:4] == ["passwd", "--", "alice", hostile]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["getent"]


def test_certifys_user_is_listed_after_the_people_as_certify_not_locked():
    text = (FIXTURES / "now.txt").read_text().replace(
        "carol:x:2003:2003::/shared/home/carol:/bin/bash\n",
        "carol:x:2003:2003::/shared/home/carol:/bin/bash\ngp-certify:x:59990:59990::/shared/home/gp-certify:"
        "/usr/sbin/nologin\n", 1)
    view = parse(text, [*LISTED, "gp-certify"], "gp-certify")
    certify = view.people[-1]
    assert (certify.name, certify.uid, certify.state, certify.listed) == ("gp-certify", 59990, "certify", True)
    assert [p.state for p in view.people[:3]] == ["active"] * 3
    assert parse(text, [*LISTED, "gp-certify"]).people[-1].state == "locked"  # nologin, were it a person
    missing = parse((FIXTURES / "now.txt").read_text(), [*LISTED, "gp-certify"], "gp-certify").people[-1]
    assert missing.state == "missing"  # the users role has not made it: `provision users` exits 1
