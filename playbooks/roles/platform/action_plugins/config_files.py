"""config_files: the one way a role writes its configuration files, in real runs and in --check alike. An action
plugin: it renders on the control node and changes the node in one command, whatever the files' size.

    config_files:
      files:
        - {dest: /etc/slurm/slurm.conf, template: slurm.conf.j2, mode: "0644", owner: root, group: root}
        - {dest: /etc/gpu-provision/health.json, content: "{{ text }}"}   # mode 0644 by default
      known: "{{ probe.files }}"   # optional: node_probe's file records, so that nothing is read again
      then: [[systemctl, daemon-reload], [systemctl, restart, munge]]   # optional, see below

Each file is a template (found as the template action finds it: the role's templates/, with the task's variables,
undefined variables an error) or literal content. plan() compares it with what the node has: its content (SHA-1),
and the owner, group and mode where the task names them. The node is read in one command (read_script), for the
files `known` does not describe and, under --diff, for the old text of the files whose content changes. The files
that differ travel as ONE bundle put over the connection (no command line holds their bytes); one command
(install_script) cuts each from the bundle into DEST.gp-new beside it, sets owner, group and mode, checks its size
and renames it over DEST, and sets only owner, group and mode where only they differ. Every path, owner and mode
reaches the shell through shlex.quote.

`then` lists commands (argv lists, each word quoted) that the same command runs once the files are in place, in
order, stopping at the first that fails: what a role would otherwise do in a task of its own (a reload, a start),
in the same round trip. The caller decides when they are needed (an empty list runs nothing); they run whether or
not a file differs, and count as a change. --check runs none of them.

Returns changed, `files` ([{dest, changes}] for each file that differs: content, owner, group, mode) and, under
--diff, `diff` (one before/after entry per file, as the template module shows it; none from a no_log task).
--check reads as a real run does and writes nothing.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import shlex
import stat

from ansible import constants as C
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

try:  # where the template action takes them from (ansible-core 2.19)
    from ansible._internal._templating._template_vars import generate_ansible_template_vars
except ImportError:  # ansible-core 2.18
    from ansible.template.vars import generate_ansible_template_vars  # type: ignore[no-redef]

_MODE = re.compile(r"[0-7]{3,4}")
_ATTRIBUTES = ("owner", "group", "mode")
_KNOWN_FIELDS = ("type", "owner", "group", "mode", "sha1")


class ConfigFilesError(ValueError):
    """A file the task names wrongly, or a read of the node that the script cannot have printed."""


# --- The task's arguments -------------------------------------------------------------------------------------------

def _text(where: str, value, what: str) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ConfigFilesError(f"config_files: {where}: {value!r} is not {what}")
    return value


def _mode(where: str, value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0o7777:
        return f"{value:04o}"  # an unquoted 0644 in YAML is the number 420
    if not isinstance(value, str) or not _MODE.fullmatch(value):
        raise ConfigFilesError(f"config_files: {where}.mode: {value!r} is not an octal mode; write it quoted, "
                               'e.g. mode: "0644"')
    return value.rjust(4, "0")


def _file(where: str, item) -> dict:
    keys = {"dest", "template", "content", *_ATTRIBUTES}
    if not isinstance(item, dict) or set(item) - keys or "dest" not in item or ("template" in item) == ("content" in item):
        raise ConfigFilesError(f"config_files: {where}: {item!r} is not a mapping of dest and either template or "
                               "content (and optionally owner, group, mode)")
    dest = _text(f"{where}.dest", item["dest"], "an absolute path")
    if not dest.startswith("/") or dest.endswith("/"):
        raise ConfigFilesError(f"config_files: {where}.dest: {dest!r} is not an absolute path of a file")
    content = item.get("content")
    if content is not None and not isinstance(content, str):
        raise ConfigFilesError(f"config_files: {where}.content: {type(content).__name__} is not text")
    return {"dest": dest, "template": _optional(where, item, "template", "a template's name"), "content": content,
            "mode": _mode(where, item.get("mode", "0644")), "owner": _optional(where, item, "owner", "a user name"),
            "group": _optional(where, item, "group", "a group name")}


def _optional(where: str, item: dict, key: str, what: str):
    return None if item.get(key) is None else _text(f"{where}.{key}", item[key], what)


def normalise(args: dict) -> tuple[list, dict]:
    """(files, known) from the task's arguments, each checked; ConfigFilesError names what is wrong."""
    unknown = sorted(set(args) - {"files", "known", "then"})
    if unknown:
        raise ConfigFilesError(f"config_files: unknown argument {', '.join(map(repr, unknown))}; the arguments are "
                               "files, known and then")
    if not isinstance(args.get("files"), list):
        raise ConfigFilesError(f"config_files: files: {args.get('files')!r} is not a list of files")
    files = [_file(f"files[{i}]", item) for i, item in enumerate(args["files"])]
    dests = [file["dest"] for file in files]
    if len(set(dests)) != len(dests):
        raise ConfigFilesError(f"config_files: files: a path is named twice in {dests!r}")
    known = args.get("known") or {}
    if not isinstance(known, dict) or not all(isinstance(v, dict) for v in known.values()):
        raise ConfigFilesError("config_files: known: is not a mapping of paths to node_probe's file records")
    return files, {path: record for path, record in known.items()
                   if all(field in record for field in _KNOWN_FIELDS)}


