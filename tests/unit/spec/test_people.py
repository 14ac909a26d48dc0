"""`users:`, `homes:`, `accounting:` and `directory:`: shapes (a key parsed as OpenSSH reads it, names as useradd and
sacctmgr take them, Slurm times) and the checks across entries (ids, names, references), table-driven."""
from __future__ import annotations

import base64
import copy
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from provision.spec.loader import validate_file
from provision.spec.model import ClusterSpec
from provision.spec.people_checks import home_base, service_accounts
from provision.spec.validators import semantic_findings


def _public(key) -> str:
    return key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


ED25519 = _public(ed25519.Ed25519PrivateKey.generate())
ECDSA = _public(ec.generate_private_key(ec.SECP256R1()))
RSA = _public(rsa.generate_private_key(public_exponent=65537, key_size=2048))
_BLOB = base64.b64decode(ED25519.split()[1])

BASE = {
    "name": "demo",
    "provider": {"type": "static", "subnet": "10.0.0.0/24"},
    "node_groups": [
        {"name": "head", "roles": ["controller", "login"], "hosts": "head01", "addresses": ["10.0.0.10"]},
        {"name": "cpu", "roles": ["compute"], "hosts": "cpu[01-02]", "addresses": "10.0.0.[11-12]"},
        {"name": "fs", "roles": ["storage"], "hosts": "fs[01-02]", "addresses": "10.0.0.[21-22]"},
    ],
    "filesystem": {"type": "glusterfs", "replica": 2},
    "users": [
        {"name": "alice", "uid": 2001, "ssh_public_keys": [ED25519 + " alice@laptop"], "accounts": ["physics"]},
        {"name": "bob", "uid": 2002, "gid": 3002, "groups": ["alice"], "shell": "/usr/bin/zsh",
         "ssh_public_keys": [ECDSA, RSA], "accounts": ["ml", "physics"]},
    ],
    "accounting": {
        "accounts": [{"name": "physics", "fairshare": 40, "max_jobs": 20, "grp_tres": {"cpu": 64, "gres/gpu": 8},
                      "qos": ["long", "normal"]},
                     {"name": "ml", "parent": "physics", "fairshare": 60}],
        "qos": [{"name": "long", "priority": 10, "max_jobs_per_user": 2, "max_wall": "2-00:00:00"},
                {"name": "normal", "max_wall": 720}],
    },
}


def _with(path: str, value, data: dict | None = None) -> dict:
    data = copy.deepcopy(BASE if data is None else data)
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = data
    for key in keys[:-1]:
        node = node[key] if isinstance(key, int) else node.setdefault(key, {})
    if value is None:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


