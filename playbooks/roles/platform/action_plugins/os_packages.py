"""os_packages: the one per-family package layer. Roles say WHAT to install (names, an exact version, recommends,
hold); this action says HOW for the node's package manager, chosen by the platform role's check
(platform_package_manager: apt on Debian and Ubuntu), and runs that manager's Ansible module once.

A family is one entry of FAMILIES: a function from the task's normalised arguments to (module, module arguments), and
how packages are held. Adding dnf's family touches this file only; the roles keep their tasks and bring their own
per-family package names (vars/os/<family>.yml). apt is tested (Debian 12 and 13 on the sandbox); dnf is written and
unit-tested for its arguments only, untested on a node.

Arguments:
    names: [a, b]            package names; required unless the task only refreshes the lists (update_cache only)
    version: "1.2-3"         optional, pin every name to this exact version
    state: present           present (default) | absent
    recommends: true         install recommended (apt) / weak (dnf) dependencies
    update_cache: false      refresh the package lists first; cache_valid_time: N seconds (apt)
    allow_downgrade: false
    allow_change_held: false
    hold: false              hold these names at what is installed (only those not held yet)

Returns the manager module's result (changed, diff under --diff) and `held`: the names this task held. --check runs
the module in check mode and reports the holds it would add.
"""
from __future__ import annotations

import shlex

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

_BOOLEANS = {"recommends": True, "update_cache": False, "allow_downgrade": False, "allow_change_held": False,
             "hold": False}
_STATES = ("present", "absent")


class PackagesError(ValueError):
    """An argument the task gives wrongly, or a request the node's family cannot carry out."""


def normalise(args: dict) -> dict:
    """The task's arguments checked and with defaults filled in; a PackagesError names what is wrong and the fix."""
    unknown = set(args) - {"names", "version", "state", "cache_valid_time", *_BOOLEANS}
    if unknown:
        raise PackagesError(f"os_packages: unknown argument(s) {', '.join(sorted(unknown))}; the arguments are names, "
                            f"version, state, cache_valid_time, {', '.join(_BOOLEANS)}")
    names = args.get("names")
    if names is None and _only_refresh(args):
        return {"names": [], "version": None, "state": "present", "recommends": True, "update_cache": True,
                "cache_valid_time": _seconds(args.get("cache_valid_time")), "allow_downgrade": False,
                "allow_change_held": False, "hold": False}
    if not isinstance(names, list) or not names or not all(_is_name(name) for name in names):
        raise PackagesError(f"os_packages: names: {names!r} is not a non-empty list of package names (no spaces, no "
                            "version: give the version as `version`)")
    spec = {"names": list(dict.fromkeys(names)), "version": args.get("version"), "state": args.get("state", "present"),
            "cache_valid_time": args.get("cache_valid_time")}
    if spec["version"] is not None and not _is_name(str(spec["version"])):
        raise PackagesError(f"os_packages: version: {spec['version']!r} is not a package version")
    if spec["version"] is not None:
        spec["version"] = str(spec["version"])
    if spec["state"] not in _STATES:
        raise PackagesError(f"os_packages: state: {spec['state']!r} is not one of {', '.join(_STATES)}")
    for key, default in _BOOLEANS.items():
        try:
            spec[key] = boolean(args.get(key, default), strict=True)
        except TypeError:
            raise PackagesError(f"os_packages: {key}: {args[key]!r} is not true or false") from None
    spec["cache_valid_time"] = _seconds(spec["cache_valid_time"])
    if spec["hold"] and spec["state"] == "absent":
        raise PackagesError("os_packages: hold: true with state: absent; hold what is installed, or remove it")
    return spec


def _only_refresh(args: dict) -> bool:
    """No names, update_cache true and nothing else but cache_valid_time: refresh the package lists only."""
    try:
        return boolean(args.get("update_cache", False), strict=True) and set(args) <= {"update_cache",
                                                                                       "cache_valid_time"}
    except TypeError:
        return False


def _seconds(value):
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PackagesError(f"os_packages: cache_valid_time: {value!r} is not a number of seconds")
    return value


def _is_name(value) -> bool:
    return isinstance(value, str) and value != "" and not any(c.isspace() or c in "=\0" for c in value) \
        and not value.startswith("-")


# --- The families ---------------------------------------------------------------------------------------------------

