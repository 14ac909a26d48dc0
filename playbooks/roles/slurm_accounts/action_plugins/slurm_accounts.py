"""slurm_accounts: make Slurm's accounts, QoS and user associations what the inventory says, changing only what
differs. An action plugin: it runs on the control node, reads the controller in ONE command and applies each change
as one sacctmgr command (an argument list, every word through shlex.quote).

    slurm_accounts:
      cluster: "{{ cluster_name }}"
      accounts: [{name, parent, fairshare, max_jobs, grp_tres: {cpu: 64}, qos: [long, normal]}]
      qos: [{name, priority, max_jobs_per_user, max_wall_minutes}]
      users: [{name, accounts: [physics, ml]}]    # the first account is the user's default

read_script() reads `sacctmgr -nP show` of associations, accounts, QoS and users and `squeue` (the jobs not finished);
parse_read() makes data of it; plan() compares and returns the sacctmgr commands, in an order sacctmgr accepts
(parents before children; a user's new default before the old one goes; associations before their account), each
with a sentence. What it manages is marked in Slurm itself: an account it makes has organization `gpu-provision`, a
QoS it makes the description `gpu-provision`. Only such an account or QoS, and only the associations of spec users
or of such accounts, are ever removed, and none that a pending or running job uses: that one is kept, and `kept`
says why. `normal` and `root` are Slurm's own and never removed. --check reads, plans and changes nothing.

Returns changed, `changes` (the sentences), `commands` (the argument lists) and `kept`.
"""
from __future__ import annotations

import base64
import binascii
import shlex

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

MARK = "gpu-provision"
BUILTIN_QOS = "normal"
ROOT = "root"
SACCTMGR = ("sacctmgr", "-i")


class AccountsError(ValueError):
    """Arguments the task gives wrongly, or output sacctmgr cannot have printed."""


# --- Reading the controller -------------------------------------------------------------------------------------------

READS = {
    # wopl (WithOutParentLimits): each association's own limits and QoS, not those it inherits from its parent
    # account, which a plain show prints on every child as if set there (a sub-account without max_jobs would read as
    # its parent's value and be "reset" on every run).
    "associations": ("sacctmgr", "-nP", "show", "association", "wopl", "format=cluster,account,user,parentname,share,"
                     "maxjobs,grptres,qos,defaultqos"),
    "accounts": ("sacctmgr", "-nP", "show", "account", "format=account,description,organization"),
    "qos": ("sacctmgr", "-nP", "show", "qos", "format=name,priority,maxjobsperuser,maxwall,description"),
    "users": ("sacctmgr", "-nP", "show", "user", "format=user,defaultaccount"),
    "jobs": ("squeue", "-h", "-o", "%a|%u|%q"),
}
FIELDS = {
    "associations": ("cluster", "account", "user", "parent", "share", "max_jobs", "grp_tres", "qos", "default_qos"),
    "accounts": ("account", "description", "organization"),
    "qos": ("name", "priority", "max_jobs_per_user", "max_wall", "description"),
    "users": ("user", "default_account"),
    "jobs": ("account", "user", "qos"),
}


def read_script() -> str:
    """One POSIX shell script: each read's exit status and output (base64) on a line of its own, then `end`."""
    lines = ["LC_ALL=C; export LC_ALL"]
    for key, argv in READS.items():
        lines.append(f"o=$({' '.join(map(shlex.quote, argv))} 2>&1 </dev/null); r=$?; "
                     f"printf 'read\\t%s\\t%s\\t%s\\n' {key} \"$r\" \"$(printf '%s' \"$o\" | base64 | tr -d '\\n')\"")
    lines.append("echo end")
    return "\n".join(lines) + "\n"


