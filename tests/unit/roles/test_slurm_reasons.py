"""The slurm role's filter of Slurm's node listing (playbooks/roles/slurm/filter_plugins/slurm_reasons.py): with the
health program switched off, a deploy resumes the nodes it had drained and only those (an admin's or certify's drain
stays). The reasons are the program's own (provision/certify/probe/nodehealth/reason.py writes them)."""
from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from role_plugins import load_plugin

from provision.certify.probe.nodehealth import reason

PLUGIN = Path(__file__).resolve().parents[3] / "playbooks" / "roles" / "slurm" / "filter_plugins" / "slurm_reasons.py"
slurm_reasons = load_plugin(PLUGIN, "slurm_reasons_under_test")

OWN = reason.text([("health.slurmd", "slurmd is not running"), ("health.munge", "no socket")])
SINFO = "\n".join([
    f"node01|drained|{OWN}",
    "node02|draining|gpu-provision-health: health.munge: an older version's reason",
    "node03|drained|hc: fan replaced, waiting for the vendor",  # an admin's, in the program's style but not its own
    "node04|drained|certify: gpu.ecc failed",
    "node05|idle|none",
    f"node06|down|{OWN}",  # down, not drained: Slurm's own to clear
    f"node07|drained|{OWN}",  # not in this run
    "login01|drained|hc:x; a | inside (gpu-provision-health)",
    "",
])


def test_only_the_health_programs_own_drains_of_the_nodes_in_the_run_are_picked():
    nodes = ["node01", "node02", "node03", "node04", "node05", "node06", "login01"]
    assert slurm_reasons.slurm_health_drains(SINFO, nodes) == ["node01", "node02", "login01"]


def test_a_node_in_two_partitions_is_named_once_and_nothing_drained_is_nothing():
    assert slurm_reasons.slurm_health_drains(f"node01|drained|{OWN}\nnode01|drained|{OWN}\n", ["node01"]) == ["node01"]
    assert slurm_reasons.slurm_health_drains("node01|idle|none\n", ["node01"]) == []


def test_the_filter_and_the_program_agree_on_what_is_the_programs():
    for text in (OWN, "gpu-provision-health: x", "hc: fan", "certify: x", f"hc:x {reason.MARK} later"):
        assert slurm_reasons._own(text) == reason.is_own(text), text


def test_a_line_that_is_not_sinfos_fails_the_task():
    with pytest.raises(AnsibleFilterError, match="not a 'node|state|reason' line"):
        slurm_reasons.slurm_health_drains("sinfo: error: Unable to contact slurm controller\n", ["node01"])
