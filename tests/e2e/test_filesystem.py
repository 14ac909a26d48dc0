"""Issue 7 end to end: a replicated GlusterFS volume mounted on every node, written by Slurm jobs."""
from __future__ import annotations

import time

import pytest

from provision.providers.sandbox import faults
from test_deploy_faults import faults_target

pytestmark = pytest.mark.e2e

MOUNT = "/shared"


def test_volume_is_mounted_on_every_node(slurm_cluster):
    for node in slurm_cluster.info.nodes:
        fstype = slurm_cluster.ssh(node.name, f"findmnt -n -o FSTYPE --mountpoint {MOUNT}").stdout.strip()
        assert fstype == "fuse.glusterfs", node.name


def test_srun_jobs_write_and_every_node_verifies_every_file(slurm_cluster):
    ctl = slurm_cluster.controller
    slurm_cluster.ssh(ctl, f"rm -rf {MOUNT}/e2e && mkdir -p {MOUNT}/e2e")
    job = (f"srun -N{len(slurm_cluster.compute)} --ntasks-per-node=1 bash -c "
           f"'cd {MOUNT}/e2e && head -c 4M /dev/urandom > $(hostname).bin && sha256sum $(hostname).bin > $(hostname).sha'")
    slurm_cluster.ssh(ctl, job)
    for node in slurm_cluster.info.nodes:
        listing = slurm_cluster.ssh(node.name, f"cd {MOUNT}/e2e && ls *.sha").stdout.split()
        assert sorted(listing) == sorted(f"{n}.sha" for n in slurm_cluster.compute)
        slurm_cluster.ssh(node.name, f"cd {MOUNT}/e2e && sha256sum -c --quiet *.sha")


def test_replicated_volume_serves_reads_with_one_brick_node_stopped(slurm_cluster):
    reader, victim = slurm_cluster.compute[0], "store02"
    slurm_cluster.ssh(reader, f"mkdir -p {MOUNT}/e2e && head -c 1M /dev/urandom > {MOUNT}/e2e/ha.bin && "
                              f"cd {MOUNT}/e2e && sha256sum ha.bin > ha.sha")
    # client quorum: with one brick of the pair gone the volume takes writes only while the first brick is there
    quorum = slurm_cluster.ssh("store01", "gluster --mode=script volume get shared cluster.quorum-type").stdout
    assert ["cluster.quorum-type", "auto"] in [line.split()[:2] for line in quorum.splitlines()], quorum
    state_root, name = faults_target(slurm_cluster)
    faults.stop_node(state_root, name, victim)
    try:
        slurm_cluster.ssh(reader, f"cd {MOUNT}/e2e && sha256sum -c --quiet ha.sha", timeout=120)
        slurm_cluster.ssh(reader, f"cd {MOUNT}/e2e && head -c 1M /dev/urandom > down.bin && sha256sum down.bin > "
                                  "down.sha", timeout=120)  # the first brick is there: writes go on
    finally:
        faults.start_node(state_root, name, victim)
    # After the restart the mount comes back by itself (fstab, network mounts at boot), before any deploy.
    fstype = ""
    for _ in range(60):
        fstype = slurm_cluster.ssh(victim, f"findmnt -n -o FSTYPE --mountpoint {MOUNT}", check=False).stdout.strip()
        if fstype == "fuse.glusterfs":
            break
        time.sleep(1)
    assert fstype == "fuse.glusterfs"
    assert slurm_cluster.ssh(victim, f"cd {MOUNT}/e2e && sha256sum -c --quiet ha.sha", check=False).returncode == 0
    rc, result = slurm_cluster.deploy("--limit", victim)
    assert rc == 0, result
    # the node that came back healed from the other brick, and no entry is in split-brain (a boot that wrote to its
    # own brick alone split the volume's brain before client quorum)
    assert slurm_cluster.ssh(victim, f"cd {MOUNT}/e2e && sha256sum -c --quiet down.sha ha.sha",
                             check=False).returncode == 0
    split = slurm_cluster.ssh("store01", "gluster --mode=script volume heal shared info split-brain").stdout
    counts = [line.rsplit(":", 1)[1].strip() for line in split.splitlines() if line.startswith("Number of entries")]
    assert counts and set(counts) == {"0"}, split


@pytest.mark.parametrize("extra", [
    {"filesystem_type": "lustre", "filesystem_server": "mgs01", "filesystem_remote_path": "scratch",
     "filesystem_mount_point": "/lustre"},
    {"filesystem_type": "beegfs", "filesystem_server": "beegfs-mgmt01", "filesystem_mount_point": "/beegfs"},
], ids=["lustre", "beegfs"])
def test_client_only_filesystems_plan_in_check_mode_and_change_nothing(slurm_cluster, extra):
    """Lustre and BeeGFS need real servers; here the role runs in check mode on a real node and must change nothing."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from provision.state import ClusterState
    from provision.spec.loader import load_spec

    node = slurm_cluster.compute[0]
    state = ClusterState.for_spec(load_spec(slurm_cluster.spec_path))
    bridge = slurm_cluster.info.vars["provision_sandbox_bridge_address"]
    extra = {**extra, f"mirror_{extra['filesystem_type']}_repository": f"deb http://{bridge}:9/repo bookworm main"}
    fstab_before = slurm_cluster.ssh(node, "cat /etc/fstab").stdout
    playbook = Path(__file__).resolve().parents[2] / "playbooks" / "filesystem.yml"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(state.inventory_dir), str(playbook),
         "--check", "--diff", "--limit", node, "-e", json.dumps(extra)],
        capture_output=True, text=True, timeout=600, env={**__import__("os").environ,
                                                         "ANSIBLE_CONFIG": str(state.path / "ansible.cfg")})
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"{extra['filesystem_mount_point']} {extra['filesystem_type']}" in result.stdout  # the fstab diff
    assert slurm_cluster.ssh(node, "cat /etc/fstab").stdout == fstab_before
    assert slurm_cluster.ssh(node, f"test -e {extra['filesystem_mount_point']}", check=False).returncode != 0
