"""Issue 33, "a directory instead of a list", end to end on the shared sandbox cluster: people from a real LDAP server.

One node of the shared cluster (a storage node) runs OpenLDAP (Debian's slapd) with a CA and server certificate made
on this machine for the test, two people of the directory (dave 3001 and erin 3002, posixAccount + shadowAccount, each
with a posixGroup, and a group `team` of both) and a reader account: anonymous searches see nothing, so SSSD finds
people only with its bind DN and the password from the spec's file. The spec gets `directory:` (ldaps, the CA, the
bind DN and password file) and `accounting.users` (dave in physics), then one `up`:
- every node resolves dave and erin with their uids, groups and a home on the shared filesystem, after the local
  files (alice is still the local account of the users role);
- dave, at his first login on the login node, gets his home (0700, his own) on the shared filesystem and his `srun`
  runs as uid 3001 on every compute node under his association; alice's still works;
- the bind password is in the domain's SSSD file (root, 0640, group root) on the nodes and nowhere in the cluster's
  state on this machine (the inventory, the run artifacts, the spec copy);
- `deploy --check` then reports no change (the role is idempotent);
- with the spec restored, one more `up` takes SSSD back: no node resolves dave, sss is on no line of nsswitch.conf.
Added time, about 5 minutes on 2 cores: slapd's install and the directory's `up` (2.5), `deploy --check` (1), the
restoring `up` (1.2).
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import secrets
import subprocess
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import provision
from provision.spec.loader import load_spec
from provision.state import ClusterState

pytestmark = pytest.mark.e2e

BASE_DN = "dc=nodomain"  # the database Debian's slapd makes when installed without questions
READER = f"cn=reader,{BASE_DN}"
PEOPLE = {"dave": 3001, "erin": 3002}
TEAM_GID = 3000


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificates(host: str, address: str) -> dict[str, bytes]:
    """A CA and a server certificate for `host` (and its address) signed by it, with the server's key, as PEM."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("gpu-provision e2e CA")).issuer_name(_name("gpu-provision e2e CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder().subject_name(_name(host)).issuer_name(ca.subject)
              .public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName(host),
                                                          x509.IPAddress(ipaddress.ip_address(address))]),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return {"ca.pem": ca.public_bytes(pem), "server.pem": server.public_bytes(pem),
            "server.key": key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())}


CONFIG_LDIF = """\
dn: cn=config
changetype: modify
replace: olcTLSCACertificateFile
olcTLSCACertificateFile: /etc/ldap/e2e/ca.pem
-
replace: olcTLSCertificateFile
olcTLSCertificateFile: /etc/ldap/e2e/server.pem
-
replace: olcTLSCertificateKeyFile
olcTLSCertificateKeyFile: /etc/ldap/e2e/server.key

dn: olcDatabase={1}mdb,cn=config
changetype: modify
replace: olcAccess
olcAccess: {0}to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by * break
olcAccess: {1}to attrs=userPassword by self write by anonymous auth by * none
olcAccess: {2}to * by users read by * none
"""


def _data_ldif(password: str) -> str:
    """The reader, two people with their own groups, and a group of both (rfc2307: nis schema)."""
    entries = [f"dn: {READER}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: reader\n"
               f"userPassword: {password}\n",
               f"dn: ou=people,{BASE_DN}\nobjectClass: organizationalUnit\nou: people\n",
               f"dn: ou=groups,{BASE_DN}\nobjectClass: organizationalUnit\nou: groups\n",
               f"dn: cn=team,ou=groups,{BASE_DN}\nobjectClass: posixGroup\ncn: team\ngidNumber: {TEAM_GID}\n"
               + "".join(f"memberUid: {name}\n" for name in PEOPLE)]
    for name, uid in PEOPLE.items():
        entries.append(f"dn: uid={name},ou=people,{BASE_DN}\nobjectClass: account\nobjectClass: posixAccount\n"
                       f"objectClass: shadowAccount\nuid: {name}\ncn: {name}\nuidNumber: {uid}\ngidNumber: {uid}\n"
                       f"homeDirectory: /home/{name}\nloginShell: /bin/bash\n")
        entries.append(f"dn: cn={name},ou=groups,{BASE_DN}\nobjectClass: posixGroup\ncn: {name}\ngidNumber: {uid}\n")
    return "\n".join(entries)


SLAPD = ("mkdir -p /run/slapd && chown openldap:openldap /run/slapd && "
         "/usr/sbin/slapd -h '{services}' -u openldap -g openldap -F /etc/ldap/slapd.d")
STOP_SLAPD = "pkill -x slapd; for i in $(seq 50); do pgrep -x slapd >/dev/null || break; sleep 0.2; done; " \
             "! pgrep -x slapd >/dev/null"


