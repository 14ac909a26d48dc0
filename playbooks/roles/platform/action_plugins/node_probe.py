"""node_probe: read a node in ONE remote command and answer with structured data. An action plugin: it runs on the
control node, copies nothing to the node and runs no Python there (the platform role's README lists the reads).

build_script() turns the task's declarative reads (packages, files, services, checks...) into one POSIX shell
script, which runs over the connection as the raw action runs its command (become as the play says); parse_output()
turns what it printed into a dict. Every value reaches the shell quoted (shlex.quote): a command is a list of words,
never a shell string (a pipe: [sh, -c, SCRIPT, sh, ARG...], the arguments still data). The script prints a record a
line, "TAG<TAB>INDEX<TAB>FIELDS" (INDEX numbers the task's reads: no name from the task comes back), any text in
base64, and "end" last: output without it (a script cut short) fails the task instead of reading as "absent".
Read-only: changed is always false, and it reads in --check too.
"""
from __future__ import annotations

import base64
import re
import shlex
import stat

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)+")
_PACKAGE_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]*(?::[a-z0-9-]+)?")
_ERE_SPECIAL = re.compile(r"([.\[\](){}*+?|^$\\])")
_FILE_TYPES = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISSOCK, "socket"),
               (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "char"), (stat.S_ISBLK, "block"), (stat.S_ISLNK, "link"))
# The node's Python reads a distribution's version from the given folder only, not from its own site-packages.
_PYTHON_VERSION = ("import sys\nfrom importlib.metadata import distributions\n"
                   "found = [d.version for d in distributions(name=sys.argv[2], path=sys.argv[1:2])]\n"
                   "print(found[0] if found else '')\n")


class ProbeError(ValueError):
    """A read the task names wrongly, or output the script cannot have printed."""


# --- The task's arguments -------------------------------------------------------------------------------------------

def _fail(where: str, value, want: str):
    raise ProbeError(f"node_probe: {where}: {value!r} {want}")


def _word(where: str, value, empty: bool = False) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or (not value and not empty) or "\0" in value:
        _fail(where, value, "is not a non-empty string without NUL bytes")
    return value


def _names(read: str, value) -> list:
    if not isinstance(value, list):
        _fail(read, value, f"is not a list; give a list of names, e.g. {read}: [munge]")
    return [(name, name) for name in (_word(f"{read}[{i}]", v) for i, v in enumerate(value))]


def _keyed(read: str, value, check) -> list:
    if not isinstance(value, dict):
        _fail(read, value, "is not a mapping of keys to what to read")
    return [(_word(f"{read} key", key), check(f"{read}.{key}", item)) for key, item in value.items()]


def _paths(read: str, value) -> list:
    return _names(read, value) if isinstance(value, list) else _keyed(read, value, _word)


def _package_names(read: str, value) -> list:
    """Debian package names only: apt-cache reads a name it does not know as a pattern ('*' lists every package)."""
    names = _names(read, value)
    for index, (name, _) in enumerate(names):
        if not _PACKAGE_NAME.fullmatch(name):
            _fail(f"{read}[{index}]", name, "is not a package name (a-z, 0-9, +, -, . and an optional :ARCH)")
    return names


def _argv(where: str, value) -> list:
    if not isinstance(value, list) or not value:
        _fail(where, value, "is not a command as a list of words; write e.g. [tar, -df, ARCHIVE], or "
                            "[sh, -c, 'A | B', sh, ARG] for a pipe")
    return [_word(f"{where}[{i}]", word, empty=i > 0) for i, word in enumerate(value)]


def _record(required: set, optional: set = frozenset()):
    def check(where: str, item) -> dict:
        if not isinstance(item, dict) or set(item) - required - optional or required - set(item):
            _fail(where, item, f"is not a mapping of {', '.join(sorted(required))}"
                               + (f" (and optionally {', '.join(sorted(optional))})" if optional else ""))
        return {key: _word(f"{where}.{key}", value) for key, value in item.items()}
    return check


def _flag(read: str, value) -> bool:
    if not isinstance(value, bool):
        _fail(read, value, "is not true or false")
    return value


