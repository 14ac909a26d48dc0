"""Issue 6 end to end: the GPU roles for real on a small sandbox cluster of its own, against a signed
stand-in of NVIDIA's CUDA repository (TEST FIXTURE, tests/fixtures/nvidia_repo) served on the sandbox
bridge. Two test hooks make sandbox nodes look like GPU nodes (gpu_base_test_fake_pci_devices) and, later,
like nodes rebooted into the new driver (gpu_base_test_fake_loaded_driver).

  ctl01  controller, no GPU: every GPU role skips it with one line
  gpu01  fake H100 + NVSwitch, driver from the CUDA repository (branch 570, open modules)
  gpu02  fake L40S, driver from Debian's own non-free archive (branch 550 on Debian 13, 535 on Debian 12;
         userspace packages only), InfiniBand software from Debian (rdma-core, perftest)

The nodes run the sandbox's default release (Debian 13); the stand-in repository is served under that release's
directory (debian13), as NVIDIA names it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from provision.certify.probe.metrics import catalogue
from provision.cluster.lifecycle import get_provider
from provision.deploy.engine import DeployOptions, deploy
from provision.deploy.records import DeployResult
from provision.providers.sandbox import releases
from provision.records import ClusterInfo
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
DRIVER = "570.124.06"  # the newest 570 stand-in; the fixture also has 570.86.15 and 575.51.03
# The nodes' release: NVIDIA's directory for it, and the driver branch Debian's own non-free archive carries.
RELEASE = {"debian-12": ("debian12", 535), "debian-13": ("debian13", 550)}[releases.DEFAULT]
SPEC = {
    "name": "gputest",
    "provider": {"type": "sandbox", "subnet": "10.96.0.0/24"},
    "node_groups": [
        {"name": "ctl", "roles": ["controller"], "count": 1},
        {"name": "gpu", "roles": ["compute"], "count": 2, "gpu": {"model": "H100-SXM", "count": 8}},
    ],
    "software": {"nvidia_driver": {"branch": 570, "reboot": "drain"},
                 "cuda": {"versions": ["12.4", "12.8"], "default": "12.8"}, "nccl": {"version": "2.26.2"}},
}
# TEST HOOKS and per-node overrides, written as inventory host_vars (the rendered inventory never touches them).
HOST_VARS = {
    "gpu01": {"gpu_base_test_fake_pci_devices": ["10de:2330", "10de:2330", "10de:22a3:0680"],
              "cuda_environment": ["profile", "lmod"]},
    "gpu02": {"gpu_base_test_fake_pci_devices": ["10de:26b9"],
              "nvidia_driver_source": "distribution", "nvidia_driver_branch": RELEASE[1],
              "cuda_versions": ["12.2"], "cuda_default_version": "12.2", "rdma_fabric": "infiniband",
              # The sandbox cannot build kernel modules and Debian's DKMS package pulls a compiler:
              # the distribution path installs the userspace half here.
              "nvidia_driver_packages": ["nvidia-smi", "libnvidia-ml1", "libcuda1"]},
}
# TEST FIXTURE group vars: build nccl-tests with make alone (the stand-in Makefile compiles nothing).
FIXTURE_VARS = {"nccl_tests_build_packages": ["make"], "nccl_tests_mpi": False}


def _builder():
    spec = importlib.util.spec_from_file_location("nvidia_repo_fixture", REPO / "tests/fixtures/nvidia_repo/build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@dataclass
class GpuCluster:
    """The test cluster, its fixture repository and the results of each deploy phase."""

    spec: ClusterSpec
    info: ClusterInfo
    repo_dir: Path
    builder: object
    runs: dict[str, DeployResult] = field(default_factory=dict)
    snapshots: dict[str, dict[str, str]] = field(default_factory=dict)

    def ssh(self, node: str, command: str) -> subprocess.CompletedProcess:
        argv = ["ssh", "-i", str(self.info.ssh_key_path), "-o", "StrictHostKeyChecking=yes",
                "-o", f"UserKnownHostsFile={self.info.known_hosts_path}", "-o", "BatchMode=yes",
                f"root@{self.info.node(node).address}", command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)

    def deploy(self, phase: str, limit: str | None = None, spec: ClusterSpec | None = None) -> DeployResult:
        result = deploy(spec or self.spec, self.info, DeployOptions(playbook="gpu.yml", limit=limit))
        self.runs[phase] = result
        return result

    def host_vars(self, node: str, values: dict) -> None:
        path = ClusterState.for_spec(self.spec).inventory_dir / "host_vars" / f"{node}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# TEST HOOKS (tests/e2e/test_gpu_stack.py)\n" + yaml.safe_dump(values))

    def snapshot(self, node: str) -> dict[str, str]:
        probes = {
            "sources": "cat /etc/apt/sources.list.d/gpu-provision-cuda.sources",
            "packages": "dpkg-query -W -f '${Package}=${Version}\\n'",
            "holds": "apt-mark showhold",
            "reboot": "cat /run/gpu-provision/nvidia-driver-reboot-required",
            "cuda": "readlink -f /usr/local/cuda",
            "driver": "cat /etc/gpu-provision/nvidia-driver.json",
            "nccl_tests": "/opt/nccl-tests/bin/all_reduce_perf",
            "nouveau": "cat /etc/modprobe.d/gpu-provision-blacklist-nouveau.conf",
            "profile": "cat /etc/profile.d/gpu-provision-cuda.sh",
            "lmod": "cat /etc/lmod/modulefiles/cuda/12.4.lua && readlink /etc/lmod/modulefiles/cuda/default",
            "enabled": "systemctl is-enabled nvidia-persistenced nvidia-fabricmanager nvidia-dcgm",
            "ports": "python3 -c 'import socket\nfor p in (6666, 5555, 9400):\n s=socket.socket()\n"
                     " print(p, s.connect_ex((\"127.0.0.1\", p)) == 0)'",
            "debian_sources": "cat /etc/apt/sources.list.d/debian.sources",
            "pin": "cat /etc/apt/preferences.d/gpu-provision-nvidia-driver",
            "exporter_enabled": "systemctl is-enabled nvidia-dcgm-exporter",
            "exporter_dropin": "cat /etc/systemd/system/nvidia-dcgm-exporter.service.d/gpu-provision.conf",
            "exporter_counters": "cat /etc/dcgm-exporter/gpu-provision-counters.csv",
        }
        return {key: self.ssh(node, command).stdout for key, command in probes.items()}


def _serve(directory: Path, address: str) -> ThreadingHTTPServer:
    """The fixture repository over HTTP on the sandbox bridge address only (never 0.0.0.0)."""
    handler = partial(SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer((address, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory):
    """Create the cluster, build and serve the fixture repository, point the spec's mirrors at it."""
    if os.geteuid() != 0:
        pytest.skip("sandbox e2e tests need root (make test runs them as root)")
    missing = [tool for tool in ("gpg", "dpkg-deb") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the fixture repository needs {', '.join(missing)} (Debian packages gpg, dpkg)")
    spec = ClusterSpec.model_validate(SPEC)
    provider = get_provider(spec)
    provider.destroy()  # leftovers of an interrupted run
    builder = _builder()
    repo_dir = tmp_path_factory.mktemp("nvidia-repo")
    server = None
    try:
        info = provider.create()
        bridge = info.vars["provision_sandbox_bridge_address"]
        builder.build(repo_dir, with_headers=False, release=RELEASE[0])
        server = _serve(repo_dir, bridge)
        base = f"http://{bridge}:{server.server_port}"
        mirrors = spec.software.mirrors.model_copy(update={
            "cuda_repository": f"{base}/compute/cuda/repos", "nccl_tests_source": f"{base}/nccl-tests/"})
        spec = spec.model_copy(update={"software": spec.software.model_copy(update={"mirrors": mirrors})})
        cluster = GpuCluster(spec, info, repo_dir, builder)
        for node in info.nodes:  # TEST FIXTURE: the repository is on the bridge; bypass the apt proxy for it
            cluster.ssh(node.name, f"echo 'Acquire::http::Proxy::{bridge} \"DIRECT\";' "
                                   "> /etc/apt/apt.conf.d/99gpu-provision-test-fixture")
        for node, values in HOST_VARS.items():
            cluster.host_vars(node, values)
        group_vars = ClusterState.for_spec(spec).inventory_dir / "group_vars" / "all" / "test_fixture.yml"
        group_vars.parent.mkdir(parents=True, exist_ok=True)
        group_vars.write_text("# TEST FIXTURE (tests/e2e/test_gpu_stack.py)\n" + yaml.safe_dump(FIXTURE_VARS))
        yield cluster
    finally:
        if server is not None:
            server.shutdown()
        builder.stop_agent(repo_dir / ".gnupg")
        provider.destroy()


@pytest.fixture(scope="module")
def headers_missing(gpu_cluster):
    """First deploy: the repository has no headers for the running kernel."""
    return gpu_cluster.deploy("headers_missing")


@pytest.fixture(scope="module")
def installed(gpu_cluster, headers_missing):
    """The site adds the headers to its repository and deploys again: the whole stack goes in."""
    gpu_cluster.builder.build(gpu_cluster.repo_dir, with_headers=True, release=RELEASE[0])
    result = gpu_cluster.deploy("installed")
    gpu_cluster.snapshots.update({f"installed/{n}": gpu_cluster.snapshot(n) for n in ("gpu01", "gpu02")})
    return result


@pytest.fixture(scope="module")
def second_run(gpu_cluster, installed):
    return gpu_cluster.deploy("second")


@pytest.fixture(scope="module")
def rebooted(gpu_cluster, second_run):
    """gpu01 as after the reboot: the test hook reports the installed driver as loaded."""
    gpu_cluster.host_vars("gpu01", {**HOST_VARS["gpu01"], "gpu_base_test_fake_loaded_driver": DRIVER})
    result = gpu_cluster.deploy("rebooted", limit="gpu01")
    gpu_cluster.snapshots["rebooted/gpu01"] = gpu_cluster.snapshot("gpu01")
    return result


def _hosts(result: DeployResult) -> dict:
    return {h.host: h for h in result.hosts}


def _stdout(result: DeployResult) -> str:
    return (Path(result.artifacts_dir) / "stdout").read_text()


def _packages(snapshot: dict[str, str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in snapshot["packages"].splitlines())


def test_missing_kernel_headers_stop_the_driver_role_with_a_clear_message(headers_missing):
    hosts = _hosts(headers_missing)
    kernel = os.uname().release
    for node in ("gpu01", "gpu02"):
        assert hosts[node].failed, hosts[node]
        assert hosts[node].failed_task == "Stop before DKMS fails if the running kernel has no headers"
        assert f"The running kernel {kernel}" in hosts[node].message
        assert f"linux-headers-{kernel} is not installed and no configured APT repository offers it" in \
            hosts[node].message
    assert not hosts["ctl01"].failed and hosts["ctl01"].changed == 0


def test_controller_skips_every_gpu_role_with_one_line_each(installed):
    text = _stdout(installed)
    for role in ("nvidia_driver", "cuda", "nccl", "nvidia_fabricmanager", "dcgm"):
        assert f'"msg": "{role} skipped: no NVIDIA GPU on ctl01' in text, role
    assert '"msg": "rdma skipped: ctl01 has no high-speed fabric' in text
    assert _hosts(installed)["ctl01"].changed == 0


def test_whole_stack_installs_on_both_gpu_nodes(installed):
    assert installed.ok, [(h.host, h.failed_task, h.message) for h in installed.hosts if h.failed]


def test_cuda_repository_is_configured_signed_and_from_the_mirror(gpu_cluster, installed):
    sources = gpu_cluster.snapshots["installed/gpu01"]["sources"]
    mirror = gpu_cluster.spec.software.mirrors.cuda_repository
    assert f"URIs: {mirror}/{RELEASE[0]}/x86_64/" in sources
    assert "Suites: /" in sources and "Signed-By: /etc/apt/keyrings/gpu-provision-cuda.asc" in sources
    assert "trusted" not in sources


def test_pinned_driver_is_the_newest_of_the_branch_not_of_the_repository(gpu_cluster, installed):
    packages = _packages(gpu_cluster.snapshots["installed/gpu01"])
    for name in ("nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-smi", "libnvidia-ml1", "libcuda1",
                 "nvidia-persistenced", "firmware-nvidia-gsp"):
        assert packages.get(name) == f"{DRIVER}-1", name
    assert "nvidia-kernel-dkms" not in packages  # open kernel modules were asked for
    driver = json.loads(gpu_cluster.snapshots["installed/gpu01"]["driver"])
    assert driver["version"] == DRIVER and driver["source"] == "cuda-repo"


def test_fabric_manager_equals_the_driver_version_where_nvswitches_are(gpu_cluster, installed):
    assert _packages(gpu_cluster.snapshots["installed/gpu01"])["nvidia-fabricmanager-570"] == f"{DRIVER}-1"
    assert not any(p.startswith("nvidia-fabricmanager") for p in _packages(gpu_cluster.snapshots["installed/gpu02"]))
    assert "nvidia_fabricmanager skipped: no NVSwitch on gpu02" in _stdout(installed)


def test_cuda_toolkits_side_by_side_with_the_default_linked(gpu_cluster, installed):
    snap = gpu_cluster.snapshots["installed/gpu01"]
    packages = _packages(snap)
    assert packages["cuda-toolkit-12-4"] == "12.4.1-1" and packages["cuda-toolkit-12-8"] == "12.8.1-1"
    assert snap["cuda"].strip() == "/usr/local/cuda-12.8"
    assert "export CUDA_HOME=/usr/local/cuda" in snap["profile"]
    assert 'local root = "/usr/local/cuda-12.4"' in snap["lmod"] and snap["lmod"].strip().endswith("12.8.lua")


def test_nccl_build_matches_each_nodes_cuda_and_nccl_tests_is_built(gpu_cluster, installed):
    gpu01, gpu02 = (_packages(gpu_cluster.snapshots[f"installed/{n}"]) for n in ("gpu01", "gpu02"))
    assert gpu01["libnccl2"] == gpu01["libnccl-dev"] == "2.26.2-1+cuda12.8"
    assert gpu02["libnccl2"] == gpu02["libnccl-dev"] == "2.26.2-1+cuda12.2"
    assert "CUDA_HOME=/usr/local/cuda-12.8 NCCL_HOME=/usr" in gpu_cluster.snapshots["installed/gpu01"]["nccl_tests"]


def test_dcgm_package_follows_the_driver_branchs_cuda_major(gpu_cluster, installed):
    packages = _packages(gpu_cluster.snapshots["installed/gpu01"])
    assert packages["datacenter-gpu-manager-4-cuda12"] == packages["datacenter-gpu-manager-4-core"] == "1:4.4.1-1"


def test_driver_nccl_dcgm_and_fabric_manager_are_held(gpu_cluster, installed):
    holds = set(gpu_cluster.snapshots["installed/gpu01"]["holds"].split())
    assert {"nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-smi", "libnvidia-ml1", "libcuda1",
            "nvidia-persistenced", "nvidia-fabricmanager-570", "libnccl2", "libnccl-dev",
            "datacenter-gpu-manager-4-cuda12", "datacenter-gpu-manager-4-core"} <= holds


def test_dcgm_exporter_is_installed_held_and_set_to_the_nodes_address_and_our_counters(gpu_cluster, installed):
    for node in ("gpu01", "gpu02"):
        snap = gpu_cluster.snapshots[f"installed/{node}"]
        assert _packages(snap)["datacenter-gpu-manager-exporter"] == "4.6.0-1"  # the newest stand-in, then held
        assert "datacenter-gpu-manager-exporter" in snap["holds"].split()
        address = gpu_cluster.info.node(node).address
        assert "ExecStart=\nExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/gpu-provision-counters.csv " \
               f"-a {address}:9400 -r 127.0.0.1:5555\n" in snap["exporter_dropin"]
        assert snap["exporter_counters"] == (REPO / "playbooks/roles/dcgm/files/dcgm-exporter-counters.csv").read_text()
        assert snap["exporter_enabled"].strip() == "enabled"


def test_reboot_is_recorded_not_done_and_services_wait_for_the_driver(gpu_cluster, installed):
    snap = gpu_cluster.snapshots["installed/gpu01"]
    assert snap["reboot"].strip() == f"driver {DRIVER} is installed but no NVIDIA driver is loaded"
    assert "nvidia-driver-reboot-required" in _stdout(installed)
    assert "blacklist nouveau" in snap["nouveau"]
    assert snap["enabled"].split() == ["enabled", "enabled", "enabled"]
    assert "6666 False" in snap["ports"] and "5555 False" in snap["ports"]


def test_distribution_source_installs_debians_own_driver_pinned_and_held(gpu_cluster, installed):
    snap = gpu_cluster.snapshots["installed/gpu02"]
    packages = _packages(snap)
    version = packages["nvidia-smi"]
    assert version.startswith(f"{RELEASE[1]}.")  # Debian's build of its own branch, not a stand-in (570, 575)
    assert packages["libnvidia-ml1"] == packages["libcuda1"] == version
    assert {"nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced"} <= set(snap["holds"].split())
    assert "non-free" in snap["debian_sources"] and "Pin: release o=NVIDIA" in snap["pin"]
    assert json.loads(snap["driver"])["source"] == "distribution"


def test_infiniband_node_gets_rdma_core_and_perftest_others_skip(gpu_cluster, installed):
    packages = _packages(gpu_cluster.snapshots["installed/gpu02"])
    assert {"rdma-core", "ibverbs-utils", "infiniband-diags", "perftest"} <= set(packages)
    assert "rdma-core" not in _packages(gpu_cluster.snapshots["installed/gpu01"])
    assert '"msg": "rdma skipped: gpu01 has no high-speed fabric' in _stdout(installed)


def test_second_run_changes_nothing(second_run):
    assert second_run.ok
    assert {h.host: h.changed for h in second_run.hosts} == {"ctl01": 0, "gpu01": 0, "gpu02": 0}


def test_after_the_reboot_the_marker_clears_and_the_daemons_answer(gpu_cluster, rebooted):
    assert rebooted.ok, [(h.host, h.failed_task, h.message) for h in rebooted.hosts if h.failed]
    snap = gpu_cluster.snapshots["rebooted/gpu01"]
    assert snap["reboot"] == ""
    assert "6666 True" in snap["ports"] and "5555 True" in snap["ports"]
    assert _packages(snap)["nvidia-driver-cuda"] == f"{DRIVER}-1"  # the matching driver was left alone


def test_after_the_reboot_the_dcgm_exporter_serves_every_catalogue_name_on_the_nodes_address(gpu_cluster, rebooted):
    """A scrape as Prometheus's job dcgm makes it: the stand-in exporter serves what the drop-in's -f names, on the
    drop-in's -a, and started only once the host engine answered (-r); nothing on the loopback address."""
    address = gpu_cluster.info.node("gpu01").address
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the bridge, never a proxy
    with opener.open(f"http://{address}:9400/metrics", timeout=10) as response:
        served = {line.split("{")[0] for line in response.read().decode().splitlines() if not line.startswith("#")}
    assert served == set(catalogue.DCGM)
    assert "9400 False" in gpu_cluster.snapshots["rebooted/gpu01"]["ports"]


def test_roles_refuse_an_incoherent_combination_and_propose_a_coherent_one(gpu_cluster, rebooted):
    software = gpu_cluster.spec.software
    incoherent = gpu_cluster.spec.model_copy(update={"software": software.model_copy(update={
        "cuda": software.cuda.model_copy(update={"versions": ["12.9"], "default": "12.9"})})})
    result = gpu_cluster.deploy("incoherent", limit="ctl01", spec=incoherent)
    host = _hosts(result)["ctl01"]
    assert host.failed and host.failed_task == "Check that the driver branch supports every CUDA version"
    assert "CUDA 12.9 is too new for nvidia_driver_branch 570 (supports up to 12.8); use driver branch 575 " \
           "or newer, or CUDA 12.8 or older" in host.message
