"""The sandbox provider on this machine: 4 real nodes over real SSH, faults, and a teardown that leaves nothing.

Its own cluster (sbtest on 10.98.0.0/24), so it never meets the shared Slurm cluster of the other e2e tests.
Tests run in file order; the teardown test comes last."""
from __future__ import annotations

import os
import sys
import socket
import subprocess
import time
from pathlib import Path

import pytest

from provision.cluster.lifecycle import get_provider
from provision.errors import SandboxError
from provision.providers.sandbox import faults, layout, processes, record
from provision.providers.sandbox import node as sandbox_node
from provision.records import ClusterInfo
from provision.spec.model import ClusterSpec
from provision.spec.reader import parse_yaml

pytestmark = pytest.mark.e2e

SPEC = """\
name: sbtest
provider:
  type: sandbox
  subnet: 10.98.0.0/24
node_groups:
  - name: sbctl
    roles: [controller]
    count: 1
  - name: sbnode
    roles: [compute]
    count: 3
"""

UNIT = """\
[Unit]
Description=sandbox e2e probe service
[Service]
ExecStart=/usr/bin/python3 -m http.server --bind 0.0.0.0 8080
[Install]
WantedBy=multi-user.target
"""


@pytest.fixture(scope="module")
def provider():
    """The sbtest provider; whatever a test leaves running is removed at the end."""
    spec = ClusterSpec.model_validate(parse_yaml(SPEC, "sbtest.yaml")[0])
    sandbox = get_provider(spec)
    sandbox.destroy()  # an interrupted earlier run must not leak into this one
    yield sandbox
    sandbox.destroy()


@pytest.fixture(scope="module")
def cluster(provider) -> ClusterInfo:
    """`up` of the 4 nodes (module-scoped: the tests below share it)."""
    return provider.create()