# --- Reading the node -----------------------------------------------------------------------------------------------

# A record a line, "TAG<TAB>INDEX<TAB>FIELDS", content in base64, "end" last (output cut short fails the task).
READ_PRELUDE = r"""LC_ALL=C; export LC_ALL
_cf_read() {
  r=$(stat -L --printf "%f\t%U\t%G\t%s" -- "$2" 2>/dev/null </dev/null) || return 0
  printf 'file\t%s\t%s\n' "$1" "$r"
  [ -f "$2" ] || return 0
  s=$(sha1sum <"$2") && printf 'sha1\t%s\t%s\n' "$1" "${s%% *}"
  [ "$3" -ge "$(stat -L --printf %s -- "$2")" ] 2>/dev/null || return 0
  c=$(base64 <"$2" | tr -d '\n') && printf 'text\t%s\t%s\n' "$1" "$c"
}
"""


def read_script(paths: list, limits: list) -> str:
    """One command that reads each path: type, owner, group, mode, size, SHA-1, and its bytes where the file is at
    most its limit in size (-1: not its bytes)."""
    calls = "".join(" ".join(shlex.quote(str(w)) for w in ("_cf_read", i, path, limit)) + "\n"
                    for i, (path, limit) in enumerate(zip(paths, limits)))
    return READ_PRELUDE + calls + "printf 'end\\n'\n"


def _absent() -> dict:
    return {"exists": False, "type": None, "owner": None, "group": None, "mode": None, "size": None, "sha1": None,
            "text": None}


def parse_read(count: int, stdout: str) -> list:
    """The records of read_script's output, one per path in order; other lines (a login shell's) are passed over."""
    found, ended = [_absent() for _ in range(count)], False
    for line in stdout.splitlines():
        tag, _, rest = line.partition("\t")
        index, _, fields = rest.partition("\t")
        if line == "end":
            ended = True
        elif tag in ("file", "sha1", "text"):
            if not index.isdigit() or int(index) >= count:
                raise ConfigFilesError(f"config_files: the read names file number {index!r}, which was not asked for")
            try:
                found[int(index)].update(_fields(tag, fields))
            except (ValueError, binascii.Error):
                raise ConfigFilesError(f"config_files: cannot read the output line {line[:200]!r}") from None
    if not ended:
        raise ConfigFilesError("config_files: the read stopped before its end (no 'end' line in its output)")
    return found


def _fields(tag: str, fields: str) -> dict:
    if tag == "sha1":
        return {"sha1": fields}
    if tag == "text":
        return {"text": base64.b64decode(fields, validate=True)}
    raw_mode, owner, group, size = fields.split("\t")
    mode = int(raw_mode, 16)
    kind = "file" if stat.S_ISREG(mode) else "directory" if stat.S_ISDIR(mode) else "other"
    return {"exists": True, "type": kind, "owner": owner, "group": group, "mode": f"{stat.S_IMODE(mode):04o}",
            "size": int(size)}


# --- What differs, and the command that writes it -------------------------------------------------------------------

def plan(file: dict, data: bytes, current: dict) -> list:
    """What differs between the file as the task wants it and as the node has it: content, owner, group, mode (a
    missing file, or something else in its place, is its content: written whole, with the attributes named)."""
    if current.get("type") != "file":
        return ["content"]
    changes = ["content"] if current.get("sha1") != hashlib.sha1(data).hexdigest() else []
    return changes + [name for name in _ATTRIBUTES if file[name] and file[name] != current.get(name)]


