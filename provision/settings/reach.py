"""Which nodes an inventory variable reaches, and which daemons its change restarts, read from the roles themselves.

A role reads a variable when its name appears in the role's tasks, templates, vars, defaults or handlers. The plays
of playbooks/site.yml (and the playbooks it imports) say on which inventory groups each role runs, a role's
dependencies (meta/main.yml) and the roles its tasks include running there too. What the change restarts follows the
variable inside each role that reads it: to the role's vars and templates that name it, then the vars and templates
that name those (a template also by its file name, with and without `.j2`), and so on; the tasks that name any of
them notify handlers (`notify:`), and each handler that restarts a service (`state: restarted`, from
handlers/main.yml) names the daemon. Nothing is hand-written per variable: a new role or template is read as it is.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from provision.resources import playbooks_dir

_ROLE_DIRS = ("tasks", "templates", "vars", "defaults", "handlers")
_INCLUDE_ROLE = ("include_role", "import_role", "ansible.builtin.include_role", "ansible.builtin.import_role")
_IMPORT_PLAYBOOK = ("import_playbook", "ansible.builtin.import_playbook")
_SERVICE_MODULES = ("ansible.builtin.systemd", "ansible.builtin.systemd_service", "ansible.builtin.service",
                    "systemd", "systemd_service", "service")
_BLOCK_KEYS = ("block", "rescue", "always")


@dataclass(frozen=True)
class Reach:
    """What reads a variable: the roles, the host patterns of the plays that run them, what a change restarts."""

    variable: str
    roles: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    restarts: tuple[str, ...] = ()
    via_hostvars: bool = False  # a role reads it from other hosts too (hostvars[...].name): a host's value goes wide


@dataclass(frozen=True)
class _Task:
    """One task as the closure reads it."""

    text: str  # the task without its name
    notify: tuple[str, ...]  # handlers it notifies
    register: str | None  # the variable its result is registered as


@dataclass
class _Role:
    """A role's files as text, split into what the closure follows."""

    name: str
    text: str = ""  # every file, for "does the role name the variable"
    definitions: dict[str, str] = field(default_factory=dict)  # vars/defaults: name -> its value as text
    templates: dict[str, str] = field(default_factory=dict)  # file name -> text
    tasks: list[_Task] = field(default_factory=list)
    handlers: dict[str, str] = field(default_factory=dict)  # handler name -> the service it restarts
    depends: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()  # roles its tasks include


def reach(variable: str, playbooks: Path | None = None) -> Reach:
    """Who reads `variable` under the playbooks folder (default: the package's), and what its change restarts."""
    return _reach(variable, str(playbooks or playbooks_dir()))


@functools.lru_cache(maxsize=4096)
def _reach(variable: str, playbooks: str) -> Reach:
    roles = _roles(playbooks)
    readers = [name for name, role in roles.items() if _names(role.text, {variable})]
    patterns = [pattern for pattern, ran in _plays(playbooks) if any(r in readers for r in _with_deps(ran, roles))]
    restarts: list[str] = []
    for name in readers:
        restarts += [s for s in _restarts(roles[name], variable) if s not in restarts]
    through = re.compile(r"hostvars\[[^\n]*?\]\s*(?:\.\s*|\[\s*['\"])" + re.escape(variable) + r"\b")
    via = any(through.search(roles[n].text) for n in readers)
    return Reach(variable, tuple(sorted(readers)), tuple(dict.fromkeys(patterns)), tuple(restarts), via)


def hosts_matching(pattern: str, groups_of: Mapping[str, Sequence[str]]) -> list[str]:
    """The hosts an Ansible host pattern selects ("all", "controller:compute", "all:!storage", "compute:&gpu"),
    given each host's groups; in the order of `groups_of`."""
    chosen: set[str] = set()
    for part in (p.strip() for p in re.split(r"[:,]", pattern) if p.strip()):
        kind, name = (part[0], part[1:]) if part[0] in "!&" else ("", part)
        members = {h for h, groups in groups_of.items() if name in ("all", "*") or name == h or name in groups}
        chosen = chosen - members if kind == "!" else (chosen & members if kind == "&" else chosen | members)
    return [h for h in groups_of if h in chosen]


def _names(text: str, names: Iterable[str]) -> bool:
    """Whether any of the names appears in the text as a whole word (slurm_config is not slurm_config_dir)."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return bool(alternatives) and re.search(rf"(?<![\w]){'(?:' + alternatives + ')'}(?![\w])", text) is not None


def _restarts(role: _Role, variable: str) -> list[str]:
    """The services the handlers restart that the role's tasks notify when they name the variable, or a var or
    template that follows from it."""
    reached = _closure(role, variable)
    out: list[str] = []
    for task in role.tasks:
        if _names(task.text, reached):
            out += [role.handlers[h] for h in task.notify if h in role.handlers and role.handlers[h] not in out]
    order = list(role.handlers.values())
    return sorted(set(out), key=order.index)


def _closure(role: _Role, variable: str) -> set[str]:
    """The variable, the results of the tasks that name it (a stat of the file it names), and every var and
    template of the role whose text names something already in the set. The results of tasks that name only what
    follows are not followed: a role's probe names its files, and everything reads the probe."""
    reached = {variable} | {t.register for t in role.tasks if t.register and _names(t.text, {variable})}
    grown = True
    while grown:
        grown = False
        for name, text in role.definitions.items():
            if name not in reached and _names(text, reached):
                reached.add(name)
                grown = True
        for file, text in role.templates.items():
            if file not in reached and _names(text, reached):
                reached |= {file, file.removesuffix(".j2")}
                grown = True
    return reached