# How each read is written in a task.
_SHAPES = {
    "packages": _names, "services": _names, "accounts": _names,
    "files": _paths, "executables": _paths, "processes": _paths,
    "checks": lambda read, value: _keyed(read, value, _argv),
    "outputs": lambda read, value: _keyed(read, value, _argv),
    "versions": lambda read, value: _keyed(read, value, _argv),
    "python_versions": lambda read, value: _keyed(read, value, _record({"python", "name", "path"})),
    "blocks": lambda read, value: _keyed(read, value, _record({"path", "marker"}, {"marker_begin", "marker_end"})),
    "tcp_listening": _flag,
    "os_release": lambda read, value: [path for _, path in _names(read, value)],
    # apt and dpkg (apt.py's reads): the versions the repositories offer, packages by glob, the index targets.
    "apt_versions": _package_names, "package_patterns": _names, "alternatives": _names, "apt_sources": _flag,
    "pci_devices": lambda read, value: _keyed(read, value, _word),
}
READS = tuple(sorted(_SHAPES))


def normalise(args: dict) -> dict:
    """{read: [(key, value), ...]} from the task's arguments, every value checked; ProbeError names what is wrong."""
    unknown = sorted(set(args) - set(READS))
    if unknown:
        raise ProbeError(f"node_probe: unknown read {', '.join(map(repr, unknown))}; the reads are {', '.join(READS)}")
    return {read: _SHAPES[read](read, value) for read, value in args.items()}


# --- The script -----------------------------------------------------------------------------------------------------

# A shell function per kind of read. Each captures what it reads and prints its record in one printf: a command that
# fails halfway never leaves half a line.
PRELUDE = r"""LC_ALL=C; export LC_ALL
_np_file() {
  r=$(stat -L --printf "%f\t%U\t%G\t%Y\t%s" -- "$2" 2>/dev/null </dev/null) || return 0
  printf 'file\t%s\t%s\n' "$1" "$r"
  if [ -f "$2" ] && s=$(sha1sum <"$2" 2>/dev/null); then printf 'sha1\t%s\t%s\n' "$1" "${s%% *}"; fi
}
_np_executable() {
  case $2 in */*) [ -f "$2" ] && [ -x "$2" ] ;; *) command -v -- "$2" >/dev/null 2>&1 ;; esac &&
    printf 'executable\t%s\n' "$1"
}
_np_lines() { while IFS= read -r l; do printf '%s\t%s\t%s\n' "$1" "$2" "$l"; done; }
_np_service() {
  systemctl show -p ActiveState -p UnitFileState -- "$2" 2>/dev/null </dev/null | _np_lines service "$1"
}
_np_account() {
  getent group -- "$2" 2>/dev/null </dev/null | _np_lines group "$1"
  getent passwd -- "$2" 2>/dev/null </dev/null | _np_lines passwd "$1"
}
_np_process() {
  p=$(pgrep -xo -- "$2" 2>/dev/null </dev/null) && s=$(cat "/proc/$p/stat" 2>/dev/null) &&
    printf 'process\t%s\t%s\t%s\n' "$1" "$p" "$s"
}
_np_check() { i=$1; shift; "$@" >/dev/null 2>&1 </dev/null; printf 'check\t%s\t%s\n' "$i" "$?"; }
_np_run() {
  t=$1; i=$2; shift 2; o=$("$@" 2>/dev/null </dev/null); r=$?
  printf '%s\t%s\t%s\t%s\n' "$t" "$i" "$r" "$(printf '%s' "$o" | base64 | tr -d '\n')"
}
_np_pci() {
  for d in "$2"/*; do
    [ -r "$d/vendor" ] && printf 'pci\t%s\t%s\t%s\t%s\t%s\n' "$1" "${d##*/}" "$(cat "$d/vendor")" \
      "$(cat "$d/device")" "$(cat "$d/class")"
  done 2>/dev/null </dev/null
}
_np_alternative() { update-alternatives --query "$2" 2>/dev/null </dev/null | _np_lines alternative "$1"; }
_np_content() {
  [ -f "$3" ] && [ -r "$3" ] && c=$(base64 <"$3" | tr -d '\n') && printf '%s\t%s\t%s\n' "$1" "$2" "$c"
}
"""
_PACKAGE_FORMAT = r"package\t${Package}\t${Version}\t${db:Status-Abbrev}\n"
_BOOT = "printf 'boot\\t%s\\t%s\\n' \"$(awk '/^btime/ { print $2 }' /proc/stat)\" \"$(getconf CLK_TCK)\""
_PATTERN_FORMAT = r"matched\t${Package}\t${Version}\t${db:Status-Abbrev}\n"
# apt-get indextargets, one line per Packages index: the sources entry (FILE:N), and the Release file's fields.
_SOURCE_FORMAT = "$(SOURCESENTRY)\t$(ORIGIN)\t$(SUITE)\t$(COMPONENT)"
_TCP = "ss -Hltn 2>/dev/null </dev/null | awk '{ print \"tcp\\t\" $4 }'"


