"""A spec is data: hostile values in every string field never execute anything (issue 21).

For each provider, every string field of the spec gets each hostile value (Jinja expressions and statements, shell
substitutions, backticks, ';', newlines, quotes, ssh % tokens, unicode look-alikes). Through `validate`, `plan` and
`inventory` a value is either refused with a finding naming its field or passes through as data; then Ansible
reads every variable of rendered inventories, and the SSH paths (the ProxyCommand of the jump host run by the real
ssh, and paramiko through a jump host) are exercised. Every payload would create MARKER; MARKER never appears.
Each harness also runs a control that must create its marker, so a harness that stopped evaluating would fail.
"""
from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import yaml
from inprocess import provision
from specs import PROVIDERS, bases_for, dump, string_paths, with_value
from pydantic import BaseModel

from provision import inventory
from provision.cluster import lifecycle
from provision.errors import ConnectionFailure, StateError
from provision.remote import commands, ssh_options
from provision.spec.loader import load_spec
from provision.spec.model import ClusterSpec
from provision.spec.people import Directory

ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"


def payloads(marker: Path) -> list[str]:
    """Every hostile value, each of which would create `marker` if anything evaluated it."""
    touch = f"touch {marker}"
    return [
        f"{{{{ lookup('pipe', '{touch}') }}}}",
        f"{{% set x = lookup('pipe', '{touch}') %}}{{{{ x }}}}",
        f"#jinja2: variable_start_string: '[['\n[[ lookup('pipe', '{touch}') ]]",
        f"$({touch})",
        f"`{touch}`",
        f"x; {touch}",
        f"x\n{touch}\n",
        f"x' ; {touch} ; echo '",
        f'x" ; {touch} ; echo "',
        f"%h %p %r %C %d %u %% $({touch})",
        f"u$({touch})",
        f"x || {touch} &",
        f"ｘ＄（{touch}）｛｛ lookup('pipe', '{touch}') ｝｝",  # full-width look-alikes
        f"x\u2028{touch}\u0000",
    ]


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("bases")
    (root / "keys").mkdir()
    (root / "keys" / "id_ed25519").write_text("not a real key\n")  # exists, so only shapes can refuse key_path
    return bases_for(root)


# --- every string field of the model is in the tables -----------------------------------------------------------

