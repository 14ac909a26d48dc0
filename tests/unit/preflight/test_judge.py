"""Preflight verdicts from node facts, table-driven."""
from __future__ import annotations

import pytest

from provision.preflight.judge import clock_check, judge, parse_facts
from provision.records import NodeInfo

HEALTHY = ("uid=0\nprivilege=yes\nos_id=debian\nos_version=12\nos_name=Debian GNU/Linux\n"
           "os_pretty=Debian GNU/Linux 12 (bookworm)\nkernel=6.1.0-18-amd64\nheaders=installable\n"
           "disk_root_kb=52428800\ndisk_var_kb=52428800\npython3=3.11\ngpu_source=lspci\ngpus=\nrdma=\n"
           "resolves=yes\nhostname=n1\ncpus=64\nboards=1\nsockets_per_board=2\ncores_per_socket=16\n"
           "threads_per_core=2\nmemory_mb=515000\ngpu_device_files=0\n")
CPU = NodeInfo(name="n1", group="g", roles=("compute",))
GPU = NodeInfo(name="g1", group="g", roles=("compute",), gpu_model="H100-SXM", gpu_count=2,
               interconnect="infiniband", interconnect_nics=2)


def _verdicts(node: NodeInfo, text: str) -> dict[str, tuple[str, str]]:
    return {c.id: (c.verdict, c.detail) for c in judge(node, parse_facts(text))}


def test_healthy_cpu_node_passes_everything_applicable():
    verdicts = _verdicts(CPU, HEALTHY)
    assert {k: v[0] for k, v in verdicts.items()} == {
        "privilege": "pass", "os": "pass", "kernel_headers": "pass", "disk_root": "pass", "disk_var": "pass",
        "python3": "pass", "resources": "pass", "gpus": "n/a", "fabric": "n/a", "hostname": "pass"}
    assert verdicts["resources"][1] == "64 CPUs (2 sockets x 16 cores x 2 threads), 515000 MiB"


BIG = NodeInfo(name="n1", group="big", roles=("compute",), cpus=128, real_memory_mb=600000)


@pytest.mark.parametrize("node, change, check, verdict, detail", [
    (BIG, ("", ""), "resources", "fail", "node group 'big' cpus: 128 asked, 64 found on n1; node group 'big' "
                                         "real_memory_mb: 600000 asked, 515000 found on n1; lower the value"),
    (CPU, ("cpus=64\n", ""), "resources", "fail", "could not read the CPU topology"),
    (CPU, ("memory_mb=515000", "memory_mb=0"), "resources", "fail", "could not read the CPU topology"),
    (CPU, ("privilege=yes", "privilege=no"), "privilege", "fail", "neither root nor passwordless sudo"),
    (CPU, ("", ""), "os", "pass", "Debian 12 (bookworm), Slurm 22.05"),
    (CPU, ("os_version=12", "os_version=13"), "os", "pass", "Debian 13 (trixie), Slurm 24.11"),
    (CPU, ("os_version=12", "os_version=11"), "os", "fail",
     "gpu-provision supports Debian 12, Debian 13 (tested); Ubuntu 22.04, Ubuntu 24.04 (untested); n1 runs Debian "
     "GNU/Linux 11"),
    (CPU, ("os_id=debian\nos_version=12\nos_name=Debian GNU/Linux", "os_id=rocky\nos_version=9.4\nos_name=Rocky Linux"),
     "os", "fail", "(untested); n1 runs Rocky Linux 9.4"),
    (CPU, ("os_id=debian\nos_version=12\nos_name=Debian GNU/Linux\n", ""), "os", "fail",
     "n1 runs Debian GNU/Linux 12 (bookworm)"),
    (CPU, ("os_id=debian\nos_version=12", "os_id=ubuntu\nos_version=24.04"), "os", "warn",
     "Ubuntu 24.04 (noble), Slurm 23.11: supported but untested"),
    (CPU, ("headers=installable", "headers=missing"), "kernel_headers", "warn", "only GPU nodes need them"),
    (GPU, ("headers=installable", "headers=missing"), "kernel_headers", "fail", "cannot be built for the running"),
    (CPU, ("disk_root_kb=52428800", "disk_root_kb=1048576"), "disk_root", "fail", "1.0 GiB free; need at least 2"),
    (CPU, ("disk_var_kb=52428800", "disk_var_kb=5242880"), "disk_var", "warn", "/var: 5.0 GiB free"),
    (CPU, ("python3=3.11", "python3=none"), "python3", "fail", "python3 is missing"),
    (GPU, ("gpus=", "gpus=2330,"), "gpus", "fail", "1 x H100-SXM (lspci); the spec expects 2 x H100-SXM"),
    (GPU, ("gpus=", "gpus=26b9,26b9,"), "gpus", "fail", "2 x L40S (lspci); the spec expects H100-SXM"),
    (GPU, ("gpus=", "gpus=2330,2330,"), "gpus", "pass", "2 x H100-SXM (lspci)"),
    (CPU, ("gpus=", "gpus=2330,"), "gpus", "fail", "the spec expects 0 x none"),
    (GPU, ("rdma=", "rdma=mlx5_0:mlx5_core,"), "fabric", "fail", "1 infiniband devices; the spec expects 2"),
    (GPU, ("rdma=", "rdma=mlx5_0:mlx5_core,mlx5_1:mlx5_core,"), "fabric", "pass", "2 infiniband devices"),
    (CPU, ("resolves=yes", "resolves=no"), "hostname", "warn", "does not resolve yet"),
])
def test_each_bad_fact_gives_its_verdict(node, change, check, verdict, detail):
    got_verdict, got_detail = _verdicts(node, HEALTHY.replace(*change))[check]
    assert got_verdict == verdict and detail in got_detail, got_detail


@pytest.mark.parametrize("offset, verdict", [(None, "n/a"), (0.2, "pass"), (-2.5, "warn"), (31.0, "fail"),
                                             (-45.0, "fail")])
def test_clock_thresholds(offset, verdict):
    assert clock_check(offset, "ctl01").verdict == verdict


@pytest.mark.parametrize("node, files, verdict, detail", [
    (GPU, 2, "pass", "2 x H100-SXM stand-in device files"),
    (GPU, 0, "fail", "0 stand-in GPU device files; the spec expects 2"),
    (CPU, 8, "fail", "8 stand-in GPU device files; the spec expects 0"),
    (CPU, 0, "n/a", "no GPU expected"),
])
def test_sandbox_gpus_are_the_stand_in_device_files(node, files, verdict, detail):
    facts = parse_facts(HEALTHY.replace("gpu_device_files=0", f"gpu_device_files={files}"))
    check = next(c for c in judge(node, facts, sandbox=True) if c.id == "gpus")
    assert check.verdict == verdict and detail in check.detail


def test_a_sandbox_gpu_node_needs_no_kernel_headers_it_builds_no_driver():
    facts = parse_facts(HEALTHY.replace("headers=installable", "headers=missing").replace("gpu_device_files=0",
                                                                                        "gpu_device_files=2"))
    verdicts = {c.id: c.verdict for c in judge(GPU, facts, sandbox=True)}
    assert verdicts["kernel_headers"] == "warn" and verdicts["gpus"] == "pass"