def _call(*words: str) -> str:
    return " ".join(shlex.quote(str(word)) for word in words)


def _each(*function: str, words=lambda value: [value]):
    """One call of a shell function per entry: FUNCTION... INDEX WORDS(value)..."""
    return lambda entries: [_call(*function, i, *words(value)) for i, (_, value) in enumerate(entries)]


def _pgrep_name(name: str) -> list:
    """pgrep's pattern for exactly this name (it reads an extended regular expression)."""
    return [_ERE_SPECIAL.sub(r"\\\1", name)]


def _python_words(item: dict) -> list:
    return [item["python"], "-I", "-c", _PYTHON_VERSION, item["path"], item["name"]]


_WRITERS = {
    "packages": lambda entries: [_call("dpkg-query", "-W", "-f", _PACKAGE_FORMAT, "--", *(n for n, _ in entries))
                                 + " 2>/dev/null </dev/null"] if entries else [],
    "files": _each("_np_file"), "executables": _each("_np_executable"), "services": _each("_np_service"),
    "accounts": _each("_np_account"),
    "processes": lambda entries: [_BOOT, *_each("_np_process", words=_pgrep_name)(entries)] if entries else [],
    "checks": _each("_np_check", words=list),
    "outputs": _each("_np_run", "output", words=list), "versions": _each("_np_run", "version", words=list),
    "python_versions": _each("_np_run", "python", words=_python_words),
    "blocks": _each("_np_content", "block", words=lambda item: [item["path"]]),
    "tcp_listening": lambda flag: [_TCP] if flag else [],
    "os_release": lambda paths: [" || ".join(_call("_np_content", "os_release", 0, p) for p in paths)] if paths else [],
    "apt_versions": lambda entries: [_call("apt-cache", "policy", "--", *(n for n, _ in entries))
                                     + " 2>/dev/null </dev/null | _np_lines policy 0"] if entries else [],
    "package_patterns": lambda entries: [_call("dpkg-query", "-W", "-f", _PATTERN_FORMAT, "--", *(n for n, _ in entries))
                                         + " 2>/dev/null </dev/null"] if entries else [],
    "alternatives": _each("_np_alternative"),
    "apt_sources": lambda flag: [_call("apt-get", "indextargets", "--format", _SOURCE_FORMAT, "Identifier: Packages")
                                 + " 2>/dev/null </dev/null | _np_lines source 0"] if flag else [],
    "pci_devices": _each("_np_pci"),
}


def build_script(spec: dict) -> str:
    """The one shell script that reads everything the normalised spec names."""
    lines = [line for read, entries in spec.items() for line in _WRITERS[read](entries)]
    return PRELUDE + "".join(line + "\n" for line in lines) + "printf 'end\\n'\n"


# --- The output -----------------------------------------------------------------------------------------------------

_ABSENT = {  # what a read says of something the output does not mention: (key, value) -> answer
    "packages": lambda key, _: {"name": key, "installed": False, "held": False, "status": None, "version": None},
    "files": lambda _, path: {"path": path, "exists": False, "type": None, "owner": None, "group": None,
                              "mode": None, "mtime": None, "size": None, "sha1": None},
    "services": lambda key, _: {"name": key, "active": None, "enabled": None},
    "accounts": lambda key, _: {"name": key, "uid": None, "gid": None, "home": None, "shell": None,
                                "group_gid": None},
    "processes": lambda _, name: {"name": name, "running": False, "pid": None, "started": None},
    "executables": lambda key, _: False, "checks": lambda key, _: False,
    "apt_versions": lambda key, _: {"name": key, "installed": None, "candidate": None, "offered": []},
    "alternatives": lambda key, _: {"name": key, "registered": False, "status": None, "best": None, "value": None,
                                    "choices": []},
    "pci_devices": lambda key, _: [],
}
_WHOLE = {"tcp_listening": list, "apt_sources": list, "os_release": dict, "package_patterns": dict}  # one answer


