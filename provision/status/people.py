"""Who has access to a running cluster, as the cluster has it (`provision users`): one command on the controller.

It reads the accounts of people there (`getent passwd`, uid 1000 and above but nobody's), each one's expiry (from
`getent shadow`, whose password field never leaves the node: awk prints the name and the expiry day only), the users
role's record of the names it manages, and Slurm's associations (`sacctmgr -nP show association`, with what each
inherits, so the QoS a user may use is the one Slurm applies) and default accounts. Listing passwd does not list the
people of a directory (SSSD does not enumerate), so each name of the spec is also looked up by name (`getent passwd --
NAME...`, through NSS and so SSSD): a person found there only is one of the directory's. The spec's people are compared
with that: a listed user missing on the controller, one the spec dropped (locked), one nobody listed.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from provision.errors import ProvisionError
from provision.records import ClusterInfo
from provision.remote.commands import run_on

RECORD = "/var/lib/gpu-provision/users.json"  # the users role's users_managed_file
MARK = "@@"
READS = {
    "now": "date +%s",
    "record": f"cat {RECORD}",
    "passwd": "getent passwd",
    "shadow": "getent shadow | awk -F: '{print $1 \":\" $8}'",
    "associations": "sacctmgr -nP show association format=user,account,qos,defaultqos",
    "defaults": "sacctmgr -nP show user format=user,defaultaccount",
}
NAMED = "named"  # the section of the names looked up one by one (command)
NOT_FOUND = 2  # getent's status when a key is in no database: a name the node does not know, not a failed read
TIMEOUT_S = 30.0
FIRST_PERSON_ID = 1000
NOBODY = 65534
NO_LOGIN = ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false")
_SECTION = re.compile(rf"^{MARK} (\w+)\n(.*?)^{MARK} exit (\d+)$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Person:
    """One person as the controller and Slurm have them, and what the spec says of them."""

    name: str
    listed: bool  # in the spec: its users, or accounting.users (the directory's people)
    managed: bool  # in the users role's record (gpu-provision made the account)
    uid: int | None = None  # None: no such account on the controller
    home: str = ""
    shell: str = ""
    expired: bool = False
    accounts: tuple[str, ...] = ()  # Slurm accounts, the default first
    qos: tuple[str, ...] = ()  # the QoS their associations allow
    source: str = ""  # local (the node's own files), directory (found only by name, through NSS: SSSD), "": neither
    certify: bool = False  # certify's own user (spec certify.user): runs certify's jobs, never logs in

    @property
    def state(self) -> str:
        """active, locked (expired or without a login shell), missing (listed, no account), unmanaged; certify for
        certify's own user (no login shell by design)."""
        if self.uid is None:
            return "missing"
        if self.certify:
            return "certify"
        if self.expired or self.shell in NO_LOGIN:
            return "locked"
        return "active" if self.managed or self.listed else "unmanaged"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "accounts": list(self.accounts), "qos": list(self.qos), "state": self.state}


@dataclass(frozen=True)
class PeopleView:
    """Every person, or why the controller could not say (error); problems the read found with one source."""

    people: tuple[Person, ...] = ()
    error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"people": [p.to_dict() for p in self.people], "error": self.error, "notes": list(self.notes)}


def command(names: list[str]) -> str:
    """The shell text run on the controller: each read of READS, then the section `named` looking up the spec's names
    (when there are any: `getent passwd` without a key would list every account). Names are data: each is quoted, and
    `--` ends getent's options."""
    reads = {**READS, NAMED: "getent passwd -- " + " ".join(shlex.quote(name) for name in names)} if names else READS
    return "; ".join(f"echo '{MARK} {name}'; {text} 2>&1; echo \"{MARK} exit $?\"" for name, text in reads.items())


def read(cluster: ClusterInfo, listed: list[str], certify: str | None = None) -> PeopleView:
    """Ask the controller (sudo where the SSH user is not root: shadow needs it); a view with `error` if it cannot.
    `listed`: the spec's people by name, each also looked up through NSS (a directory's people are found so only);
    `certify`: certify's own user, listed after them."""
    listed = [*listed, certify] if certify else listed
    sudo = "" if cluster.ssh_user == "root" else "sudo -n "
    try:
        result = run_on(cluster, cluster.controller, sudo + "sh -c " + shlex.quote(command(listed)), timeout=TIMEOUT_S)
    except ProvisionError as exc:
        return PeopleView(error=f"cannot ask the controller {cluster.controller.name}: {exc}")
    return parse(result.stdout, listed, certify)