def _text_fields(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Dotted names of every field of the spec model that can hold text (str, Path, a Literal of strings)."""
    names: set[str] = set()
    for name, field in model.model_fields.items():
        for kind in _kinds(field.annotation):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                names |= _text_fields(kind, f"{prefix}{name}.")
            elif kind is str or kind is Path or isinstance(kind, str):
                names.add(prefix + name)
    return names


def _kinds(annotation: object) -> list:
    """The leaf types inside Optional/Union/list/Annotated/Literal."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return list(typing.get_args(annotation))
    if origin is None:
        return [annotation]
    args = typing.get_args(annotation)
    return [k for arg in (args[:1] if origin is typing.Annotated else args) for k in _kinds(arg)]


# Mappings whose text is in their keys alone (the values are numbers): the payloads go into values, so these keys are
# held by their shape check instead (tests/unit/spec/test_people.py), and the inventory writes them tagged !unsafe.
TEXT_IN_KEYS_ONLY = {"accounting.accounts.grp_tres": "TRES names, provision.spec.people.tres_name"}


def test_the_bases_hold_every_text_field_of_the_model(bases):
    names = [[str(p) for p in path if not isinstance(p, int)] for base in bases.values() for path in string_paths(base)]
    covered = {".".join(name[:end]) for name in names for end in range(1, len(name) + 1)}  # a mapping's keys too
    missing = _text_fields(ClusterSpec) - covered - set(TEXT_IN_KEYS_ONLY)
    assert not missing, f"add these fields to the hostile bases: {sorted(missing)}"


# --- validate, plan, inventory ----------------------------------------------------------------------------------

def _shown(path: tuple) -> str:
    return ".".join(str(p) for p in path)


def _cases(provider: str) -> list[tuple]:
    """Every string field of a base; the aws variants add only their image selector."""
    paths = string_paths(bases_for(Path("/nonexistent"))[provider])
    return paths if not provider.startswith("aws-") else [p for p in paths if p[:2] == ("provider", "ami")]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_base_is_valid(tmp_path, bases, provider):
    path = tmp_path / "cluster.yaml"
    path.write_text(dump(bases[provider]))
    result = provision("validate", str(path))
    assert result.code == 0, result.stderr


@pytest.mark.parametrize("provider, field", [(p, f) for p in PROVIDERS for f in _cases(p)],
                         ids=lambda v: _shown(v) if isinstance(v, tuple) else v)
def test_hostile_values_are_refused_or_inert_through_validate_plan_inventory(tmp_path, bases, provider, field):
    marker = tmp_path / "MARKER"
    for number, payload in enumerate(payloads(marker)):
        spec = tmp_path / f"spec-{number}.yaml"
        spec.write_text(dump(with_value(bases[provider], field, payload)))
        checked = provision("validate", str(spec))
        assert checked.code in (0, 2), checked.stderr
        if checked.code == 2:  # refused with a finding that names the field's section
            assert f"error: {field[0]}" in checked.stderr, (payload, checked.stderr)
        for argv in (["plan"], ["inventory", "-o", str(tmp_path / f"inv-{number}")]):
            result = provision(argv[0], str(spec), *argv[1:])
            assert result.code == checked.code, (argv, payload, result.stderr)
        if checked.code == 0:  # passed through: it must reach Ansible only as !unsafe data
            _assert_inert(tmp_path / f"inv-{number}")
        assert not marker.exists(), (field, payload)


def _assert_inert(inventory_dir: Path) -> None:
    """Every string the renderer wrote that could be a template is tagged !unsafe."""
    for path in inventory_dir.rglob("*.yml"):
        for line in path.read_text().splitlines():
            assert "{" not in line.split(":", 1)[-1] or "!unsafe" in line or line.lstrip().startswith("#"), line


# --- Ansible reads every variable of a rendered inventory -------------------------------------------------------

class _UnsafeLoader(yaml.SafeLoader):
    """Reads a rendered inventory, keeping !unsafe strings as strings."""


_UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def _poisoned(spec: ClusterSpec, values: list[str]) -> tuple[ClusterSpec, object]:
    """The spec and planned cluster with hostile text in every string the renderer takes from them as a value.

    Validation is bypassed on purpose: this proves the renderer's `!unsafe`, the second line of defence. Names that
    the renderer writes as YAML keys (host and group names) are kept; their shapes are the defence there.
    """
    feed = iter(values * 100)
    spec = _poison_model(spec, feed, keep={"name", "state_dir", "node_groups", "provider", "ssh"})
    cluster = lifecycle.planned_cluster(spec)
    nodes = tuple(n.model_copy(update={"address": next(feed), "gpu_model": next(feed), "interconnect": next(feed),
                                       "partition": next(feed)}) for n in cluster.nodes)
    cluster = cluster.model_copy(update={"nodes": nodes, "ssh_user": next(feed),
                                         "vars": {"provision_extra": next(feed)}})
    return spec, cluster


def _poison_model(model: BaseModel, feed, keep: set[str] = frozenset()) -> BaseModel:
    """A copy of a model with every str (and list of str) field replaced from the feed."""
    update = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if name in keep:
            continue
        if isinstance(value, BaseModel):
            update[name] = _poison_model(value, feed)
        elif isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            update[name] = [_poison_model(v, feed) for v in value]
        elif value is None and _is_section(type(model).model_fields[name].annotation):
            continue  # an absent section (accounting, directory) stays absent
        elif isinstance(value, str) or (value is None and name not in ("replica",)):
            update[name] = next(feed)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            update[name] = [next(feed) for _ in value]
    return model.model_copy(update=update)


def _is_section(annotation: object) -> bool:
    """Whether a field holds a spec section (a model), possibly optional."""
    return any(isinstance(kind, type) and issubclass(kind, BaseModel) for kind in _kinds(annotation))


def _read_every_variable(inventory_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """ansible-playbook with one debug task per variable of the inventory, for every host, on this machine only."""
    hosts = yaml.load((inventory_dir / "hosts.yml").read_text(), Loader=_UnsafeLoader)["all"]
    names = set(hosts["vars"]) | {name for host in hosts["hosts"].values() for name in (host or {})}
    for path in (inventory_dir / "group_vars").rglob("*.yml"):
        names |= set(yaml.load(path.read_text(), Loader=_UnsafeLoader))
    # one task looping over the names (a task per variable cost a second or more of Ansible's per-task work per turn);
    # lookup('vars') templates each value as `debug: var=` did, which the harness's control below proves
    tasks = [{"name": "Read every variable", "ansible.builtin.debug": {"msg": "{{ lookup('ansible.builtin.vars', item) }}"},
              "loop": sorted(names)}]
    play = tmp_path / "read-every-variable.yml"
    play.write_text(yaml.safe_dump([{"name": "Read every variable", "hosts": "all", "gather_facts": False,
                                     "connection": "local", "tasks": tasks}]))
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\n")  # none of this machine's settings
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_CONFIG": str(config)}
    return subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory_dir), str(play)], capture_output=True,
                          text=True, env=env, timeout=300)