def ssh(info: ClusterInfo, address: str, command: str, *, known_hosts: Path | None = None, check: bool = True,
        input: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Real ssh with host key checking on."""
    argv = ["ssh", "-i", str(info.ssh_key_path), "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={known_hosts or info.known_hosts_path}", "-o", "BatchMode=yes",
            "-o", "ConnectTimeout=5", f"root@{address}", command]
    result = subprocess.run(argv, capture_output=True, timeout=timeout, input=input)
    if check and result.returncode != 0:
        raise AssertionError(f"{address}: {command} -> {result.returncode}\n{result.stderr.decode()}")
    return result


def out(result: subprocess.CompletedProcess) -> str:
    return result.stdout.decode().strip()


def port_open(address: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def target(provider) -> tuple[Path, str]:
    return provider.state.root, provider.state.cluster


def test_up_gives_four_running_nodes_with_the_sandbox_facts(cluster):
    assert [n.name for n in cluster.nodes] == ["sbctl01", "sbnode01", "sbnode02", "sbnode03"]
    assert [n.address for n in cluster.nodes] == ["10.98.0.10", "10.98.0.11", "10.98.0.12", "10.98.0.13"]
    assert all(n.state == "running" and n.provider_id for n in cluster.nodes)
    assert cluster.sandbox and cluster.provider == "sandbox" and cluster.ssh_user == "root"
    assert cluster.vars == {"provision_apt_proxy": "http://10.98.0.1:3142", "provision_sandbox_bridge_address":
                            "10.98.0.1"}
    assert (cluster.ssh_key_path.stat().st_mode & 0o777) == 0o600


def test_every_node_answers_ssh_with_its_own_checked_host_key(cluster):
    names = [out(ssh(cluster, n.address, "hostname")) for n in cluster.nodes]
    assert names == [n.name for n in cluster.nodes]
    known = cluster.known_hosts_path.read_text().splitlines()
    assert sorted(line.split()[0] for line in known) == sorted(f"{n.name},{n.address}" for n in cluster.nodes)
    assert len({line.split()[2] for line in known}) == len(cluster.nodes)  # one host key per node


def test_an_unknown_host_key_is_refused(cluster, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    result = ssh(cluster, cluster.nodes[0].address, "true", known_hosts=empty, check=False)
    assert result.returncode == 255 and b"Host key verification failed" in result.stderr


def test_nodes_are_separate_machines(cluster):
    first, second = cluster.nodes[0].address, cluster.nodes[1].address
    assert out(ssh(cluster, first, "cat /proc/1/comm")) == "bash"
    assert out(ssh(cluster, first, "test -d /run/systemd/system && echo yes")) == "yes"
    ssh(cluster, first, "echo only-here > /root/marker")
    assert ssh(cluster, second, "test -e /root/marker", check=False).returncode == 1
    assert out(ssh(cluster, first, "ip -4 -o addr show dev eth0")).split()[3] == f"{first}/24"


def test_nodes_reach_each_other(cluster):
    source = cluster.nodes[0]
    for other in cluster.nodes[1:]:
        ssh(cluster, source.address, f"ping -c1 -W2 {other.address} >/dev/null")
        ssh(cluster, source.address, f"timeout 3 bash -c 'exec 3<>/dev/tcp/{other.address}/22'")


def test_apt_install_goes_through_the_proxy(cluster, provider):
    node = cluster.nodes[1]
    conf = out(ssh(cluster, node.address, "cat /etc/apt/apt.conf.d/01sandbox-proxy"))
    assert conf.splitlines()[0] == f'Acquire::http::Proxy "{cluster.vars["provision_apt_proxy"]}";'
    assert 'Acquire::http::Pipeline-Depth "0";' in conf
    ssh(cluster, node.address, "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hello",
        timeout=300)
    assert out(ssh(cluster, node.address, "hello")) == "Hello, world!"
    log = (layout.proxy_dir(provider.state) / "log" / "apt-cacher.log").read_text()
    assert f"|{node.address}|" in log and "hello_" in log


def test_ansible_sees_systemd_and_can_set_the_hostname(cluster):
    ansible = Path(sys.executable).parent / "ansible"  # beside the interpreter running the tests
    node = cluster.nodes[2]
    env = {**os.environ, "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
           "ANSIBLE_SSH_ARGS": f"-o UserKnownHostsFile={cluster.known_hosts_path} -o StrictHostKeyChecking=yes"}
    base = [str(ansible), "all", "-i", f"{node.address},", "-u", "root", "--private-key", str(cluster.ssh_key_path)]
    facts = subprocess.run([*base, "-m", "setup", "-a", "filter=ansible_service_mgr"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert '"ansible_service_mgr": "systemd"' in facts.stdout, facts.stdout + facts.stderr
    renamed = subprocess.run([*base, "-m", "hostname", "-a", f"name={node.name}-x"], capture_output=True, text=True,
                             env=env, timeout=120)
    assert renamed.returncode == 0, renamed.stdout + renamed.stderr
    assert out(ssh(cluster, node.address, "hostname; cat /etc/hostname")) == f"{node.name}-x\n{node.name}-x"
    ssh(cluster, node.address, f"hostnamectl set-hostname {node.name}")


def test_enabled_service_comes_back_after_a_node_restart(cluster, provider):
    node = cluster.nodes[3]
    ssh(cluster, node.address, f"cat > /etc/systemd/system/sbprobe.service <<'EOF'\n{UNIT}EOF\n"
                               "systemctl enable sbprobe && systemctl start sbprobe")
    wait_for(lambda: port_open(node.address, 8080), 20, "the probe service")
    faults.stop_node(*target(provider), node.name)
    assert not port_open(node.address, 22)
    assert provider.describe().node(node.name).state == "stopped"
    faults.start_node(*target(provider), node.name)
    assert provider.describe().node(node.name).state == "running"
    wait_for(lambda: port_open(node.address, 8080), 30, "the probe service after the restart")
    assert out(ssh(cluster, node.address, "systemctl is-active sbprobe")) == "active"
    faults.stop_service(*target(provider), node.name, "sbprobe")
    assert out(ssh(cluster, node.address, "systemctl is-active sbprobe", check=False)) != "active"
    assert not port_open(node.address, 8080)


def test_cut_and_slow_links_then_restore(cluster, provider):
    node = cluster.nodes[2]

    def transfer() -> float:
        start = time.monotonic()
        got = ssh(cluster, node.address, "head -c 300000 /dev/zero").stdout
        sent = ssh(cluster, node.address, "wc -c", input=b"x" * 300000)
        assert len(got) == 300000 and out(sent) == "300000"
        return time.monotonic() - start

    normal = transfer()
    faults.slow_link(*target(provider), node.name, rate="2mbit")
    try:
        slowed = transfer()  # 600 kB at 2 Mbit/s: at least 2.4 s
    finally:
        faults.restore_link(*target(provider), node.name)
    assert slowed > 2.0 > normal
    faults.cut_link(*target(provider), node.name)
    try:
        assert not port_open(node.address, 22, timeout=2)
    finally:
        faults.restore_link(*target(provider), node.name)
    assert out(ssh(cluster, node.address, "hostname")) == node.name


def test_up_twice_is_the_same_cluster(cluster, provider):
    known_hosts = cluster.known_hosts_path.read_text()
    before = provider.describe()
    again = provider.create()
    assert again == before  # same nodes, addresses, init PIDs (nothing restarted), vars
    assert cluster.known_hosts_path.read_text() == known_hosts
    assert out(ssh(cluster, cluster.nodes[0].address, "cat /root/marker")) == "only-here"


def test_up_starts_a_node_that_is_down(cluster, provider):
    node = cluster.nodes[1]
    faults.stop_node(*target(provider), node.name)
    info = provider.create()
    assert info.node(node.name).state == "running"
    assert out(ssh(cluster, node.address, "hello")) == "Hello, world!"  # its disk survived


def test_down_leaves_nothing_behind_and_down_twice_is_fine(cluster, provider):
    rec = record.load(provider.state)
    netns = {n.netns for n in rec.nodes.values()}
    veths = {n.veth for n in rec.nodes.values()}
    procs = [p for n in rec.nodes.values() for p in (n.init, n.launcher) if p] + [rec.proxy]
    inodes = {i for n in rec.nodes.values() for i in n.namespaces.values()}
    assert all(processes.running(n.init) for n in rec.nodes.values())

    teardown = provider.destroy()
    assert teardown.leftovers == []

    # namespaces: no named netns, and no process left in any node namespace (pid, mount, net, ...)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not netns & {line.split()[0] for line in listed.splitlines() if line.strip()}
    in_ns = [pid for pid in os.listdir("/proc") if pid.isdigit()
             and any(processes.namespace_inode(int(pid), kind) in inodes for kind in processes.NAMESPACE_KINDS)]
    assert in_ns == []
    # mounts: nothing under the cluster's directory or on its netns files
    mountinfo = Path("/proc/self/mountinfo").read_text()
    assert str(provider.state.path) not in mountinfo
    assert not any(f"/run/netns/{name} " in mountinfo for name in netns)
    # processes: every recorded PID is gone (a reused PID would have another start time)
    assert [p for p in procs if processes.is_ours(p)] == []
    # links: no host veth end
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert not any(f" {veth}:" in links or f" {veth}@" in links for veth in veths)
    # bridge
    assert subprocess.run(["ip", "link", "show", "dev", rec.bridge], capture_output=True).returncode != 0

    assert record.load(provider.state) is None
    assert provider.destroy().leftovers == []
    assert {n.state for n in provider.describe().nodes} == {"absent"}


def test_a_failed_up_leaves_a_record_that_down_clears(monkeypatch, provider):
    spec = ClusterSpec.model_validate(parse_yaml(SPEC.replace("sbtest", "sbfail").replace("count: 3", "count: 1"),
                                                 "sbfail.yaml")[0])
    failing = get_provider(spec)

    def sshd_never_answers(nodes, timeout=60.0):
        raise SandboxError("sshd did not answer (injected)")

    monkeypatch.setattr(sandbox_node, "wait_ssh", sshd_never_answers)
    try:
        with pytest.raises(SandboxError, match="injected"):
            failing.create()
        rec = record.load(failing.state)
        assert rec is not None and processes.running(rec.proxy)
        assert all(processes.running(n.init) for n in rec.nodes.values()) and len(rec.nodes) == 2
        assert subprocess.run(["ip", "link", "show", "dev", rec.bridge], capture_output=True).returncode == 0
    finally:
        monkeypatch.undo()
        teardown = failing.destroy()
    assert teardown.leftovers == []
    assert not [p for p in [rec.proxy, *(n.init for n in rec.nodes.values())] if processes.is_ours(p)]
    assert subprocess.run(["ip", "link", "show", "dev", rec.bridge], capture_output=True).returncode != 0