def parse_read(stdout: str) -> dict:
    """{read: [record, ...]} from the script's output; a read that failed or output cut short raises AccountsError."""
    lines = stdout.splitlines()
    if not lines or lines[-1] != "end":
        raise AccountsError("slurm_accounts: the read of the controller was cut short (no final 'end')")
    out = {}
    for line in lines[:-1]:
        tag, key, rc, text = (line.split("\t") + ["", "", ""])[:4]
        if tag != "read" or key not in READS:
            raise AccountsError(f"slurm_accounts: unexpected line {line[:200]!r}")
        try:
            decoded = base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except binascii.Error:
            raise AccountsError(f"slurm_accounts: the {key} read is not base64") from None
        if rc != "0":
            raise AccountsError(f"slurm_accounts: `{' '.join(READS[key])}` failed (exit {rc}): {decoded[-1000:]}")
        out[key] = parse_records(key, decoded)
    missing = sorted(set(READS) - set(out))
    if missing:
        raise AccountsError(f"slurm_accounts: no answer for {', '.join(missing)}")
    return out


def parse_records(key: str, text: str) -> list[dict]:
    """`sacctmgr -nP` (or squeue's) lines, '|' between fields, as records with FIELDS[key]'s names."""
    names = FIELDS[key]
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = line.split("|")
        if len(values) != len(names):
            raise AccountsError(f"slurm_accounts: a {key} line has {len(values)} fields, not {len(names)}: "
                                f"{line[:200]!r}")
        records.append(dict(zip(names, values)))
    return records


def tres(text: str) -> dict[str, int]:
    """'cpu=64,gres/gpu=8' -> {'cpu': 64, 'gres/gpu': 8}."""
    out = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        out[name] = int(value)
    return out


def minutes(text: str) -> int | None:
    """sacctmgr's time ('2-00:00:00', '12:00:00', '00:30:00', '') in minutes; '' is no limit."""
    if not text:
        return None
    days, _, clock = text.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    hours, mins, secs = parts
    return int(days or 0) * 1440 + hours * 60 + mins + (1 if secs else 0)


def _number(text: str) -> int | None:
    return int(text) if text else None


# --- The wanted state -------------------------------------------------------------------------------------------------

def normalise(args: dict) -> dict:
    """The task's arguments, checked: names are words sacctmgr takes as they are."""
    unknown = sorted(set(args) - {"cluster", "accounts", "qos", "users"})
    if unknown:
        raise AccountsError(f"slurm_accounts: unknown argument {', '.join(unknown)}")
    cluster = _name("cluster", args.get("cluster"))
    accounts = [{"name": _name(f"accounts[{i}].name", a.get("name")), "parent": _name(f"accounts[{i}].parent",
                 a.get("parent") or ROOT), "fairshare": int(a.get("fairshare") or 1), "max_jobs": _optional(a, "max_jobs"),
                 "grp_tres": {_name(f"accounts[{i}].grp_tres", k): int(v) for k, v in (a.get("grp_tres") or {}).items()},
                 "qos": [_name(f"accounts[{i}].qos", q) for q in a.get("qos") or []]}
                for i, a in enumerate(args.get("accounts") or [])]
    qos = [{"name": _name(f"qos[{i}].name", q.get("name")), "priority": int(q.get("priority") or 0),
            "max_jobs_per_user": _optional(q, "max_jobs_per_user"), "max_wall": _optional(q, "max_wall_minutes")}
           for i, q in enumerate(args.get("qos") or [])]
    users = [{"name": _name(f"users[{i}].name", u.get("name")),
              "accounts": [_name(f"users[{i}].accounts", a) for a in u.get("accounts") or []]}
             for i, u in enumerate(args.get("users") or [])]
    return {"cluster": cluster, "accounts": accounts, "qos": qos, "users": users}


def _name(where: str, value) -> str:
    if not isinstance(value, str) or not value or any(c in value for c in " \t\n|,'\"=\0") or value.startswith("-"):
        raise AccountsError(f"slurm_accounts: {where}: {value!r} is not a Slurm name")
    return value


def _optional(item: dict, key: str) -> int | None:
    return None if item.get(key) is None else int(item[key])


# --- The plan ---------------------------------------------------------------------------------------------------------

