"""Issue 4 end to end on the shared 4-node sandbox: Slurm works, re-runs change nothing, no secret leaks."""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from provision.spec.loader import load_spec
from provision.state import ClusterState

pytestmark = pytest.mark.e2e


def test_every_compute_node_is_idle_after_up(slurm_cluster):
    out = slurm_cluster.ssh(slurm_cluster.controller, "sinfo -h -N -o '%N %t'").stdout
    states = dict(line.split() for line in out.splitlines())
    assert {n: states.get(n) for n in slurm_cluster.compute} == {n: "idle" for n in slurm_cluster.compute}


def test_srun_runs_on_three_distinct_nodes(slurm_cluster):
    out = slurm_cluster.ssh(slurm_cluster.controller, "srun -N3 hostname").stdout.split()
    assert sorted(out) == sorted(slurm_cluster.compute)


def test_sbatch_job_completes_and_is_accounted(slurm_cluster):
    ctl = slurm_cluster.controller
    job = slurm_cluster.ssh(ctl, "sbatch --parsable -N1 --wrap 'hostname; sleep 1'").stdout.strip()
    state = ""
    for _ in range(60):
        state = slurm_cluster.ssh(ctl, f"sacct -n -X -P -j {job} -o State", check=False).stdout.strip()
        if state == "COMPLETED":
            break
        time.sleep(1)
    assert state == "COMPLETED"


def test_munge_credential_from_one_node_decodes_on_another(slurm_cluster):
    first, second = slurm_cluster.compute[0], slurm_cluster.controller
    credential = slurm_cluster.ssh(first, "munge -n").stdout
    decoded = slurm_cluster.ssh(second, "unmunge", input=credential).stdout
    assert "STATUS:          Success" in decoded


def test_second_deploy_changes_nothing(slurm_cluster):
    rc, result = slurm_cluster.deploy()
    assert rc == 0, result
    assert {h["host"]: h["changed"] for h in result["hosts"]} == {n.name: 0 for n in slurm_cluster.info.nodes}


def test_plain_ansible_playbook_converges_without_the_cli(slurm_cluster):
    """A converged cluster re-run with nothing but `ansible-playbook -i <inventory> playbooks/site.yml` (no
    ansible.cfg, no extra vars, the user's own environment) changes nothing on any host."""
    state = ClusterState.for_spec(load_spec(slurm_cluster.spec_path))
    playbook = Path(__file__).resolve().parents[2] / "playbooks" / "site.yml"
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANSIBLE_")}
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(state.inventory_dir),
                             str(playbook)], capture_output=True, text=True, timeout=900, env=env, cwd="/")
    recap = play_recap(result.stdout)
    shown = f"{changed_tasks(result.stdout)}\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
    assert result.returncode == 0, shown
    assert set(recap) == {n.name for n in slurm_cluster.info.nodes}, shown
    assert {host: (counts["changed"], counts["unreachable"], counts["failed"]) for host, counts in recap.items()} \
        == {host: (0, 0, 0) for host in recap}, shown


_RECAP_LINE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$")


def play_recap(stdout: str) -> dict[str, dict[str, int]]:
    """The PLAY RECAP of ansible-playbook's default output: {host: {"ok": N, "changed": N, ...}}, one line a host."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("PLAY RECAP ")]
    assert len(starts) == 1, f"one PLAY RECAP expected, found {len(starts)}"
    recap = {}
    for line in lines[starts[0] + 1:]:
        match = _RECAP_LINE.match(line.strip())
        if not match:
            break
        assert match.group(1) not in recap, f"{match.group(1)} twice in the recap"
        recap[match.group(1)] = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return recap


def changed_tasks(stdout: str) -> list[str]:
    """'TASK name: host' for every task the default output reports as changed."""
    task, found = "", []
    for line in stdout.splitlines():
        if line.startswith("TASK ["):
            task = line[len("TASK ["):line.rfind("]")]
        elif line.startswith("changed: ["):
            found.append(f"{task}: {line[len('changed: ['):line.find(']')]}")
    return found


def _secret_forms(raw: bytes) -> list[bytes]:
    """The ways a secret could appear in a log: raw, base64, hex (long enough to be unambiguous)."""
    return [raw[:64], base64.b64encode(raw)[:64], raw.hex()[:64].encode()]


def test_no_secret_in_artifacts_or_output(slurm_cluster):
    state = ClusterState.for_spec(load_spec(slurm_cluster.spec_path))
    key = state.secrets.munge_key.read_bytes()
    password = state.secrets.db_password.read_bytes()
    forms = _secret_forms(key) + [password]
    files = [p for p in state.runs_dir.rglob("*") if p.is_file()]
    assert files, "the runs directory holds the artifacts of every deploy"
    leaks = [str(p) for p in files for form in forms if form in p.read_bytes()]
    assert leaks == []
    assert oct(state.secrets.munge_key.stat().st_mode & 0o777) == "0o400"