def _initial(spec: dict) -> dict:
    state = {read: {key: _ABSENT.get(read, lambda *_: None)(key, value) for key, value in entries}
             for read, entries in spec.items() if read not in _WHOLE}
    state.update({read: _WHOLE[read]() for read, value in spec.items()
                  if read in _WHOLE and (value or not isinstance(value, bool))})
    return state


class _Reader:
    """Fills the state from the script's records, one line at a time: a method per record's tag."""

    def __init__(self, spec: dict):
        self.spec, self.state, self.boot = spec, _initial(spec), None
        self.policy_entry, self.policy_version = None, None  # apt-cache policy: the package and version read now

    def _key(self, read: str, index: str) -> str:
        """The key of the read's INDEXth entry; a record of a read the task did not ask for is an error."""
        entries = self.spec.get(read) or []
        if read not in self.state or not index.isdigit() or int(index) >= len(entries):
            raise ProbeError(f"node_probe: the output names {read} number {index!r}, which the task did not read")
        return entries[int(index)][0]

    def _set(self, read: str, index: str, value) -> None:
        key = self._key(read, index)
        self.state[read][key] = value

    def _update(self, read: str, index: str, **fields) -> None:
        key = self._key(read, index)
        self.state[read][key].update(fields)

    def package(self, name: str, version: str, status: str) -> None:
        for key, _ in self.spec.get("packages", []):
            if name in (key, key.split(":")[0]) and not self.state["packages"][key]["installed"]:
                self.state["packages"][key].update(_package(status.rstrip(), version))

    def file(self, index: str, raw_mode: str, owner: str, group: str, mtime: str, size: str) -> None:
        mode = int(raw_mode, 16)
        kind = next((name for test, name in _FILE_TYPES if test(mode)), "other")
        self._update("files", index, exists=True, type=kind, owner=owner, group=group,
                     mode=f"{stat.S_IMODE(mode):04o}", mtime=int(mtime), size=int(size))

    def sha1(self, index: str, digest: str) -> None:
        self._update("files", index, sha1=digest)

    def executable(self, index: str) -> None:
        self._set("executables", index, True)

    def service(self, index: str, line: str) -> None:
        name, _, value = line.partition("=")
        field = {"ActiveState": "active", "UnitFileState": "enabled"}.get(name)
        self._update("services", index, **({field: value or None} if field else {}))

    def check(self, index: str, rc: str) -> None:
        self._set("checks", index, rc == "0")

    def output(self, index: str, rc: str, text: str) -> None:
        key = self._key("outputs", index)
        self.state["outputs"][key] = _decode(text) if rc == "0" else None

    def version(self, index: str, rc: str, text: str) -> None:
        key, found = self._key("versions", index), _VERSION.search(_decode(text))
        self.state["versions"][key] = found.group(0) if found else None

    def python(self, index: str, rc: str, text: str) -> None:
        key, version = self._key("python_versions", index), _decode(text).strip()
        self.state["python_versions"][key] = version if rc == "0" and version else None

    def passwd(self, index: str, line: str) -> None:
        fields = line.split(":")
        found = {"uid": _int(fields[2]), "gid": _int(fields[3]), "home": fields[5], "shell": fields[6]} \
            if len(fields) == 7 else {}
        self._update("accounts", index, **found)

    def group(self, index: str, line: str) -> None:
        fields = line.split(":")
        self._update("accounts", index, **({"group_gid": _int(fields[2])} if len(fields) == 4 else {}))

    def boot_time(self, btime: str, hz: str) -> None:
        self.boot = (int(btime), int(hz)) if btime.isdigit() and hz.isdigit() and int(hz) > 0 else None

    def process(self, index: str, pid: str, line: str) -> None:
        fields = line.rpartition(")")[2].split()  # after the command's name, which may hold spaces: field 3 on
        ticks = _int(fields[19]) if len(fields) > 19 else None  # field 22, starttime: clock ticks after boot
        started = self.boot[0] + ticks // self.boot[1] if self.boot and ticks is not None else None
        self._update("processes", index, running=True, pid=_int(pid), started=started)

    def block(self, index: str, text: str) -> None:
        key = self._key("blocks", index)
        self.state["blocks"][key] = block_lines(_decode(text), dict(self.spec["blocks"])[key])

    def tcp(self, address: str) -> None:
        port = _int(address.rpartition(":")[2])
        if "tcp_listening" not in self.state:
            raise ProbeError("node_probe: the output names listening ports, which the task did not read")
        self.state["tcp_listening"] = sorted(set(self.state["tcp_listening"]) | ({port} - {None}))

    def matched(self, name: str, version: str, status: str) -> None:
        found = self.state.get("package_patterns")
        if found is None:
            raise ProbeError("node_probe: the output names packages by pattern, which the task did not read")
        if not found.get(name, {}).get("installed"):
            found[name] = {"name": name, **_package(status.rstrip(), version)}

    def policy(self, index: str, line: str) -> None:
        """apt-cache policy: "NAME:", its Installed and Candidate, then the version table: each version ("     VER PRIO",
        " *** VER PRIO" where installed) over its sources ("        PRIO URI SUITE... Packages", or "        PRIO
        /var/lib/dpkg/status": installed, offered by no repository)."""
        self._key("apt_versions", index)
        indent = len(line) - len(line.lstrip(" "))
        if line and indent == 0 and line.endswith(":"):
            self.policy_entry, self.policy_version = self._policy_entry(line[:-1]), None
        elif self.policy_entry is None or not line.strip():
            return
        elif indent == 2 and line.strip().startswith(("Installed: ", "Candidate: ")):
            field, _, value = line.strip().partition(": ")
            self.policy_entry[field.lower()] = None if value == "(none)" else value
        elif line.startswith(" *** ") or indent in (3, 4, 5):
            self.policy_version = line.replace(" *** ", " ", 1).split()[0]
        elif indent > 5 and self.policy_version and len(line.split()) > 2:  # a repository, not "PRIO STATUS-FILE"
            offered = self.policy_entry["offered"]
            if self.policy_version not in (v["version"] for v in offered):
                offered.append(debian_version(self.policy_version))

    def _policy_entry(self, name: str):
        """The read's answer for this heading of apt-cache policy (NAME, or NAME:ARCH for another architecture)."""
        answers = self.state["apt_versions"]
        if name in answers:
            return answers[name]
        return answers.get(name.split(":")[0]) if name.split(":")[0] in answers and not answers[
            name.split(":")[0]]["offered"] else None

    def alternative(self, index: str, line: str) -> None:
        key = self._key("alternatives", index)
        field, _, value = line.partition(": ")
        entry = self.state["alternatives"][key]
        if field == "Name":
            entry["registered"] = True
        elif field in ("Status", "Best", "Value"):
            entry[field.lower()] = None if value in ("", "none") else value
        elif field == "Alternative":
            entry["choices"].append(value)

    def source(self, index: str, line: str) -> None:
        if "apt_sources" not in self.state or index != "0":
            raise ProbeError("node_probe: the output names APT index targets, which the task did not read")
        entry, origin, suite, component = line.split("\t")  # ValueError: not four fields
        path, _, number = entry.rpartition(":")
        found = {"file": path or entry, "entry": _int(number), **{name: None if value.startswith("$(") else value or None
                 for name, value in (("origin", origin), ("suite", suite), ("component", component))}}
        if found not in self.state["apt_sources"]:
            self.state["apt_sources"].append(found)

    def pci(self, index: str, slot: str, vendor: str, device: str, klass: str) -> None:
        """sysfs: vendor and device "0x10de", class "0x030200" (base class 03, subclass 02, interface 00)."""
        key = self._key("pci_devices", index)
        ids = f"{int(vendor, 16):04x}", f"{int(device, 16):04x}", f"{int(klass, 16) >> 8:04x}"
        self.state["pci_devices"][key].append({"slot": slot, "vendor": ids[0], "device": ids[1], "class": ids[2],
                                               "base_class": ids[2][:2], "id": ":".join(ids)})

    def os_release(self, index: str, text: str) -> None:
        if "os_release" not in self.state or index != "0":
            raise ProbeError("node_probe: the output names an os-release file, which the task did not read")
        self.state["os_release"] = os_release_fields(_decode(text))


