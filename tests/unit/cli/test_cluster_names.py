"""A cluster named wrongly gets "did you mean", and `list` tells the clusters that are up from those taken down."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from provision.cluster import change, clusters, lifecycle
from provision.spec.loader import load_spec
from provision.state import ClusterState

SPEC = """\
name: {name}
provider: {{type: static}}
node_groups:
  - {{name: head, roles: [controller, compute], hosts: head01, addresses: [10.0.0.1]}}
"""


def cli(*args: str, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, timeout=60,
                          cwd=root.parent, env={**os.environ, "PROVISION_STATE_DIR": str(root)})


def _bring_up(tmp_path: Path, name: str) -> Path:
    """A cluster as `up` leaves it in the state: the spec copy and the nodes it has (no node is contacted)."""
    root = tmp_path / "state"
    spec_file = tmp_path / f"{name}.yaml"
    spec_file.write_text(SPEC.format(name=name))
    spec = load_spec(spec_file).model_copy(update={"state_dir": root})
    clusters.remember_spec(spec, spec_file)
    change.save_applied(ClusterState(root, name), lifecycle.planned_cluster(spec).nodes)
    return root


def test_a_name_close_to_a_cluster_s_gets_did_you_mean(tmp_path):
    root = _bring_up(tmp_path, "demo")
    _bring_up(tmp_path, "train")
    assert clusters.suggestion(Path("demoo"), root) == "did you mean demo? (a cluster brought up here)"
    assert clusters.suggestion(Path("specs/trian.yaml"), root).startswith("did you mean train?")
    assert clusters.suggestion(Path("zzz"), root) == ("give the path of a spec file, or the name of a cluster "
                                                      "brought up here: demo, train")
    assert "no cluster has been brought up here yet" in clusters.suggestion(Path("demo"), tmp_path / "empty")


def test_status_of_a_mistyped_cluster_exits_2_with_one_line_naming_the_fix(tmp_path):
    root = _bring_up(tmp_path, "demo")
    for argument, what in (("demoo", "no such file, and no cluster of that name here"), ("demo.yml", "no such file")):
        done = cli("status", argument, root=root)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr == f"error: {argument}: {what}; did you mean demo? (a cluster brought up here)\n"


def test_list_shows_a_cluster_taken_down_as_down_not_as_a_running_one(tmp_path):
    root = _bring_up(tmp_path, "demo")
    _bring_up(tmp_path, "train")
    assert cli("down", "train", root=root).returncode == 0
    shown = cli("list", root=root).stdout
    table, after = shown.split("└")[0], shown.split("┘")[-1]
    assert "demo" in table and "train" not in table
    assert "taken down: train (spec copy and reports kept; `provision up NAME` brings one back)" in after
    listed = json.loads(cli("list", "--json", root=root).stdout)["clusters"]
    assert [(c["name"], c["state"], c["nodes"]) for c in listed] == [("demo", "up", 1), ("train", "down", 0)]
    assert cli("status", "train", "--json", root=root).returncode == 0  # the name still finds its spec
