"""A re-run of our Slurm stack's roles (common, munge, slurm) against a public role's re-run, on the same nodes.

Run as root, with a checkout of the peer role (https://github.com/galaxyproject/ansible-slurm, not vendored here):
    .venv/bin/python bench/peer_slurm.py --peer-role /path/to/ansible-slurm [--nodes 4] [--runs 3]

One 4-node sandbox (no certify, no filesystem) is brought up by `provision up`; then, on those nodes and with the
cluster's own ansible.cfg and Ansible:
1. our common + munge + slurm roles are re-run --runs times (each must report changed=0);
2. the peer role takes the nodes over once (its slurm.conf, its restarts), then is re-run --runs times (changed=0).
Our re-run includes Slurm accounting (slurmdbd, MariaDB); the peer is given none, and it gathers facts (it needs
them). Prints each run, the medians and the ratio ours / peer (below 1: ours is faster). The cluster is removed
at the end. Compare figures only from one quiet machine.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deploy_profile import timed_cli  # noqa: E402

from provision.state import ClusterState, state_root  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SPEC = """\
name: {name}
provider: {{type: sandbox, subnet: 10.93.{octet}.0/24, os: debian-13}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute], count: {compute}}}
filesystem: {{type: none}}
"""
OURS = """\
- name: Prepare every node
  hosts: all
  gather_facts: false
  become: true
  roles: [common]
- name: Set up munge authentication on every node
  hosts: all
  gather_facts: false
  become: true
  roles: [munge]
- name: Set up Slurm on the controller and the compute nodes
  hosts: controller:compute:login
  gather_facts: false
  become: true
  roles: [slurm]
"""
# The peer's own defaults, plus what it needs on these nodes: the controller's name, the nodes and a partition,
# the cluster's munge key, and the pid files where the sandbox's systemd units wait for them.
PEER = """\
- name: The peer role on the controller and the compute nodes
  hosts: controller:compute
  become: true
  vars:
    slurm_roles: "{{{{ ['controller'] if 'controller' in group_names else ['exec'] }}}}"
    slurm_munge_key: {munge_key}
    slurm_nodes: [{nodes}]
    slurm_partitions: [{{name: batch, Default: true, State: UP, Nodes: "{node_list}"}}]
    slurm_config:
      SlurmctldHost: ctl01
      ClusterName: {name}
      TaskPlugin: task/none
      SlurmctldPidFile: /run/slurmctld/slurmctld.pid
      SlurmdPidFile: /run/slurm/slurmd.pid
  roles: [galaxyproject.slurm]
"""
EXTRA_VARS = '{"provision_in_service": false, "provision_rolling_batch": false}'


def playbook(path: Path, state: ClusterState, roles_path: str) -> tuple[float, int, int]:
    """Run one playbook over the cluster's inventory with its ansible.cfg: (seconds, changed, failed+unreachable)."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(state.path / "ansible.cfg"), "ANSIBLE_ROLES_PATH": roles_path,
           "ANSIBLE_NOCOLOR": "1"}
    start = time.monotonic()
    result = subprocess.run([str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(state.inventory_dir),
                             "-e", EXTRA_VARS, str(path)], capture_output=True, text=True, env=env, cwd=path.parent)
    seconds = time.monotonic() - start
    recap = result.stdout.rsplit("PLAY RECAP", 1)[-1]
    changed = sum(int(n) for n in re.findall(r"changed=(\d+)", recap))
    bad = sum(int(n) for n in re.findall(r"(?:failed|unreachable)=(\d+)", recap))
    if result.returncode != 0 or bad:
        print(result.stdout[-3000:], result.stderr[-2000:], sep="\n")
    return seconds, changed, bad


def runs(label: str, path: Path, state: ClusterState, roles_path: str, count: int) -> list[float]:
    """count re-runs, each printed; the seconds of those that changed nothing and failed nowhere."""
    seconds = []
    for number in range(1, count + 1):
        wall, changed, bad = playbook(path, state, roles_path)
        print(f"{label} re-run {number}: {wall:.1f} s, changed={changed}, failed/unreachable={bad}", flush=True)
        if changed == 0 and bad == 0:
            seconds.append(wall)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer-role", type=Path, required=True, help="a checkout of galaxyproject/ansible-slurm")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    name, compute = f"dpeer{args.nodes}", args.nodes - 1
    work = Path(tempfile.mkdtemp())
    spec = work / f"{name}.yaml"
    spec.write_text(SPEC.format(name=name, octet=40 + args.nodes, compute=compute))
    (work / "roles").mkdir()
    (work / "roles" / "galaxyproject.slurm").symlink_to(args.peer_role.resolve())
    timed_cli("down", str(spec))
    try:
        cpu, result = timed_cli("up", str(spec), "--skip-certify", "--quiet")
        if result.returncode != 0:
            sys.exit(f"up failed:\n{result.stderr[-2000:]}")
        print(f"{args.nodes} nodes up (ours, whole site.yml): {cpu.wall:.1f} s", flush=True)
        state = ClusterState(state_root(), name)
        roles_path = f"{REPO / 'playbooks' / 'roles'}:{work / 'roles'}"
        (work / "ours.yml").write_text(OURS)
        ours = runs("ours (common, munge, slurm)", work / "ours.yml", state, roles_path, args.runs)
        nodes = [f"cn{n:02d}" for n in range(1, compute + 1)]
        (work / "peer.yml").write_text(PEER.format(
            munge_key=state.secrets.munge_key, name=name, node_list=",".join(nodes),
            nodes=", ".join(f"{{name: {node}, CPUs: 1, State: UNKNOWN}}" for node in nodes)))
        wall, changed, bad = playbook(work / "peer.yml", state, roles_path)
        print(f"peer takes the nodes over: {wall:.1f} s, changed={changed}, failed/unreachable={bad}", flush=True)
        peer = runs("peer (galaxyproject.slurm)", work / "peer.yml", state, roles_path, args.runs)
        if ours and peer:
            print(f"median re-run: ours {statistics.median(ours):.1f} s, peer {statistics.median(peer):.1f} s, "
                  f"ratio ours/peer {statistics.median(ours) / statistics.median(peer):.2f}", flush=True)
        else:
            print("no ratio: a side had no re-run with changed=0 and no failure", flush=True)
    finally:
        timed_cli("down", str(spec))


if __name__ == "__main__":
    main()