def _findings(tmp_path: Path, data: dict, lines: bool = False) -> list[str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return [f.render() if lines or f.line is None else f.render().replace(f" (line {f.line})", "")
            for f in validate_file(path).findings]


def test_the_base_spec_validates_and_keeps_its_values(tmp_path):
    assert _findings(tmp_path, BASE) == []
    spec = ClusterSpec.model_validate(BASE)
    alice, bob = spec.users
    assert (alice.group_id, bob.group_id, alice.shell) == (2001, 3002, "/bin/bash")
    assert alice.ssh_public_keys == [ED25519 + " alice@laptop"]
    assert [q.max_wall for q in spec.accounting.qos] == [2880, 720]
    assert spec.accounting.enforce is True
    assert home_base(spec) == "/shared/home"


STRUCTURE = [
    ("users.0.name", "Alice", "users[0].name (line 27): 'Alice' is not a user name"),
    ("users.0.name", "al ice", "is not a user name"),
    ("users.0.name", "a$(id)", "is not a user name"),
    ("users.0.uid", "2001x", "users[0].uid"),
    ("users.0.uid", -1, "users[0].uid"),
    ("users.0.uid", 2**32 - 1, "users[0].uid"),
    ("users.0.shell", "bash", "users[0].shell: 'bash' is not a shell's absolute path"),
    ("users.0.shell", "/bin/../bin/sh", "is not a shell's absolute path"),
    ("users.0.shell", "/bin/sh; id", "is not a shell's absolute path"),
    ("users.0.ssh_public_keys", ["ssh-ed25519"], "is not an OpenSSH public key line"),
    ("users.0.ssh_public_keys", ['from="10.0.0.1" ' + ED25519], "is not an OpenSSH public key line"),
    ("users.0.ssh_public_keys", ["ssh-rsa " + ED25519.split()[1]],
     "does not hold a ssh-rsa key (the base64 blob does not decode to one of that type)"),
    ("users.0.ssh_public_keys", ["ssh-ed25519 " + base64.b64encode(_BLOB[:20]).decode()], "does not hold a ssh-ed25519"),
    ("users.0.ssh_public_keys", ["ssh-ed25519 " + base64.b64encode(_BLOB + b"xx").decode()], "does not hold"),
    ("users.0.ssh_public_keys", [ED25519 + " comment\nssh-rsa AAAA"], "is not an OpenSSH public key line"),
    ("users.0.accounts", ["Physics"], "users[0].accounts[0]: 'Physics' is not a Slurm account or QoS name "
     "(lower-case letters, digits and _ . -, at most 63 characters, no spaces); write physics"),
    ("users.0.accounts", ["a b"], "is not a Slurm account or QoS name"),
    ("accounting.accounts.0.name", "phys,ics", "is not a Slurm account or QoS name"),
    ("accounting.accounts.0.grp_tres", {"cpus": 4}, "is not a Slurm TRES name; write e.g. cpu, mem (in MB)"),
    ("accounting.accounts.0.grp_tres", {"gres/gpu": -1}, "accounting.accounts[0].grp_tres.gres/gpu"),
    ("accounting.accounts.0.fairshare", 0, "accounting.accounts[0].fairshare"),
    ("accounting.qos.0.max_wall", "2 days", "is not a Slurm time (minutes, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)"),
    ("accounting.qos.0.max_wall", "0", "is no time at all"),
    ("accounting.qos.0.max_wall", "UNLIMITED", "is not a Slurm time"),
    ("accounting.enforce", "yes", "accounting.enforce"),
    ("homes.base", "/shared/home dir", "is not an absolute path of letters"),
    ("directory", {"type": "ldap", "uri": "http://ldap", "base_dn": "dc=example,dc=org", "ca_file": "/etc/hostname"},
     "directory.uri (line"),
    ("directory", {"type": "ldap", "uri": "ldaps://ldap", "base_dn": "dc=x;id", "ca_file": "/etc/hostname"},
     "is not a distinguished name"),
    ("directory", {"type": "ldap", "uri": "ldaps://ldap", "base_dn": "dc=x"}, "directory.ca_file"),
]


@pytest.mark.parametrize("path, value, expected", STRUCTURE, ids=lambda v: str(v)[:30])
def test_a_bad_shape_is_a_finding_naming_the_field_and_value(tmp_path, path, value, expected):
    rendered = _findings(tmp_path, _with(path, value), lines="(line" in expected)
    assert any(expected in line for line in rendered), rendered


@pytest.mark.parametrize("time, minutes", [("90", 90), (90, 90), ("10:30", 11), ("02:00:00", 120), ("1-12", 2160),
                                           ("1-00:30", 1470), ("3-00:00:01", 4321)])
def test_a_slurm_time_reads_as_minutes_as_slurm_reads_it(time, minutes):
    spec = ClusterSpec.model_validate(_with("accounting.qos.0.max_wall", time))
    assert spec.accounting.qos[0].max_wall == minutes


SERVICES = service_accounts()
SEMANTIC = [
    ("two users of one name", _with("users.1.name", "alice"),
     "error: users[1].name: 'alice' is listed more than once; list each user once"),
    ("a system name", _with("users.0.name", "nobody"),
     "error: users[0].name: 'nobody' is a system or service account's name; give the user their own login name"),
    ("a service account's name", _with("users.0.name", "slurm"), "error: users[0].name: 'slurm' is a system or service account's name"),
    ("a uid in the system range", _with("users.0.uid", 999),
     "error: users[0].uid: 999 is in the system range (below 1000), where the OS and its packages take ids; use uid "
     "1000 or above, e.g. 2001"),
    ("a gid in the system range", _with("users.1.gid", 100), "error: users[1].gid: 100 is in the system range"),
    ("nobody's uid", _with("users.0.uid", 65534), "error: users[0].uid: 65534 is nobody's id"),
    ("two users of one uid", _with("users.1.uid", 2001),
     "error: users[1].uid: 2001 is also the uid of user 'alice'; give every user their own uid"),
    ("a gid on another user's group", _with("users.1.gid", 2001),
     "error: users[1].gid: 2001 is also the gid of user 'alice'; give every user their own gid"),
    ("a uid-derived gid on another's gid", _with("users.0.uid", 3002),
     "error: users[1].gid: 3002 is also the gid of user 'alice'; give every user their own gid"),
    ("a uid that is another's gid", _with("users.1.uid", 2001, _with("users.1.gid", None)),
     "error: users[1].uid: 2001 is also the gid of user 'alice' (no gid is given, so the uid is the gid)"),
    ("a repeated group", _with("users.1.groups", ["alice", "alice"]), "error: users[1].groups: ['alice', 'alice']"),
    ("a repeated key", _with("users.0.ssh_public_keys", [ED25519, ED25519 + " again"]),
     "warning: users[0].ssh_public_keys: the same key is listed twice"),
    ("an unknown account", _with("users.0.accounts", ["chem"]),
     "error: users[0].accounts[0]: 'chem' is not an account of accounting.accounts; add {name: chem} to "
     "accounting.accounts"),
    ("an account without an accounting section", _with("accounting", None),
     "error: users[0].accounts[0]: 'physics' is not an account of accounting.accounts; add an accounting section"),
    ("a user without an account, enforced", _with("users.0.accounts", []),
     "warning: users[0].accounts: 'alice' has no account, and with accounting.enforce Slurm refuses their jobs"),
    ("a repeated account", _with("accounting.accounts.1.name", "physics"),
     "error: accounting.accounts[1].name: 'physics' names more than one account; name each account once"),
    ("an account named root", _with("accounting.accounts.1.name", "root"),
     "error: accounting.accounts[1].name: 'root' is Slurm's own top account"),
    ("an unknown parent", _with("accounting.accounts.1.parent", "chem"),
     "error: accounting.accounts[1].parent: 'chem' is not an account of accounting.accounts; name a listed account"),
    ("a cycle", _with("accounting.accounts.0.parent", "ml"),
     "error: accounting.accounts[0].parent: 'physics' is its own ancestor; make the accounts a tree under root"),
    ("an unknown QoS", _with("accounting.accounts.0.qos", ["short"]),
     "error: accounting.accounts[0].qos[0]: 'short' is not a QoS of accounting.qos"),
    ("a repeated QoS", _with("accounting.qos.1.name", "long"),
     "error: accounting.qos[1].name: 'long' names more than one QoS"),
    ("accounting without Slurm's", _with("software", {"slurm": {"accounting": False}}),
     "error: accounting: needs Slurm's accounting, which software.slurm.accounting turns off"),
    ("homes in a system path", _with("homes", {"base": "/etc/people"}),
     "error: homes.base: '/etc/people' is a system path"),
    ("homes outside the shared filesystem", _with("homes", {"base": "/home"}),
     "warning: homes.base: '/home' is outside the shared filesystem (/shared): each node gets its own homes"),
    ("users without a shared filesystem", _with("filesystem", {"type": "none"}),
     "warning: homes: there is no shared filesystem, so each node has its own /home"),
    ("people without a login node", _with("node_groups.0.roles", ["controller"]),
     "warning: node_groups: no group has the login role, so people log in to the controller (group 'head') and submit "
     "their jobs there, beside slurmctld and slurmdbd; add a group with roles: [login]"),
    ("a CA file that is missing", _with("directory", {"type": "ldap", "uri": "ldaps://ldap.example.org:636",
                                                     "base_dn": "dc=example,dc=org", "ca_file": "/nonexistent/ca.pem"}),
     "error: directory.ca_file: '/nonexistent/ca.pem' does not exist"),
    ("a bind DN without its password", _with("directory", {"type": "ldap", "uri": "ldap://ldap",
                                                          "base_dn": "dc=example,dc=org", "ca_file": "/etc/hostname",
                                                          "bind_dn": "cn=reader,dc=example,dc=org"}),
     "error: directory: bind_dn and bind_password_file come together"),
    ("a directory user with an unknown account", _with("accounting.users", [{"name": "dave", "accounts": ["chem"]}]),
     "error: accounting.users[0].accounts[0]: 'chem' is not an account of accounting.accounts; add {name: chem}"),
    ("a directory user listed twice", _with("accounting.users", [{"name": "dave", "accounts": ["physics"]}] * 2),
     "error: accounting.users[1].name: 'dave' is listed more than once"),
    ("a directory user who is also a listed user", _with("accounting.users", [{"name": "alice",
                                                                                "accounts": ["physics"]}]),
     "error: accounting.users[0].name: 'alice' is also in users:, whose entry names their accounts"),
    ("a directory user with a system name", _with("accounting.users", [{"name": "munge", "accounts": ["physics"]}]),
     "error: accounting.users[0].name: 'munge' is a system or service account's name"),
    ("a directory user repeating an account", _with("accounting.users", [{"name": "dave",
                                                                          "accounts": ["physics", "physics"]}]),
     "error: accounting.users[0].accounts: ['physics', 'physics'] repeats an account"),
    ("directory users without a directory", _with("accounting.users", [{"name": "dave", "accounts": ["physics"]}]),
     "warning: accounting.users: there is no directory, so these people need accounts on every node made some other"),
]


@pytest.mark.parametrize("case, data, expected", SEMANTIC, ids=[c[0] for c in SEMANTIC])
def test_a_semantic_problem_is_one_finding_naming_field_value_and_fix(case, data, expected):
    rendered = [f.render() for f in semantic_findings(ClusterSpec.model_validate(data))]
    assert any(line.startswith(expected) for line in rendered), rendered


def test_a_spec_without_people_needs_no_login_node():
    data = _with("node_groups.0.roles", ["controller"], _with("users", []))
    assert not [f for f in semantic_findings(ClusterSpec.model_validate(data)) if f.path == "node_groups"]


@pytest.mark.parametrize("name, uid", sorted(SERVICES.items()))
def test_the_service_accounts_of_the_common_role_are_taken(name, uid):
    """Read from the common role's defaults: a uid added there is refused here without a second list."""
    data = _with("users.0.uid", uid)
    rendered = [f.render() for f in semantic_findings(ClusterSpec.model_validate(data))]
    assert f"error: users[0].uid: {uid} is the uid of the service account '{name}' (common_service_accounts, whose " \
           "gid is its uid); use another uid" in rendered


def test_the_service_accounts_are_the_common_role_s():
    assert SERVICES == {"munge": 980, "slurm": 981}


def _with_directory(secret: Path, uri: str = "ldaps://ldap.example.org",
                    bind_dn: str = "cn=reader,dc=example,dc=org") -> dict:
    """The base spec with an LDAP directory bound with the password in `secret`."""
    return _with("directory", {"type": "ldap", "uri": uri, "base_dn": "dc=example,dc=org", "ca_file": "/etc/hostname",
                               "bind_dn": bind_dn, "bind_password_file": str(secret)})


def test_a_directory_of_the_right_shape_validates(tmp_path):
    secret = tmp_path / "bind.pw"
    secret.write_text("x")
    data = _with_directory(secret, uri="ldaps://ldap.example.org:636", bind_dn="cn=reader,ou=services,dc=example,dc=org")
    assert _findings(tmp_path, data) == []


@pytest.mark.parametrize("text", ["", "\n", " secret\n", "secret \n", "two\nlines\n", "tab\there", "cr\r\n",
                                  "nul\0"])
def test_a_bind_password_that_is_not_one_printable_line_is_refused_without_showing_it(tmp_path, text):
    secret = tmp_path / "bind.pw"
    secret.write_text(text)
    data = _with_directory(secret)
    rendered = [f.render() for f in semantic_findings(ClusterSpec.model_validate(data))]
    found = [line for line in rendered if line.startswith("error: directory.bind_password_file: does not hold one")]
    assert found and all(text.strip() not in line for line in found if text.strip()), rendered


@pytest.mark.parametrize("text", ["secret", "secret\n", "p@ss w0rd;#=%{{ x }}$(y)"])
def test_a_bind_password_of_one_printable_line_passes(tmp_path, text):
    secret = tmp_path / "bind.pw"
    secret.write_text(text)
    data = _with_directory(secret)
    assert _findings(tmp_path, data) == []


def test_the_spec_s_people_are_its_users_then_the_directory_s_people_of_accounting_users():
    """`provision users` asks the controller for these names: a directory person is in accounting.users only."""
    directory_people = [{"name": "dave", "accounts": ["physics"]}, {"name": "alice", "accounts": ["physics"]},
                        {"name": "dave", "accounts": ["ml"]}]  # a name also in users: or twice is refused by validate
    spec = ClusterSpec.model_validate(_with("accounting.users", directory_people))
    assert spec.people_names() == ["alice", "bob", "dave"]
    assert ClusterSpec.model_validate(_with("accounting", None)).people_names() == ["alice", "bob"]