def _set_attributes(file: dict, path: str) -> list:
    owner = file["owner"] or ""
    owner += f":{file['group']}" if file["group"] else ""
    return ([f"chown -- {shlex.quote(owner)} {path}"] if owner else []) + [f"chmod {file['mode']} {path}"]


def then_commands(args: dict) -> list:
    """The task's `then`: a list of argv lists of strings; ConfigFilesError names what is wrong."""
    then = args.get("then") or []
    if not isinstance(then, list) or not all(
            isinstance(argv, list) and argv and all(isinstance(word, str) and word for word in argv) for argv in then):
        raise ConfigFilesError(f"config_files: then: {then!r} is not a list of commands, each a list of words "
                               "(e.g. [[systemctl, daemon-reload]])")
    return [list(argv) for argv in then]


def install_script(bundle: str | None, tmpdir: str | None, writes: list, then: list = ()) -> str:
    """One command: for each (file, changes, offset, length) either cut the file from the bundle beside its
    destination and rename it into place, or set its owner, group and mode; then the `then` commands; the bundle's
    directory goes on exit. Without writes there is no bundle (tmpdir None)."""
    lines = ["set -e", "umask 077"]
    if tmpdir is not None:
        lines.append(f"trap {shlex.quote('rm -rf -- ' + shlex.quote(tmpdir))} EXIT")
    for file, changes, offset, length in writes:
        dest = shlex.quote(file["dest"])
        if "content" not in changes:
            lines += _set_attributes(file, dest)
            continue
        new = shlex.quote(file["dest"] + ".gp-new")
        lines += [f"(umask 022 && mkdir -p -- {shlex.quote(os.path.dirname(file['dest']) or '/')})",
                  f"tail -c +{offset + 1} {shlex.quote(bundle)} | head -c {length} >{new}",
                  f'[ "$(wc -c <{new})" -eq {length} ] || {{ echo {shlex.quote(file["dest"] + ": short write")} >&2;'
                  " exit 1; }", *_set_attributes(file, new), f"mv -fT -- {new} {dest}"]
    lines += ["(umask 022 && " + shlex.join(argv) + ")" for argv in then]
    return "\n".join(lines) + "\n"


def diff_entry(file: dict, data: bytes, current: dict, changes: list, limit: int) -> dict:
    """The before/after of one file as Ansible's diff callback shows it: text, or a note, and the attributes."""
    entry = {"before_header": file["dest"], "after_header": file["dest"]}
    if "content" in changes:
        before = current.get("text")
        if not current.get("exists"):
            entry["before"] = ""
        elif limit > 0 and (current.get("size") or 0) > limit:
            entry["dst_larger"] = limit
        elif before is not None and b"\0" in before:
            entry["dst_binary"] = 1
        elif before is not None:
            entry["before"] = before.decode("utf-8", errors="replace")
        if limit > 0 and len(data) > limit:
            entry["src_larger"] = limit
        elif b"\0" in data:
            entry["src_binary"] = 1
        else:
            entry["after"] = data.decode("utf-8", errors="replace")
    attributes = [name for name in _ATTRIBUTES if name in changes]
    if "content" not in changes and attributes:
        entry["before"] = {"path": file["dest"], **{name: current.get(name) for name in attributes}}
        entry["after"] = {"path": file["dest"], **{name: file[name] for name in attributes}}
    return entry


# --- The action -----------------------------------------------------------------------------------------------------

