"""`provision users` as a table: each person's source (local, directory, or - when neither has them) is a column."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from provision.cli import users_cmd
from provision.status.people import parse

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "people" / "directory.edited.txt"


def test_the_table_says_where_each_person_comes_from(monkeypatch):
    console = Console(record=True, width=200, highlight=False, markup=False, emoji=False)
    monkeypatch.setattr(users_cmd, "out", console)
    users_cmd._print(parse(FIXTURE.read_text(), ["alice", "dave", "frank"]))
    lines = console.export_text().replace("┃", "│").splitlines()  # the header's rule is the heavy one
    cells = {cell[0]: cell for cell in ([c.strip() for c in line.split("│")[1:5]] for line in lines
                                        if line.startswith("│"))}
    assert cells["user"] == ["user", "uid", "from", "state"]
    assert cells["alice"] == ["alice", "2001", "local", "active"]
    assert cells["dave"] == ["dave", "3001", "directory", "active"]
    assert cells["frank"] == ["frank", "-", "-", "missing"]