def _start_ldap_server(cluster, node: str, files: dict[str, bytes], password: str) -> None:
    """slapd on `node` (the sandbox's service manager cannot run Debian's unit: started as its ExecStart would),
    TLS from `files`, the test's people. Reached on ldaps:// by name; ldapi:// for root on the node."""
    cluster.ssh(node, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slapd ldap-utils "
                ">/tmp/e2e-slapd-apt.log 2>&1 || { tail -20 /tmp/e2e-slapd-apt.log; exit 1; }; "
                f"systemctl disable slapd >/dev/null 2>&1; {STOP_SLAPD} && mkdir -p /etc/ldap/e2e", timeout=600)
    for name, data in files.items():
        cluster.ssh(node, f"cat > /etc/ldap/e2e/{name} && chown openldap:openldap /etc/ldap/e2e/{name} && "
                    f"chmod 0600 /etc/ldap/e2e/{name}", input=data.decode())
    cluster.ssh(node, SLAPD.format(services="ldapi:///"))
    cluster.ssh(node, "ldapmodify -Q -Y EXTERNAL -H ldapi:///", input=CONFIG_LDIF)
    # a second run on a cluster kept up (PROVISION_E2E_KEEP=1) finds the entries of the first: they go first
    cluster.ssh(node, f"ldapdelete -Q -c -r -Y EXTERNAL -H ldapi:/// {READER} ou=people,{BASE_DN} ou=groups,{BASE_DN}",
                check=False)
    cluster.ssh(node, "ldapadd -Q -Y EXTERNAL -H ldapi:///", input=_data_ldif(password))
    cluster.ssh(node, STOP_SLAPD)
    cluster.ssh(node, SLAPD.format(services="ldaps:/// ldapi:///"))
    whoami = (f"for i in $(seq 20); do LDAPTLS_CACERT=/etc/ldap/e2e/ca.pem ldapwhoami -x -H ldaps://{node} "
              f"-D {READER} -y /dev/stdin && exit 0; sleep 0.5; done; exit 1")
    assert cluster.ssh(node, whoami, input=password).stdout.strip() == f"dn:{READER}"  # TLS and the bind, as SSSD's


def _with_directory(spec_text: str, uri: str, ca: Path, password_file: Path) -> str:
    data = yaml.safe_load(spec_text)
    data["directory"] = {"type": "ldap", "uri": uri, "base_dn": BASE_DN, "ca_file": str(ca), "bind_dn": READER,
                         "bind_password_file": str(password_file)}
    data["accounting"]["users"] = [{"name": "dave", "accounts": ["physics"]}]
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture(scope="module")
def directory(slurm_cluster, tmp_path_factory):
    """The LDAP server up, the spec with the directory, one `up`; the spec restored (and `up` again) at the end when
    test_taking_the_directory_out_takes_sssd_back did not."""
    server = next(n for n in slurm_cluster.info.with_role("storage"))
    folder = tmp_path_factory.mktemp("directory")
    files = _certificates(server.name, server.address)
    (folder / "ca.pem").write_bytes(files["ca.pem"])
    password = "e2e-" + secrets.token_urlsafe(18)
    (folder / "bind.pw").write_text(password + "\n")
    (folder / "bind.pw").chmod(0o400)
    _start_ldap_server(slurm_cluster, server.name, files, password)
    original = slurm_cluster.spec_path.read_text()
    slurm_cluster.spec_path.write_text(_with_directory(original, f"ldaps://{server.name}", folder / "ca.pem",
                                                       folder / "bind.pw"))
    state = {"original": original, "restored": False, "password": password, "server": server.name}
    try:
        provision("up", str(slurm_cluster.spec_path), "--skip-certify", "--quiet", timeout=1500)
        yield state
    finally:
        if not state["restored"]:
            slurm_cluster.spec_path.write_text(original)
            provision("up", str(slurm_cluster.spec_path), "--skip-certify", "--quiet", timeout=1500, check=False)
        slurm_cluster.ssh(server.name, STOP_SLAPD, check=False)


def _passwd(cluster, node: str, name: str, source: str = "") -> list[str]:
    found = cluster.ssh(node, f"getent {source} passwd {name}", check=False)
    return found.stdout.strip().split(":") if found.returncode == 0 else []