def plan(wanted: dict, current: dict) -> tuple[list[dict], list[str]]:
    """([{argv, why}, ...] in the order to run them, [why each removal is kept, ...])."""
    cluster = wanted["cluster"]
    assocs = [a for a in current["associations"] if a["cluster"] == cluster]
    account_rows = {a["account"]: a for a in assocs if not a["user"]}
    marked = {a["account"] for a in current["accounts"] if a["organization"] == MARK}
    qos_rows = {q["name"]: q for q in current["qos"]}
    jobs = current["jobs"]
    changes: list[dict] = []
    kept: list[str] = []
    changes += _qos_changes(wanted["qos"], qos_rows)
    changes += _account_changes(cluster, wanted["accounts"], account_rows, marked)
    changes += _user_changes(cluster, wanted, assocs, marked, current["users"], jobs, kept)
    changes += _account_removals(cluster, wanted["accounts"], account_rows, marked, jobs, kept)
    changes += _qos_removals(wanted["qos"], qos_rows, jobs, kept)
    return changes, kept


def _change(why: str, *words: str) -> dict:
    return {"argv": [*SACCTMGR, *words], "why": why}


def _limit(value: int | None) -> str:
    return "-1" if value is None else str(value)


def _qos_settings(q: dict) -> dict[str, str]:
    return {"priority": str(q["priority"]), "maxjobsperuser": _limit(q["max_jobs_per_user"]),
            "maxwall": _limit(q["max_wall"])}


def _qos_changes(wanted: list[dict], rows: dict) -> list[dict]:
    out = []
    for q in wanted:
        settings = _qos_settings(q)
        row = rows.get(q["name"])
        if row is None:
            words = [f"{k}={v}" for k, v in settings.items() if v != "-1"]
            out.append(_change(f"add QoS {q['name']}", "add", "qos", q["name"], *words, f"description={MARK}"))
            continue
        have = {"priority": row["priority"] or "0", "maxjobsperuser": _limit(_number(row["max_jobs_per_user"])),
                "maxwall": _limit(minutes(row["max_wall"]))}
        differ = [f"{k}={v}" for k, v in settings.items() if have[k] != v]
        if differ:
            out.append(_change(f"set {', '.join(differ)} on QoS {q['name']}", "modify", "qos", "where",
                               f"name={q['name']}", "set", *differ))
    return out


def _account_settings(a: dict) -> dict[str, str]:
    settings = {"parent": a["parent"], "fairshare": str(a["fairshare"]), "maxjobs": _limit(a["max_jobs"]),
                "grptres": _tres_words(a["grp_tres"])}
    if a["qos"]:
        settings.update(qos=",".join(sorted(a["qos"])), defaultqos=a["qos"][0])
    return settings


def _tres_words(wanted: dict[str, int], have: dict[str, int] | None = None) -> str:
    """GrpTRES as sacctmgr sets it: every wanted value, and -1 for each one held that is no longer wanted."""
    items = {**{name: -1 for name in have or {}}, **wanted}
    return ",".join(f"{name}={value}" for name, value in sorted(items.items()))


def _ordered(accounts: list[dict]) -> list[dict]:
    """Parents before children."""
    done, out, pending = {ROOT}, [], list(accounts)
    while pending:
        ready = [a for a in pending if a["parent"] in done] or pending[:1]
        for a in ready:
            out.append(a)
            done.add(a["name"])
            pending.remove(a)
    return out


def _account_changes(cluster: str, wanted: list[dict], rows: dict, marked: set) -> list[dict]:
    out = []
    for a in _ordered(wanted):
        settings = _account_settings(a)
        row = rows.get(a["name"])
        if row is None:
            words = [f"{k}={v}" for k, v in settings.items() if v not in ("-1", "")]
            out.append(_change(f"add account {a['name']} under {a['parent']}", "add", "account", a["name"],
                               f"cluster={cluster}", *words, f"description={a['name']}", f"organization={MARK}"))
            continue
        have_tres = tres(row["grp_tres"])
        have = {"parent": row["parent"], "fairshare": row["share"], "maxjobs": _limit(_number(row["max_jobs"])),
                "grptres": _tres_words(have_tres), "qos": ",".join(sorted(filter(None, row["qos"].split(",")))),
                "defaultqos": row["default_qos"]}
        differ = [f"{k}={_tres_words(a['grp_tres'], have_tres) if k == 'grptres' else v}"
                  for k, v in settings.items() if have[k] != v]
        if a["name"] not in marked:
            differ.append(f"organization={MARK}")
        if differ:
            out.append(_change(f"set {', '.join(differ)} on account {a['name']}", "modify", "account", "where",
                               f"name={a['name']}", f"cluster={cluster}", "set", *differ))
    return out