# Each record's tag: the reader's method and how many fields follow the tag (the last one takes the rest of the line).
_RECORDS = {"package": ("package", 3), "file": ("file", 6), "sha1": ("sha1", 2), "executable": ("executable", 1),
            "service": ("service", 2), "check": ("check", 2), "output": ("output", 3), "version": ("version", 3),
            "python": ("python", 3), "passwd": ("passwd", 2), "group": ("group", 2), "process": ("process", 3),
            "boot": ("boot_time", 2), "block": ("block", 2), "tcp": ("tcp", 1), "os_release": ("os_release", 2),
            "matched": ("matched", 3), "policy": ("policy", 2), "alternative": ("alternative", 2),
            "source": ("source", 2), "pci": ("pci", 5)}


def parse_output(spec: dict, stdout: str) -> dict:
    """The state the script's output describes, for the normalised spec it was built from. Lines of other tags (a
    login shell's chatter) are passed over; a record of ours that does not parse, or output without the final "end"
    line, is a ProbeError."""
    reader, ended = _Reader(spec), False
    for line in stdout.splitlines():
        tag, _, rest = line.partition("\t")
        if line == "end":
            ended = True
        elif tag in _RECORDS:
            method, count = _RECORDS[tag]
            fields = rest.split("\t", count - 1)
            try:
                if len(fields) != count:
                    raise ValueError(f"{count} fields expected")
                getattr(reader, method)(*fields)
            except ProbeError:
                raise
            except ValueError:  # a field that is not what its record holds (binascii.Error too)
                raise ProbeError(f"node_probe: cannot read the output line {line!r}") from None
    if not ended:
        raise ProbeError("node_probe: the read stopped before its end (no 'end' line in its output)")
    return reader.state