def test_ansible_reading_every_variable_runs_nothing_from_the_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    marker = tmp_path / "MARKER"
    values = payloads(marker)
    examples = Path(__file__).resolve().parents[3] / "inventories"
    people = load_spec(examples / "onprem.yaml")  # its users and accounting, so their strings are poisoned too
    directory = Directory(type="ldap", uri="ldaps://ldap.example.org", base_dn="dc=example,dc=org",
                          ca_file=tmp_path / "ca.pem", bind_dn="cn=reader,dc=example,dc=org",
                          bind_password_file=tmp_path / "bind.pw")  # and the sssd role's
    base = load_spec(examples / "sandbox.yaml").model_copy(update={"users": people.users, "directory": directory,
                                                                    "accounting": people.accounting})
    for turn in range(len(values)):  # each field sees each payload once over the turns
        spec, cluster = _poisoned(base, values[turn:] + values[:turn])
        directory = tmp_path / f"inv-{turn}"
        for relative, text in inventory.render(spec, cluster).items():
            (directory / relative).parent.mkdir(parents=True, exist_ok=True)
            (directory / relative).write_text(text)
        if turn == 0:  # the control: a variable that is not data must be evaluated, or this harness proves nothing
            control = tmp_path / "CONTROL"
            (directory / "group_vars" / "all" / "zz_control.yml").write_text(
                f"harness_control: \"{{{{ lookup('pipe', 'touch {control}') }}}}\"\n")
        result = _read_every_variable(directory, tmp_path)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert "failed=0" in result.stdout and result.stdout.count("ok: [") > 100
        assert not marker.exists(), (turn, result.stdout[-2000:])
        if turn == 0:
            assert control.exists(), "the harness did not evaluate a plain template variable"