class ActionModule(ActionBase):
    """Renders, compares, and writes what differs: one read where one is needed, one put and one command to write."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        del tmp  # a temporary directory is made only when something is written
        task_vars = task_vars or {}
        try:
            args = dict(self._task.args)
            files, known = normalise(args)
            then = then_commands(args)
            datas = [self._data(file, task_vars) for file in files]
            currents = self._currents(files, datas, known)
        except ConfigFilesError as error:
            raise AnsibleActionFail(str(error)) from None
        plans = [plan(file, data, current) for file, data, current in zip(files, datas, currents)]
        changed = [(file, data, current, changes)
                   for file, data, current, changes in zip(files, datas, currents, plans) if changes]
        result.update(changed=bool(changed or then), files=[{"dest": f["dest"], "changes": c} for f, _, _, c in changed],
                      then=[shlex.join(argv) for argv in then])
        if self._task.diff and changed:
            result["diff"] = [self._hide(diff_entry(f, d, cur, c, C.MAX_FILE_SIZE_FOR_DIFF)) for f, d, cur, c in changed]
        if (changed or then) and not self._task.check_mode:
            self._write([(f, d, c) for f, d, _, c in changed], result, then)
        return result

    def _data(self, file: dict, task_vars: dict) -> bytes:
        text = file["content"] if file["template"] is None else self._render(file, task_vars)
        return str(text).encode("utf-8", errors="surrogateescape")

    def _render(self, file: dict, task_vars: dict) -> str:
        """The template rendered as the template action renders it (its search path and Ansible's template vars)."""
        try:
            source = self._find_needle("templates", file["template"])
        except AnsibleError as error:
            raise AnsibleActionFail(f"config_files: {file['dest']}: {error}") from None
        searchpath = [*task_vars.get("ansible_search_path", []), self._loader._basedir, os.path.dirname(source)]
        variables = {**task_vars, **generate_ansible_template_vars(
            path=file["template"], fullpath=source, dest_path=file["dest"],
            include_ansible_managed="ansible_managed" not in task_vars)}
        templar = self._templar.copy_with_new_env(
            searchpath=[p for base in searchpath for p in (os.path.join(base, "templates"), base)],
            available_variables=variables)
        rendered = templar.template(trust_as_template(self._loader.get_text_file_contents(source)),
                                    escape_backslashes=False)
        return "" if rendered is None else rendered

    def _currents(self, files: list, datas: list, known: dict) -> list:
        """What the node has of each file: the known records, and one read for the rest (and, under --diff, for the
        old text of the files whose content changes)."""
        limit = C.MAX_FILE_SIZE_FOR_DIFF if C.MAX_FILE_SIZE_FOR_DIFF > 0 else 2 ** 62
        want_text = self._task.diff and not self._task.no_log
        currents, todo = [], []
        for i, (file, data) in enumerate(zip(files, datas)):
            record = known.get(file["dest"])
            currents.append({**_absent(), **record, "exists": record["type"] is not None} if record else None)
            text = want_text and (record is None or "content" in plan(file, data, currents[i]))
            if record is None or (text and record["type"] == "file"):
                todo.append((i, limit if text else -1))
        if todo:
            answer = self._low_level_execute_command(
                read_script([files[i]["dest"] for i, _ in todo], [lim for _, lim in todo]), executable=False)
            try:
                for (i, _), read in zip(todo, parse_read(len(todo), answer.get("stdout", ""))):
                    currents[i] = read
            except ConfigFilesError as error:
                raise ConfigFilesError(f"{error}; exit status {answer.get('rc')}, "
                                       f"stderr: {answer.get('stderr', '')[-2000:]}") from None
        return currents

    def _hide(self, entry: dict) -> dict:
        if self._task.no_log:
            return {key: value for key, value in entry.items() if key not in ("before", "after")}
        return entry

    def _write(self, changed: list, result: dict, then: list) -> None:
        """The bundle put once, then one command that installs every file from it and runs `then`."""
        if not changed:
            answer = self._low_level_execute_command(install_script(None, None, [], then), executable=False)
            _fail_on(answer, result, "; ".join(result["then"]))
            return
        writes, chunks, offset = [], [], 0
        for file, data, changes in changed:
            writes.append((file, changes, offset, len(data) if "content" in changes else 0))
            if "content" in changes:
                chunks.append(data)
                offset += len(data)
        tmpdir = self._make_tmp_path()
        bundle = self._connection._shell.join_path(tmpdir, "config_files.bundle")
        self._transfer_data(bundle, b"".join(chunks))
        self._fixup_perms2([tmpdir, bundle], execute=False)
        answer = self._low_level_execute_command(install_script(bundle, tmpdir, writes, then), executable=False)
        self._connection._shell.tmpdir = None if answer.get("rc") == 0 else tmpdir  # the command removed it
        _fail_on(answer, result, f"writing {', '.join(f['dest'] for f, _, _ in changed)}"
                                 f"{' then ' + '; '.join(result['then']) if then else ''}")


def _fail_on(answer: dict, result: dict, what: str) -> None:
    """Mark the result failed, with the command's status and stderr, when the command that did `what` failed."""
    if answer.get("rc") != 0:
        result.update(failed=True, rc=answer.get("rc"), stderr=answer.get("stderr", ""),
                      msg=f"config_files: {what} failed with exit status {answer.get('rc')}: "
                          f"{answer.get('stderr', '')[-2000:]}")
