"""A cluster can be named instead of its spec file, `provision list` shows the known clusters, and deploy keeps only
the newest run folders."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from provision.cluster import change, clusters, lifecycle
from provision.deploy.engine import prune_runs
from provision.spec.loader import load_spec
from provision.state import ClusterState

SPEC = """\
name: named
provider: {type: sandbox, subnet: 10.98.9.0/24}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: cn, roles: [compute], count: 2}
"""


def cli(*args: str, state_dir, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env={**os.environ, "PROVISION_STATE_DIR": str(state_dir)})


def test_a_name_finds_the_spec_copy_and_a_file_or_a_path_stays_what_it_is(tmp_path, monkeypatch):
    spec_file = tmp_path / "cluster.yaml"
    spec_file.write_text(SPEC)
    root = tmp_path / "state"
    assert clusters.resolve(clusters.Path("named"), root) == clusters.Path("named")  # nothing brought up yet
    spec = load_spec(spec_file).model_copy(update={"state_dir": root})
    copy = clusters.remember_spec(spec, spec_file)
    assert copy.read_text() == SPEC and oct(copy.stat().st_mode & 0o777) == "0o600"
    assert clusters.resolve(clusters.Path("named"), root) == copy
    assert clusters.resolve(spec_file, root) == spec_file
    (tmp_path / "named").mkdir()  # a folder named like the cluster in the working directory does not hide it
    monkeypatch.chdir(tmp_path)
    assert clusters.resolve(clusters.Path("named"), root) == copy
    assert clusters.resolve(clusters.Path("specs/named"), root) == clusters.Path("specs/named")  # a path, not a name


def _remembered(tmp_path: Path, applied: bool = True) -> tuple[Path, ClusterState]:
    """A cluster "named" whose spec (SPEC) was remembered under tmp_path/state, and `applied` (its nodes recorded):
    (the state root, its state)."""
    root = tmp_path / "state"
    spec_file = tmp_path / "cluster.yaml"
    spec_file.write_text(SPEC)
    spec = load_spec(spec_file).model_copy(update={"state_dir": root})
    clusters.remember_spec(spec, spec_file)
    state = ClusterState(root, "named")
    if applied:
        change.save_applied(state, lifecycle.planned_cluster(spec).nodes)
    return root, state


def test_list_shows_provider_nodes_and_the_last_verdict(tmp_path):
    root, state = _remembered(tmp_path)
    for stamp, verdict in (("20260101T000000Z-quick", "fail"), ("20260102T000000Z-quick", "pass")):
        (state.reports_dir / stamp).mkdir(parents=True)
        (state.reports_dir / stamp / "report.json").write_text(json.dumps({"verdict": verdict, "level": "quick"}))
    [summary] = clusters.known(root)
    assert (summary.name, summary.provider, summary.nodes, summary.certified) == ("named", "sandbox", 3, "pass (quick)")
    listed = cli("list", "--json", state_dir=root, cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout)["clusters"][0]["name"] == "named"
    status = cli("status", "named", "--json", state_dir=root, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert [n["name"] for n in json.loads(status.stdout)["nodes"]] == ["ctl01", "cn01", "cn02"]
    unknown = cli("status", "other", state_dir=root, cwd=tmp_path)
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr


def test_deploy_keeps_only_the_newest_run_folders(tmp_path):
    runs = tmp_path / "runs"
    names = [f"20261123-1200{i:02d}-000000-deploy" for i in range(25)]
    for name in names:
        (runs / name).mkdir(parents=True)
    removed = prune_runs(runs, 19)
    assert [p.name for p in removed] == names[:6]
    assert sorted(p.name for p in runs.iterdir()) == names[6:]
    assert prune_runs(runs, 19) == [] and prune_runs(tmp_path / "absent", 3) == []


def _reports(state: ClusterState, runs: list[tuple[str, dict]]) -> None:
    for stamp, document in runs:
        (state.reports_dir / stamp).mkdir(parents=True)
        (state.reports_dir / stamp / "report.json").write_text(json.dumps(document))


def test_list_never_shows_a_partial_run_as_the_clusters_verdict(tmp_path):
    root, state = _remembered(tmp_path, applied=False)
    grow = {"verdict": "warn", "level": "quick", "scope": {"kind": "partial", "nodes": ["cn03"], "peers": ["cn01"]}}
    _reports(state, [("20260101T000000Z-quick", grow)])
    assert clusters.known(root)[0].certified == "warn (quick, partial: cn03)"  # no full run yet
    _reports(state, [("20260102T000000Z-quick", {"verdict": "fail", "level": "quick"}),  # before scope: a full run
                     ("20260103T000000Z-quick", {**grow, "verdict": "pass"}),
                     ("20260104T000000Z-quick", {**grow, "scope": {**grow["scope"], "nodes": ["cn04", "cn05"]}})])
    assert clusters.known(root)[0].certified == "fail (quick); newer: warn (quick, partial: cn04, cn05)"
    _reports(state, [("20260105T000000Z-full", {"verdict": "pass", "level": "full", "scope": {"kind": "full"}})])
    assert clusters.known(root)[0].certified == "pass (full)"
