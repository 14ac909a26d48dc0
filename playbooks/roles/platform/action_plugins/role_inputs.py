"""role_inputs: every role's variables checked against its meta/argument_specs.yml, once per run, on the control node.

Each role declares its interface in meta/argument_specs.yml under the entry point `interface` (types, defaults,
descriptions). Under `main`, Ansible would prepend a validation task to every role it runs, a task per role and host
(13 rounds over every node of a deploy); this action checks all roles for all hosts in one task instead, in the first
play of site.yml (platform's tasks/inputs.yml). What it checks is what comes from outside the roles: the variables a
host has from the inventory (its groups and its own) and from extra vars; the roles' own defaults are held to their
specs by tests/unit/roles/test_argument_specs.py. Hosts whose values are the same are checked once, so a large
inventory with a few distinct variable sets costs a few checks. A value whose template needs what only a role
defines (its defaults, its facts) is checked when the role uses it, not here.

Arguments:
    hosts: [a, b]      the hosts to check (site.yml: ansible_play_hosts_all, so --limit is honoured)
    roles_path: path   where the roles are (default: the roles directory this plugin belongs to)

Fails naming each host, role, variable and what the spec expects; returns `checked` (host count) and `distinct`
(variable sets validated).
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import yaml
from ansible.errors import AnsibleActionFail, AnsibleUndefinedVariable
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase
from ansible.vars.hostvars import HostVarsVars

ENTRY_POINT = "interface"
_ROLES_PATH = Path(__file__).resolve().parents[2]
_SHOWN = 20  # problems listed in the failure; the rest are counted


@cache
def role_options(roles_path: str) -> dict[str, dict]:
    """role -> the options of its `interface` entry point, for every role under roles_path with a spec."""
    found = {}
    for spec_file in sorted(Path(roles_path).glob("*/meta/argument_specs.yml")):
        specs = (yaml.safe_load(spec_file.read_text()) or {}).get("argument_specs") or {}
        if ENTRY_POINT not in specs:
            raise AnsibleActionFail(f"role_inputs: {spec_file} has no `{ENTRY_POINT}` entry point; its entry points "
                                    f"are {', '.join(sorted(specs)) or 'none'}")
        found[spec_file.parents[1].name] = specs[ENTRY_POINT].get("options") or {}
    return found


def _has_template(value) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_has_template(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_template(item) for item in value)
    return False


def _key(raw: dict) -> str | None:
    """What identifies a set of untemplated values, or None when a template may differ from host to host."""
    if _has_template(raw):
        return None
    return json.dumps(raw, sort_keys=True, default=repr)


def problems(options: dict[str, dict], values: dict) -> list[str]:
    """What Ansible's validator says of the values of one role's variables, one line per problem."""
    given = {name: values[name] for name in options if name in values}
    if not given:
        return []
    spec = {name: options[name] for name in given}
    return [_line(error) for error in ArgumentSpecValidator(spec).validate(given).errors]


def _line(error) -> str:
    """One validator error as a clause (Ansible words an unknown key as 'a.b. Supported parameters include: ...')."""
    text = str(error.msg).rstrip(".")
    return f"unknown key {text}" if isinstance(error, UnsupportedError) else text


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        hosts = args.get("hosts") or task_vars.get("ansible_play_hosts_all") or []
        options = role_options(str(args.get("roles_path") or _ROLES_PATH))
        declared = {name for role in options.values() for name in role}
        hostvars = task_vars["hostvars"]
        found, seen, distinct = [], set(), 0
        for host in hosts:
            raw = hostvars.raw_get(host)
            given = {name: raw[name] for name in declared if name in raw}
            key = _key(given)
            if key is not None and key in seen:
                continue
            seen.add(key)
            distinct += 1
            found += [f"{host}: {line}" for line in self._host_problems(options, given, raw, host)]
        result.update(checked=len(hosts), distinct=distinct, changed=False)
        if found:
            result["failed"] = True
            more = f" (and {len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
            result["msg"] = (f"role_inputs: {len(found)} role variable(s) do not match the roles' argument specs"
                             f"{more}: " + "; ".join(found[:_SHOWN]) + ". Each role's meta/argument_specs.yml and "
                             "README.md say what the variable takes; correct the inventory or the extra vars.")
        return result

    def _host_problems(self, options: dict[str, dict], given: dict, raw: dict, host: str) -> list[str]:
        templar = HostVarsVars(raw, self._loader, host)
        values = {}
        for name in given:
            try:
                values[name] = templar[name]
            except AnsibleUndefinedVariable:
                continue  # it needs a role's own variables or facts: checked where the role uses it
        return [f"{role}: {line}" for role, role_spec in options.items() for line in problems(role_spec, values)]
