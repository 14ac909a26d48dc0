"""Runs last: `down` on the shared cluster, from a Python session of library calls (no import from provision.cli),
leaves no mount, namespace, process, link or bridge behind; the CLI's `down` after it is idempotent."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import library_session, provision
from provision.providers.sandbox import layout
from provision.spec.loader import load_spec
from provision.state import ClusterState

pytestmark = pytest.mark.e2e

DOWN = """
import json, sys
from pathlib import Path

from provision.cluster import lifecycle
from provision.spec.loader import load_spec

teardown = lifecycle.down(load_spec(Path(sys.argv[1])))
print(json.dumps({"removed": teardown.removed, "leftovers": teardown.leftovers,
                  "cli": sorted(m for m in sys.modules if m.startswith("provision.cli"))}))
"""


def _processes_mounting_under(path: Path) -> list[int]:
    """PIDs whose mount table still holds something under the cluster's state directory (node roots, FUSE)."""
    found = []
    for mountinfo in Path("/proc").glob("[0-9]*/mountinfo"):
        try:
            if f"{path}/" in mountinfo.read_text():  # its own folder: clusters/e2e is a prefix of clusters/e2es
                found.append(int(mountinfo.parent.name))
        except OSError:
            continue  # the process ended while we looked
    return found


def test_down_leaves_nothing_behind(slurm_cluster):
    spec = load_spec(slurm_cluster.spec_path)
    state = ClusterState.for_spec(spec)
    assert _processes_mounting_under(state.path), "precondition: the running nodes mount under the state dir"
    teardown = library_session(DOWN, str(slurm_cluster.spec_path))
    assert teardown["leftovers"] == [] and teardown["removed"] and teardown["cli"] == []
    assert _processes_mounting_under(state.path) == []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert layout.netns_prefix(spec.name) not in netns
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert layout.veth_prefix(spec.name) not in links and layout.bridge_name(spec.name) not in links
    assert provision("down", str(slurm_cluster.spec_path)).returncode == 0  # idempotent
