"""A Python session drives the shared cluster through the library alone, no import from provision.cli: `up` on the
running cluster creates and redoes nothing, `certify` passes (test_zz_teardown takes it down the same way)."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import library_session

pytestmark = pytest.mark.e2e

SESSION = """
import json, sys
from pathlib import Path

from provision.cluster import lifecycle
from provision.spec.loader import load_spec


class Watch(lifecycle.UpView):
    def __init__(self):
        self.finished = []

    def stage_finished(self, stage, record):
        self.finished.append((stage, type(record).__name__))


spec = load_spec(Path(sys.argv[1]))
watch = Watch()
up = lifecycle.up(spec, lifecycle.UpOptions(skip=("certify",)), watch)
run = lifecycle.certify(spec)
print(json.dumps({"ran": up.ran, "skipped": up.skipped, "finished": watch.finished,
                  "nodes": {n.name: n.state for n in up.cluster.nodes}, "ok": run.ok, "failed": run.failed_nodes,
                  "report": str(run.paths.json), "cli": sorted(m for m in sys.modules if m.startswith("provision.cli"))}))
"""


def test_up_and_certify_run_from_python_without_the_cli(slurm_cluster):
    summary = library_session(SESSION, str(slurm_cluster.spec_path))
    assert summary["cli"] == []
    assert summary["ran"] == ["nodes", "inventory"]  # the cluster is up: no stage is redone
    assert summary["skipped"] == ["preflight", "deploy", "certify"]
    assert summary["finished"] == [["nodes", "ClusterInfo"], ["inventory", "list"]]
    assert summary["nodes"] == {n.name: "running" for n in slurm_cluster.info.nodes}
    assert summary["ok"] and summary["failed"] == [], summary
    assert Path(summary["report"]).is_file()