def _apt(spec: dict) -> tuple[str, dict]:
    """Debian and Ubuntu: ansible.builtin.apt, a version pinned as name=version."""
    if not spec["names"]:
        return "ansible.builtin.apt", _refresh(spec)
    names = [f"{name}={spec['version']}" if spec["version"] else name for name in spec["names"]]
    args = {"name": names, "state": spec["state"], "install_recommends": spec["recommends"],
            "allow_downgrade": spec["allow_downgrade"], "allow_change_held_packages": spec["allow_change_held"]}
    if spec["update_cache"]:
        args["update_cache"] = True
        if spec["cache_valid_time"] is not None:
            args["cache_valid_time"] = spec["cache_valid_time"]
    if spec["state"] == "absent":
        args = {"name": spec["names"], "state": "absent"}
    return "ansible.builtin.apt", args


def _dnf(spec: dict) -> tuple[str, dict]:
    """Red Hat's family (written, untested on a node): ansible.builtin.dnf, a version pinned as name-version."""
    if spec["allow_change_held"]:
        raise PackagesError("os_packages: allow_change_held is not supported on dnf yet (versionlock)")
    if not spec["names"]:
        return "ansible.builtin.dnf", {"update_cache": True}
    names = [f"{name}-{spec['version']}" if spec["version"] else name for name in spec["names"]]
    args = {"name": names, "state": spec["state"], "install_weak_deps": spec["recommends"],
            "allow_downgrade": spec["allow_downgrade"], "update_cache": spec["update_cache"]}
    if spec["state"] == "absent":
        args = {"name": spec["names"], "state": "absent"}
    return "ansible.builtin.dnf", args


def _refresh(spec: dict) -> dict:
    args = {"update_cache": True}
    if spec["cache_valid_time"] is not None:
        args["cache_valid_time"] = spec["cache_valid_time"]
    return args


def _apt_held_command() -> str:
    return "apt-mark showhold"


def _apt_hold_command(names: list[str]) -> str:
    return shlex.join(["apt-mark", "hold", *names])


# manager -> (module call, command listing held packages, command holding names); None: the family cannot hold yet.
FAMILIES = {
    "apt": (_apt, _apt_held_command, _apt_hold_command),
    "dnf": (_dnf, None, None),
}


def module_call(manager: str, spec: dict) -> tuple[str, dict]:
    """The module and its arguments that carry the request out on this package manager."""
    if manager not in FAMILIES:
        raise PackagesError(f"os_packages: no package layer for {manager!r}; the layer knows "
                            f"{', '.join(sorted(FAMILIES))} (add a family to os_packages.py)")
    if spec["hold"] and FAMILIES[manager][1] is None:
        raise PackagesError(f"os_packages: hold is not supported on {manager} yet")
    return FAMILIES[manager][0](spec)


def to_hold(names: list[str], held_output: str) -> list[str]:
    """The names not yet held, given the listing of held packages (one name a line, an arch suffix allowed)."""
    held = {line.strip().split(":", 1)[0] for line in held_output.splitlines() if line.strip()}
    return [name for name in names if name.split(":", 1)[0] not in held]


def package_manager(task_vars: dict) -> str:
    """The manager the platform role found for this node; Ansible's fact when the platform check did not run."""
    manager = task_vars.get("platform_package_manager") or (task_vars.get("ansible_facts") or {}).get("pkg_mgr")
    if not manager:
        raise PackagesError("os_packages: the node's package manager is not known: the platform role's check sets "
                            "platform_package_manager (list platform as a dependency of the role)")
    return str(manager)


class ActionModule(ActionBase):
    """Runs the family's package module once, then holds what the task asks to hold."""

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        try:
            spec = normalise(dict(self._task.args))
            manager = package_manager(task_vars)
            module, module_args = module_call(manager, spec)
        except PackagesError as error:
            raise AnsibleActionFail(str(error)) from None
        result.update(self._execute_module(module_name=module, module_args=module_args, task_vars=task_vars))
        result["held"] = []
        if result.get("failed") or not spec["hold"]:
            return result
        return self._hold(result, spec, manager)

    def _hold(self, result: dict, spec: dict, manager: str) -> dict:
        _, held_command, hold_command = FAMILIES[manager]
        listing = self._low_level_execute_command(held_command(), executable=False)
        if listing.get("rc") != 0:
            result.update(failed=True, msg=f"os_packages: {held_command()} failed: {listing.get('stderr', '')[-500:]}")
            return result
        missing = to_hold(spec["names"], listing.get("stdout", ""))
        if missing and not self._task.check_mode:
            answer = self._low_level_execute_command(hold_command(missing), executable=False)
            if answer.get("rc") != 0:
                result.update(failed=True, msg=f"os_packages: holding {', '.join(missing)} failed: "
                                               f"{answer.get('stderr', '')[-500:]}")
                return result
        result["held"] = missing
        result["changed"] = bool(result.get("changed")) or bool(missing)
        return result