def test_every_node_resolves_the_directory_s_people_after_its_local_accounts(slurm_cluster, directory):
    for node in slurm_cluster.info.nodes:
        for name, uid in PEOPLE.items():
            entry = _passwd(slurm_cluster, node.name, name)
            assert entry[2:4] == [str(uid), str(uid)] and entry[5] == f"/shared/home/{name}", (node.name, entry)
        groups = slurm_cluster.ssh(node.name, "id -Gn dave").stdout.split()
        assert sorted(groups) == ["dave", "team"], (node.name, groups)
        assert _passwd(slurm_cluster, node.name, "alice", "-s files")[2] == "2001"  # the users role's, from the files
        lines = slurm_cluster.ssh(node.name, "grep -E '^(passwd|group|shadow):' /etc/nsswitch.conf").stdout
        assert [line.split()[1] for line in lines.splitlines()] == ["files"] * 3, lines  # local files answer first
        assert all(line.split()[-1] == "sss" for line in lines.splitlines()), lines


def test_a_directory_user_gets_a_home_at_first_login_and_runs_jobs_on_every_compute_node(slurm_cluster, directory):
    nodes = slurm_cluster.compute
    out = slurm_cluster.ssh(slurm_cluster.login, f"su - dave -c \"cd && pwd && srun -N{len(nodes)} sh -c "
                            "'echo \\$(hostname) \\$(id -u) \\$(id -g)'\"", timeout=180).stdout.splitlines()
    assert "/shared/home/dave" in out, out  # pam_mkhomedir may say that it made it, first
    rows = [line.split() for line in out if line.split()[:1] and line.split()[0] in nodes]
    assert sorted(rows) == sorted([node, "3001", "3001"] for node in nodes), out
    for node in (slurm_cluster.controller, *nodes):  # made once, on the shared filesystem
        assert slurm_cluster.ssh(node, "stat -c '%u %g %a' /shared/home/dave").stdout.split() == ["3001", "3001", "700"]
    accounts = slurm_cluster.ssh(slurm_cluster.controller, "sacctmgr -nP show association user=dave "
                                 "format=account,user").stdout.split()
    assert accounts == ["physics|dave"], accounts


def test_local_users_still_log_in_and_run_jobs(slurm_cluster, directory, e2e_user_keys):
    nodes = slurm_cluster.compute
    out = slurm_cluster.ssh_as("alice", e2e_user_keys["alice"], slurm_cluster.login,
                               f"srun -N{len(nodes)} id -u", timeout=120).stdout.split()
    assert out == ["2001"] * len(nodes), out


def test_the_bind_password_is_in_the_domain_file_on_the_nodes_only(slurm_cluster, directory):
    password, domain = directory["password"], "/etc/sssd/conf.d/gpu-provision-ldap.conf"
    for node in slurm_cluster.info.nodes:
        shown = slurm_cluster.ssh(node.name, f"stat -c '%U %G %a' {domain} /etc/sssd/sssd.conf && "
                                  f"grep -c '^ldap_default_authtok = ' {domain} && "
                                  "grep -c authtok /etc/sssd/sssd.conf", check=False).stdout.split()
        assert shown == ["root", "root", "640", "root", "root", "640", "1", "0"], (node.name, shown)
    state = ClusterState.for_spec(load_spec(slurm_cluster.spec_path)).path
    # sandbox/nodes/ holds the nodes' own root filesystems (their /etc/sssd, SSSD's cache), not this machine's state
    found = subprocess.run(["grep", "-rlF", "--exclude-dir=nodes", password, str(state)], capture_output=True,
                           text=True)
    assert found.returncode == 1 and found.stdout == "", found.stdout  # 1: no file holds it
    assert (state / "sandbox" / "nodes").is_dir()  # what was left out is the nodes' filesystems, and only that


def test_a_second_deploy_would_change_nothing(slurm_cluster, directory):
    result = provision("deploy", str(slurm_cluster.spec_path), "--check", "--json", check=False, timeout=900)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-2000:])
    assert json.loads(result.stdout)["changed_hosts"] == []


def test_taking_the_directory_out_takes_sssd_back(slurm_cluster, directory):
    slurm_cluster.spec_path.write_text(directory["original"])
    directory["restored"] = True
    provision("up", str(slurm_cluster.spec_path), "--skip-certify", "--quiet", timeout=1500)
    for node in slurm_cluster.info.nodes:
        assert _passwd(slurm_cluster, node.name, "dave") == [], node.name
        assert slurm_cluster.ssh(node.name, "grep -c sss /etc/nsswitch.conf", check=False).stdout.strip() == "0"
        assert slurm_cluster.ssh(node.name, "ls /etc/sssd/sssd.conf /etc/sssd/conf.d/gpu-provision-ldap.conf "
                                 "/etc/sssd/gpu-provision-ldap-ca.pem", check=False).stdout == ""
    assert _passwd(slurm_cluster, slurm_cluster.login, "alice")[2] == "2001"
