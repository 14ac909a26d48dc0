"""Issue 32 on the shared sandbox: `provision ssh` runs a command on a node through the system ssh (host keys
checked), and `exec --timeout` stops a command that runs too long on the node instead of leaving it there."""
from __future__ import annotations

import pytest

from conftest import provision

pytestmark = pytest.mark.e2e


def test_provision_ssh_runs_a_command_on_a_node(slurm_cluster):
    node = slurm_cluster.compute[0]
    done = provision("ssh", str(slurm_cluster.spec_path), node, "--", "hostname; echo $((6 * 7))", timeout=60)
    assert done.stdout.split() == [node, "42"]
    unknown = provision("ssh", str(slurm_cluster.spec_path), node + "x", "--", "true", check=False, timeout=60)
    assert unknown.returncode == 2 and f"did you mean {node}" in unknown.stderr


def test_exec_stops_a_command_at_its_timeout_on_the_node(slurm_cluster):
    node = slurm_cluster.compute[0]
    marker = "sleep 271.828"
    done = provision("exec", str(slurm_cluster.spec_path), "-n", node, "--timeout", "3", "--",
                     f"echo started; sh -c '{marker}'", check=False, timeout=120)
    assert done.returncode == 124 and done.stdout == "started\n", done.stderr
    assert f"error: {node}: " in done.stderr and "stopped it there" in done.stderr
    # a pattern that does not match its own command line (the shell running pgrep holds it)
    assert slurm_cluster.ssh(node, "pgrep -f 'sleep 27[1].828' || echo none").stdout.strip() == "none"