def _package(status: str, version: str) -> dict:
    """dpkg's abbreviated status: wanted (h: hold), state (i: installed), error flag (R: reinstall required)."""
    return {"status": status, "version": version or None, "held": status[:1] == "h",
            "installed": status[1:2] == "i" and status[2:] == ""}


def debian_version(version: str) -> dict:
    """A Debian version's parts (deb-version(7)): [EPOCH:]UPSTREAM[-REVISION]."""
    epoch, colon, rest = version.partition(":")
    if not (colon and epoch.isdigit()):
        epoch, rest = "0", version
    upstream, dash, revision = rest.rpartition("-")
    return {"version": version, "epoch": int(epoch), "upstream": upstream if dash else rest,
            "revision": revision if dash else ""}


def _decode(text: str) -> str:
    return base64.b64decode(text, validate=True).decode("utf-8", errors="replace")


def _int(text: str):
    return int(text) if text.isdigit() else None


def block_lines(text: str, block: dict):
    """The lines between a blockinfile block's markers, or None unless the text holds exactly one such block."""
    begin = block["marker"].replace("{mark}", block.get("marker_begin", "BEGIN"))
    end = block["marker"].replace("{mark}", block.get("marker_end", "END"))
    lines = [line.rstrip("\r") for line in text.split("\n")]
    starts = [i for i, line in enumerate(lines) if line == begin]
    ends = [i for i, line in enumerate(lines) if line == end]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        return None
    return lines[starts[0] + 1:ends[0]]


def os_release_fields(text: str) -> dict:
    """os-release(5): KEY=value lines, values quoted as in a shell; comments and other lines passed over."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            try:
                fields[key] = " ".join(shlex.split(value, posix=True))
            except ValueError:  # an unbalanced quote: the value as written
                fields[key] = value.strip("\"'")
    return fields


class ActionModule(ActionBase):
    """Runs the reads' script once over the connection, as the raw action runs its command."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        del tmp  # no temporary files: the script travels as the command
        if self._task.environment and any(self._task.environment):
            self._display.warning("node_probe does not support the environment keyword")
        try:
            spec = normalise(dict(self._task.args))
        except ProbeError as error:
            raise AnsibleActionFail(str(error)) from None
        answer = self._low_level_execute_command(build_script(spec), executable=False)
        try:
            result.update(parse_output(spec, answer.get("stdout", "")), changed=False)
        except ProbeError as error:
            stderr = answer.get("stderr", "")
            result.update(failed=True, changed=False, rc=answer.get("rc"), stderr=stderr,
                          msg=f"{error}; exit status {answer.get('rc')}, stderr: {stderr[-2000:]}")
        return result
