"""Preflight refuses an unsupported OS on its node and, with Slurm from the OS archive, a cluster whose Slurm nodes'
releases ship different Slurm series; every node's OS is reported. The SSH adaptor is faked (it is the boundary
to paramiko); the probe's answers are what probe.sh prints."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from provision import preflight
from provision.node.platforms import Platform, supported
from provision.preflight.judge import slurm_series
from provision.records import ClusterInfo, NodeInfo

BASE = ("uid=0\nprivilege=yes\nkernel=6.1.0-18-amd64\nheaders=installable\ndisk_root_kb=52428800\n"
        "disk_var_kb=52428800\npython3=3.11\ngpu_source=lspci\ngpus=\nrdma=\nresolves=yes\nhostname=h\ncpus=4\n"
        "boards=1\nsockets_per_board=1\ncores_per_socket=4\nthreads_per_core=1\nmemory_mb=16000\ngpu_device_files=0\n")
OS = {"debian12": "os_id=debian\nos_version=12\nos_name=Debian GNU/Linux\nos_pretty=Debian GNU/Linux 12 (bookworm)\n",
      "debian13": "os_id=debian\nos_version=13\nos_name=Debian GNU/Linux\nos_pretty=Debian GNU/Linux 13 (trixie)\n",
      "rocky9": "os_id=rocky\nos_version=9.4\nos_name=Rocky Linux\nos_pretty=Rocky Linux 9.4 (Blue Onyx)\n"}
PLATFORM = {p.key: p for p in supported()}


def _cluster(layout: list[tuple[str, tuple[str, ...], str]]) -> tuple[ClusterInfo, dict[str, str]]:
    """Nodes (name, roles, OS) at 10.0.0.10 upwards, and what each address's probe answers."""
    nodes = tuple(NodeInfo(name=name, group=name.rstrip("0123456789"), roles=roles, address=f"10.0.0.{10 + i}")
                  for i, (name, roles, _) in enumerate(layout))
    answers = {node.address: BASE + OS[os_name] for node, (_, _, os_name) in zip(nodes, layout)}
    return ClusterInfo(name="t", provider="static", nodes=nodes), answers


@pytest.fixture
def fake_ssh(monkeypatch):
    """Every node answers its probe; `answers` maps an address to the facts its probe prints."""
    answers: dict[str, str] = {}

    class Client(SimpleNamespace):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def connect(target, accept_new_host_keys=False, timeout=10.0):
        return Client(host=target.host)

    def run(client, command, timeout=60.0):
        return 0, (f"{time.time():.6f}\n" if command.startswith("date") else answers[client.host]), ""

    monkeypatch.setattr(preflight.ssh, "connect", connect)
    monkeypatch.setattr(preflight.ssh, "run", run)
    return answers


MIXED = [("ctl01", ("controller",), "debian13"), ("compute01", ("compute",), "debian12"),
         ("gpu01", ("compute",), "debian13"), ("store01", ("storage",), "debian12")]


def test_every_node_reports_its_os(fake_ssh):
    cluster, answers = _cluster(MIXED[:1] + [("rocky01", ("compute",), "rocky9")])
    fake_ssh.update(answers)
    report = preflight.run_preflight(cluster)
    assert {n.name: n.os for n in report.nodes} == {"ctl01": "Debian 13 (trixie)", "rocky01": "Rocky Linux 9.4"}
    assert [n["os"] for n in report.as_dict()["nodes"]] == ["Debian 13 (trixie)", "Rocky Linux 9.4"]


def test_an_unsupported_os_fails_its_node_with_the_supported_list(fake_ssh):
    cluster, answers = _cluster(MIXED[:1] + [("rocky01", ("compute",), "rocky9")])
    fake_ssh.update(answers)
    report = preflight.run_preflight(cluster)
    assert report.failed_nodes == ["rocky01"] and report.verdict == "fail"
    assert report.nodes[1].check("os").detail == (
        "gpu-provision supports Debian 12, Debian 13 (tested); Ubuntu 22.04, Ubuntu 24.04 (untested); "
        "rocky01 runs Rocky Linux 9.4")


def test_slurm_nodes_shipping_two_slurm_series_fail_with_distribution_slurm(fake_ssh):
    cluster, answers = _cluster(MIXED)
    fake_ssh.update(answers)
    report = preflight.run_preflight(cluster)
    assert report.failed_nodes == ["compute01"]  # store01 runs no Slurm; ctl01 is the reference
    assert report.nodes[1].check("slurm_series").detail.startswith(
        "ctl01,gpu01 run Debian 13 (Slurm 24.11), compute01 Debian 12 (Slurm 22.05): one Slurm major per cluster; ")


def test_a_site_slurm_repository_may_serve_several_releases(fake_ssh):
    cluster, answers = _cluster(MIXED)
    fake_ssh.update(answers)
    report = preflight.run_preflight(cluster, slurm_source="repository")
    assert report.failed_nodes == [] and all(n.check("slurm_series") is None for n in report.nodes)


def _p(key: str) -> Platform:
    return PLATFORM[key]


@pytest.mark.parametrize("nodes, reference, failed, detail", [
    ({"ctl01": _p("Debian-13"), "gpu01": _p("Debian-13")}, "ctl01", [], None),
    ({"compute01": _p("Debian-12"), "gpu01": _p("Debian-13")}, "compute01", ["gpu01"],
     "compute01 runs Debian 12 (Slurm 22.05), gpu01 Debian 13 (Slurm 24.11): one Slurm major per cluster"),
    # the controller did not answer: the most common series is the reference
    ({"n01": _p("Debian-12"), "n02": _p("Debian-12"), "n03": _p("Ubuntu-24")}, "ctl01", ["n03"],
     "n[01-02] run Debian 12 (Slurm 22.05), n03 Ubuntu 24.04 (Slurm 23.11)"),
    ({"ctl01": _p("Ubuntu-22"), "n01": _p("Debian-12"), "n02": _p("Debian-13")}, "ctl01", ["n01", "n02"],
     "ctl01 runs Ubuntu 22.04 (Slurm 21.08), n01 Debian 12 (Slurm 22.05), n02 Debian 13 (Slurm 24.11)"),
])
def test_one_slurm_series_per_cluster(nodes, reference, failed, detail):
    checks = slurm_series(nodes, reference)
    assert sorted(checks) == failed
    assert all(c.verdict == "fail" and c.detail.startswith(detail) for c in checks.values())