def _with_deps(names: Iterable[str], roles: Mapping[str, _Role]) -> list[str]:
    """The roles and, recursively, those they depend on or include."""
    out: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.append(name)
        role = roles.get(name)
        if role is not None:
            todo += [*role.depends, *role.includes]
    return out


@functools.lru_cache(maxsize=8)
def _plays(playbooks: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(host pattern, roles it runs) for every play of site.yml and the playbooks it imports, in order."""
    return tuple(_plays_of(Path(playbooks), "site.yml", set()))


def _plays_of(folder: Path, file: str, seen: set[str]) -> list[tuple[str, tuple[str, ...]]]:
    if file in seen:
        return []
    seen.add(file)
    out: list[tuple[str, tuple[str, ...]]] = []
    for play in _yaml(folder / file) or []:
        imported = next((play[k] for k in _IMPORT_PLAYBOOK if k in play), None)
        if imported:
            out += _plays_of(folder, str(imported), seen)
            continue
        roles = [r if isinstance(r, str) else r.get("role", r.get("name", "")) for r in play.get("roles") or []]
        roles += _included_roles(play.get("tasks") or [])
        out.append((str(play.get("hosts", "all")), tuple(roles)))
    return out


def _included_roles(tasks: list) -> list[str]:
    """Roles that tasks include (include_role / import_role), blocks followed."""
    return [str(task[key]["name"]) for task in _flatten(tasks) for key in _INCLUDE_ROLE
            if isinstance(task.get(key), dict) and "name" in task[key]]


@functools.lru_cache(maxsize=8)
def _roles(playbooks: str) -> dict[str, _Role]:
    folder = Path(playbooks) / "roles"
    return {d.name: _read_role(d) for d in sorted(folder.iterdir()) if d.is_dir()} if folder.is_dir() else {}


def _read_role(directory: Path) -> _Role:
    """One role's files, read once."""
    role = _Role(directory.name)
    texts = []
    for sub in _ROLE_DIRS:
        for file in sorted((directory / sub).rglob("*")) if (directory / sub).is_dir() else []:
            if file.is_file():
                texts.append(file.read_text(encoding="utf-8", errors="replace"))
                _take(role, sub, file, texts[-1])
    role.text = "\n".join(texts)
    meta = _yaml(directory / "meta" / "main.yml") or {}
    role.depends = tuple(d if isinstance(d, str) else d.get("role", "") for d in meta.get("dependencies") or [])
    role.includes = tuple(_included_roles([t for _, t in _task_docs(directory)]))
    return role


def _take(role: _Role, sub: str, file: Path, text: str) -> None:
    """Sort one file into the role's definitions, templates, tasks or handlers."""
    if sub == "templates":
        role.templates[file.name] = text
    elif sub in ("vars", "defaults") and file.suffix in (".yml", ".yaml"):
        for name, value in (yaml.safe_load(text) or {}).items():
            role.definitions[str(name)] = json.dumps(value)
    elif sub == "tasks" and file.suffix in (".yml", ".yaml"):
        for task in _flatten(yaml.safe_load(text) or []):
            notify = task.get("notify") or []
            role.tasks.append(_Task(json.dumps({k: v for k, v in task.items() if k != "name"}),
                                    tuple([notify] if isinstance(notify, str) else notify),
                                    str(task["register"]) if task.get("register") else None))
    elif sub == "handlers" and file.suffix in (".yml", ".yaml"):
        for handler in yaml.safe_load(text) or []:
            service = _restarted_service(handler)
            if service:
                role.handlers[str(handler.get("name", ""))] = service


def _task_docs(directory: Path) -> list[tuple[Path, dict]]:
    """Every task of a role's task files, blocks followed."""
    files = sorted((directory / "tasks").glob("*.y*ml")) if (directory / "tasks").is_dir() else []
    return [(file, task) for file in files for task in _flatten(_yaml(file) or [])]


def _restarted_service(handler: dict) -> str | None:
    """The service a handler restarts, or None (a handler that only reloads units or rebuilds a file)."""
    for module in _SERVICE_MODULES:
        args = handler.get(module)
        if isinstance(args, dict) and args.get("state") == "restarted" and args.get("name"):
            return str(args["name"])
    return None


def _flatten(tasks: list) -> list[dict]:
    """Tasks with the tasks of their blocks, in order."""
    out: list[dict] = []
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        out.append(task)
        for key in _BLOCK_KEYS:
            out += _flatten(task.get(key) or [])
    return out


def _yaml(path: Path):
    """A playbook or role file, or None when it is missing."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