def _user_changes(cluster: str, wanted: dict, assocs: list[dict], marked: set, users: list[dict], jobs: list[dict],
                  kept: list[str]) -> list[dict]:
    """New associations, then each spec user's default account, then the associations no longer wanted."""
    spec_users = {u["name"]: u["accounts"] for u in wanted["users"]}
    have = {(a["user"], a["account"]) for a in assocs if a["user"]}
    want = {(user, account) for user, accounts in spec_users.items() for account in accounts}
    defaults = {u["user"]: u["default_account"] for u in users}
    out = [_change(f"associate user {user} with account {account}", "add", "user", user, f"account={account}",
                   f"cluster={cluster}") for user, accounts in spec_users.items() for account in accounts
           if (user, account) not in have]
    # a new Slurm user's first association (the first account, added first) makes it their default already
    out += [_change(f"make {accounts[0]} the default account of user {user}", "modify", "user", "where",
                    f"name={user}", "set", f"defaultaccount={accounts[0]}")
            for user, accounts in spec_users.items() if accounts and user in defaults and defaults[user] != accounts[0]]
    for user, account in sorted(have - want):
        if user not in spec_users and account not in marked:
            continue  # neither the user nor the account is ours
        busy = [j for j in jobs if j["user"] == user and j["account"] == account]
        if busy:
            kept.append(f"kept user {user} in account {account}: {len(busy)} job(s) of theirs there are pending or "
                        "running")
            continue
        out.append(_change(f"remove user {user} from account {account}", "remove", "user", "where", f"name={user}",
                           f"account={account}", f"cluster={cluster}"))
    return out


def _account_removals(cluster: str, wanted: list[dict], rows: dict, marked: set, jobs: list[dict],
                      kept: list[str]) -> list[dict]:
    """Marked accounts the spec dropped, children first, none with a job."""
    names = {a["name"] for a in wanted}
    gone = [name for name in rows if name in marked and name not in names and name != ROOT]
    depth = {name: _depth(name, rows) for name in gone}
    out = []
    for name in sorted(gone, key=lambda n: (-depth[n], n)):
        busy = [j for j in jobs if j["account"] == name]
        if busy:
            kept.append(f"kept account {name}: {len(busy)} job(s) in it are pending or running")
            continue
        out.append(_change(f"remove account {name}", "remove", "account", "where", f"name={name}",
                           f"cluster={cluster}"))
    return out


def _depth(name: str, rows: dict) -> int:
    depth, seen = 0, set()
    while name in rows and name not in seen:
        seen.add(name)
        name = rows[name]["parent"]
        depth += 1
    return depth


def _qos_removals(wanted: list[dict], rows: dict, jobs: list[dict], kept: list[str]) -> list[dict]:
    names = {q["name"] for q in wanted}
    out = []
    for name, row in sorted(rows.items()):
        if name in names or name == BUILTIN_QOS or row["description"] != MARK:
            continue
        busy = [j for j in jobs if j["qos"] == name]
        if busy:
            kept.append(f"kept QoS {name}: {len(busy)} job(s) with it are pending or running")
            continue
        out.append(_change(f"remove QoS {name}", "remove", "qos", "where", f"name={name}"))
    return out


# --- The action -------------------------------------------------------------------------------------------------------

class ActionModule(ActionBase):
    """Reads once, plans in Python, runs only the commands the plan holds (none in --check)."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        del tmp
        try:
            wanted = normalise(dict(self._task.args))
            answer = self._low_level_execute_command(read_script(), executable=False)
            changes, kept = plan(wanted, parse_read(answer.get("stdout", "")))
        except AccountsError as error:
            raise AnsibleActionFail(str(error)) from None
        result.update(changed=bool(changes), changes=[c["why"] for c in changes],
                      commands=[c["argv"] for c in changes], kept=kept)
        if self._task.check_mode:
            return result
        for change in changes:
            done = self._low_level_execute_command(" ".join(map(shlex.quote, change["argv"])), executable=False)
            if done.get("rc") != 0:
                result.update(failed=True, msg=f"slurm_accounts: could not {change['why']}: "
                                               f"{(done.get('stdout', '') + done.get('stderr', ''))[-2000:]}")
                return result
        return result
