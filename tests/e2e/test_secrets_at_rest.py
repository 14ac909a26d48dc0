"""Issue 31 end to end on the shared sandbox cluster: a deploy and a certify leave no secret of theirs anywhere in the
cluster's state directory outside secrets/ and ssh/ (cloud credentials from the environment, the munge key, the
accounting database password, the cluster's private key); and deploy refuses a node whose host key changed, without
touching known_hosts. The known_hosts entry is restored in `finally`, so the other tests keep working."""
from __future__ import annotations

import base64
import os
import secrets
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import provision
from provision.deploy.ansible_cfg import control_path_dir
from provision.spec.loader import load_spec
from provision.state import ClusterState

pytestmark = pytest.mark.e2e

KEPT_APART = ("secrets", "ssh")  # where the secrets live, 0700; everything else must hold none
# A sandbox node's disk (its overlay's upper, work and merged root) is the node itself: the munge key and slurmdbd.conf
# belong there, as on a real machine's disk. Everything else under the node's directory (boot script, console log,
# pid files) is ours and is searched.
NODE_DISK = ("upper", "work", "root")


def on_a_node_disk(relative: Path) -> bool:
    parts = relative.parts
    return len(parts) >= 4 and parts[:2] == ("sandbox", "nodes") and parts[3] in NODE_DISK


def cluster_state(cluster) -> ClusterState:
    return ClusterState.for_spec(load_spec(cluster.spec_path))


def credentials() -> dict[str, str]:
    """Unique AWS values for one run, never seen anywhere before."""
    return {name: f"{name.lower()}-{secrets.token_hex(20)}"
            for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}


def secret_forms(state: ClusterState) -> dict[str, bytes]:
    """Every secret of the cluster in the forms a leak would take: raw, base64, hex; the private key whole, its
    base64 body joined, and each line of the body past the first two (those are the same in every OpenSSH key)."""
    munge = state.secrets.munge_key.read_bytes()
    password = state.secrets.db_password.read_bytes().strip()
    grafana = state.secrets.grafana_password.read_bytes().strip()
    private = state.ssh_key_path.read_bytes()
    body = [line for line in private.splitlines() if line and not line.startswith(b"-----")]
    forms = {"munge key": munge, "munge key (base64)": base64.b64encode(munge), "munge key (hex)": munge.hex().encode(),
             "database password": password, "database password (base64)": base64.b64encode(password),
             "Grafana's admin password": grafana,
             "private key": private, "private key (body)": b"".join(body)}
    forms.update({f"private key (line {n})": line for n, line in enumerate(body[2:], 3) if len(line) >= 20})
    return forms


def leaks(state: ClusterState, needles: dict[str, bytes]) -> dict[str, list[str]]:
    """{file under the state directory, outside secrets/, ssh/ and the nodes' disks: [names of the secrets it holds]}."""
    found = {}
    for directory, subdirectories, files in os.walk(state.path):
        here = Path(directory).relative_to(state.path)
        subdirectories[:] = [name for name in subdirectories
                             if not (here == Path() and name in KEPT_APART) and not on_a_node_disk(here / name)]
        for name in files:
            path = Path(directory) / name
            if path.is_symlink() or not stat.S_ISREG(path.lstat().st_mode):
                continue
            data = path.read_bytes()
            hits = [secret for secret, needle in needles.items() if needle in data]
            if hits:
                found[str(here / name)] = hits
    return found


def test_deploy_and_certify_leave_no_secret_outside_secrets_and_ssh(slurm_cluster):
    state = cluster_state(slurm_cluster)
    aws = credentials()
    env = {**os.environ, **aws}
    deployed = provision("deploy", str(slurm_cluster.spec_path), "--json", check=False, timeout=900, env=env)
    assert deployed.returncode == 0, deployed.stdout[-3000:] + deployed.stderr[-3000:]
    certified = provision("certify", str(slurm_cluster.spec_path), "--json", check=False, timeout=600, env=env)
    assert certified.stdout.strip(), certified.stderr  # its verdict is test_certify's business; its files are ours
    needles = {**{name: value.encode() for name, value in aws.items()}, **secret_forms(state)}
    assert len(list(state.runs_dir.rglob("command"))) >= 1  # the files where the environment used to land are there
    assert leaks(state, needles) == {}


def wrong_key_line(line: str) -> str:
    """The same host names and key type with a freshly made key: the line of an impostor."""
    names, key_type, _ = line.split(maxsplit=2)
    kind = {"ssh-ed25519": "ed25519", "ssh-rsa": "rsa"}.get(key_type, "ecdsa")
    with tempfile.TemporaryDirectory() as scratch:
        key = Path(scratch) / "impostor"
        subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(key)], check=True, timeout=60)
        _, public, *_ = key.with_suffix(".pub").read_text().split()
    return f"{names} {key_type} {public}"


def close_control_masters(state: ClusterState) -> None:
    """End the ssh masters Ansible keeps for 120 s: a new login must check the host key, not reuse a connection
    verified before."""
    directory = control_path_dir(state)
    for socket in directory.iterdir():
        if stat.S_ISSOCK(socket.lstat().st_mode):
            subprocess.run(["ssh", "-o", f"ControlPath={socket}", "-O", "exit", "node"], capture_output=True,
                           timeout=30)


def test_deploy_refuses_a_node_whose_host_key_changed(slurm_cluster):
    node = slurm_cluster.compute[0]
    address = slurm_cluster.info.node(node).address
    known_hosts = slurm_cluster.info.known_hosts_path
    original = known_hosts.read_bytes()
    lines = original.decode().splitlines()
    ours = [i for i, line in enumerate(lines) if address in line.split()[0].split(",")]
    assert ours, f"{address} has no line in {known_hosts}"
    for index in ours:
        lines[index] = wrong_key_line(lines[index])
    tampered = ("\n".join(lines) + "\n").encode()
    try:
        known_hosts.write_bytes(tampered)
        close_control_masters(cluster_state(slurm_cluster))
        rc, result = slurm_cluster.deploy("--limit", node)
        assert rc != 0 and not result["ok"]
        (host,) = [h for h in result["hosts"] if h["host"] == node]
        assert host["status"] == "unreachable", host
        assert host["message"].startswith(f"host key changed for {address}"), host["message"]
        assert known_hosts.read_bytes() == tampered  # nothing recorded, nothing replaced
    finally:
        known_hosts.write_bytes(original)
    slurm_cluster.ssh(node, "true")  # the entry is back: the next tests log in as before