def test_roles_read_inert_values_unchanged(tmp_path):
    """The tags change nothing for roles: the shared_mount role renders the same nfs fstab line from !unsafe vars."""
    from provision.templating import environment
    y = environment().filters["y"]
    out = tmp_path / "out"
    out.mkdir()
    values = {"filesystem_type": "nfs", "filesystem_server": "nas01", "filesystem_remote_path": "/export/home",
              "filesystem_mount_point": "/home/shared", "shared_mount_render_dir": str(out)}
    lines = [f"        {key}: {y(value)}" for key, value in values.items()]
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                                        f"      ansible_python_interpreter: {sys.executable}\n  vars:\n"
                                        + "\n".join(line[4:] for line in lines) + "\n")
    (tmp_path / "play.yml").write_text(
        "- name: Render\n  hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: Render through the role\n"
        "      ansible.builtin.include_role:\n        name: shared_mount\n        tasks_from: render\n")
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(repo / "playbooks" / "roles"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_HOME": str(tmp_path / "ansible-home")}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:]
    golden = repo / "tests" / "unit" / "roles" / "golden" / "nfs"
    assert {p.name: p.read_text() for p in out.iterdir()} == {p.name: p.read_text() for p in golden.iterdir()}


# --- the SSH paths ------------------------------------------------------------------------------------------------

@pytest.fixture
def jump_cluster(tmp_path, monkeypatch):
    """An aws-like planned cluster reached through a jump host on loopback."""
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    spec = load_spec(Path(__file__).resolve().parents[3] / "inventories" / "aws.yaml")
    cluster = lifecycle.planned_cluster(spec)
    cluster.known_hosts_path.parent.mkdir(parents=True, exist_ok=True)
    cluster.known_hosts_path.write_text("")
    return cluster.model_copy(update={"vars": {"ssh_jump_host": "127.0.0.1"}})


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ssh_through(common_args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """The real ssh with the inventory's options, as Ansible's ssh plugin passes them, to a closed loopback port."""
    argv = ["ssh", "-F", os.devnull, *shlex.split(common_args), "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
            "-p", str(_closed_port()), "127.0.0.1", "true"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=tmp_path)


def test_hostile_user_or_key_path_never_reaches_the_proxy_command(jump_cluster, tmp_path):
    marker = tmp_path / "MARKER"
    for payload in payloads(marker):
        for update in ({"ssh_user": payload}, {"ssh_key_path": Path("/keys") / payload},
                       {"vars": {"ssh_jump_host": payload}}):
            with pytest.raises(StateError):
                ssh_options.common_args(jump_cluster.model_copy(update=update))
    assert not marker.exists()


def test_the_proxy_command_quotes_every_word_for_the_shell_and_for_ssh(jump_cluster, tmp_path, monkeypatch):
    """With the shape checks switched off, the quoting alone keeps hostile words inert in the real ssh + sh."""
    monkeypatch.setattr(ssh_options, "_user", lambda user: user)
    monkeypatch.setattr(ssh_options, "option_path", lambda path: str(path))
    marker = tmp_path / "MARKER"
    for payload in payloads(marker):
        if "\0" in payload or "\n" in payload or "\u2028" in payload:
            continue  # ssh takes one line per option; these never get this far (shapes refuse them)
        cluster = jump_cluster.model_copy(update={"ssh_user": payload, "ssh_key_path": tmp_path / payload})
        result = _ssh_through(ssh_options.common_args(cluster), tmp_path)
        assert result.returncode != 0 and not marker.exists(), (payload, result.stderr)
    control = tmp_path / "CONTROL"  # the old template's unquoted command runs the payload: the harness can tell
    unquoted = f"-o ProxyCommand=\"ssh -W %h:%p u$(touch {control})@127.0.0.1\""
    _ssh_through(unquoted, tmp_path)
    assert control.exists()


def test_paramiko_through_the_jump_host_passes_the_user_as_data(jump_cluster, tmp_path, monkeypatch):
    """`exec` and certify log in with paramiko: the user name goes into the SSH protocol, never through a shell;
    one that is not a user name is refused before anything is contacted (it would be read with the user's ssh
    config, provision.adaptors.ssh_config)."""
    import paramiko
    monkeypatch.setenv("PROVISION_SSH_CONFIG", "")
    marker = tmp_path / "MARKER"
    seen: list[tuple[str, int, str]] = []

    def refused(self, hostname, port=22, username=None, **_):
        seen.append((hostname, port, username))
        raise ConnectionRefusedError(111, "Connection refused")  # nothing is contacted

    monkeypatch.setattr(paramiko.SSHClient, "connect", refused)
    key = tmp_path / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    node = jump_cluster.nodes[1].model_copy(update={"address": "10.42.0.7"})
    for payload in payloads(marker):
        cluster = jump_cluster.model_copy(update={"ssh_user": payload, "ssh_key_path": key})
        with pytest.raises(ConnectionFailure, match="is not a user name"):
            commands.run_on(cluster, node, "true", timeout=5)
    assert seen == [] and not marker.exists()
    cluster = jump_cluster.model_copy(update={"ssh_user": "svc.deploy-1", "ssh_key_path": key})
    with pytest.raises(ConnectionFailure, match="connection refused"):
        commands.run_on(cluster, node, "true", timeout=5)
    assert seen == [("127.0.0.1", 22, "svc.deploy-1")]  # the jump host first, the user as it is