def parse(stdout: str, listed: list[str], certify: str | None = None) -> PeopleView:
    """The view from command()'s output; a section that failed is a note (Slurm's accounting may be off), not an
    error, unless the accounts themselves could not be read. A name the lookup did not find is not a failure."""
    sections = {m[1]: (int(m[3]), m[2]) for m in _SECTION.finditer(stdout)}
    if sections.get("passwd", (1,))[0] != 0:
        return PeopleView(error="the controller did not list its accounts (getent passwd): "
                                + _last_line(sections.get("passwd", (0, stdout))[1]))
    text = {name: body for name, (rc, body) in sections.items() if rc == 0 or (name, rc) == (NAMED, NOT_FOUND)}
    notes = [f"{name}: {_last_line(body)}" for name, (rc, body) in sections.items()
             if name not in text and name not in ("record", "passwd")]
    accounts = _accounts(_rows(text.get("associations", "")), _rows(text.get("defaults", "")))
    expired = _expired(_rows(text.get("shadow", ""), ":"), _today(text.get("now", "")))
    managed = _managed(text.get("record", ""))
    found = _sources(_rows(text["passwd"], ":"), _rows(text.get(NAMED, ""), ":"))
    people = _people(found, listed, managed, expired, accounts)
    return PeopleView(people=tuple(replace(p, certify=p.name == certify) for p in people), notes=tuple(notes))


def _sources(passwd: list[list[str]], named: list[list[str]]) -> dict[str, tuple[list[str], str]]:
    """name -> (its passwd row, where it comes from): local when the listing has it, directory when only the lookup by
    name found it (SSSD's people are not listed)."""
    found = {row[0]: (row, "directory") for row in named if len(row) >= 7 and _is_person(row[2])}
    return found | {row[0]: (row, "local") for row in passwd if len(row) >= 7 and _is_person(row[2])}


def _people(found: dict[str, tuple[list[str], str]], listed: list[str], managed: set[str], expired: set[str],
            accounts: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> tuple[Person, ...]:
    """Listed people first, in the spec's order, then every other person the controller or Slurm knows, by name."""
    others = sorted((set(found) | managed | set(accounts)) - set(listed))
    out = []
    for name in [*listed, *others]:
        row, source = found.get(name, (None, ""))
        held, qos = accounts.get(name, ((), ()))
        out.append(Person(name, name in listed, name in managed, int(row[2]) if row else None,
                          row[5] if row else "", row[6] if row else "", name in expired, held, qos, source))
    return tuple(out)


def _is_person(uid: str) -> bool:
    return uid.isdigit() and FIRST_PERSON_ID <= int(uid) != NOBODY


def _accounts(associations: list[list[str]], defaults: list[list[str]]) -> dict[str, tuple[tuple[str, ...],
                                                                                        tuple[str, ...]]]:
    """user -> (accounts with the default first, the QoS of their associations); root is Slurm's own."""
    default = {row[0]: row[1] for row in defaults if len(row) >= 2}
    held: dict[str, list[str]] = {}
    qos: dict[str, set[str]] = {}
    for row in associations:
        if len(row) >= 3 and row[0] and row[0] != "root":
            held.setdefault(row[0], []).append(row[1])
            qos.setdefault(row[0], set()).update(q for q in row[2].split(",") if q)
    return {user: (tuple(sorted(names, key=lambda a: (a != default.get(user), a))), tuple(sorted(qos[user])))
            for user, names in held.items()}


def _expired(shadow: list[list[str]], today: int | None) -> set[str]:
    """Names whose account expiry day (days since 1970) has come; day 0 counts, as PAM reads it."""
    return {row[0] for row in shadow if len(row) >= 2 and row[1].isdigit() and today is not None
            and int(row[1]) <= today}


def _today(now: str) -> int | None:
    seconds = now.strip()
    return int(seconds) // 86400 if seconds.isdigit() else None


def _managed(record: str) -> set[str]:
    """The names the users role manages, from its record; none when it is absent or not its JSON."""
    try:
        data = json.loads(record)
    except ValueError:
        return set()
    names = data.get("managed") if isinstance(data, dict) else None
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def _rows(text: str, separator: str = "|") -> list[list[str]]:
    return [line.split(separator) for line in text.splitlines() if line.strip()]


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"
