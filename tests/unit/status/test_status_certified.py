"""The last certify verdict of each node: the newest report that names the node, whole run or partial."""
from __future__ import annotations

import json
from pathlib import Path

from provision.status.certified import last_verdicts
from provision.status.records import CertifyVerdict


def _report(reports: Path, folder: str, level: str, nodes: dict[str, list[tuple[str, str]]]) -> None:
    """A report.json as certify writes it: per node its verdict and checks."""
    def verdict(checks):
        return "fail" if any(v == "fail" for _, v in checks) else "pass"
    data = {"level": level, "started_at": f"{folder[:8]}T00:00:00+00:00", "finished_at": f"{folder[:8]}T00:01:00+00:00",
            "verdict": "pass", "nodes": [{"name": name, "verdict": verdict(checks),
                                          "checks": [{"check": c, "verdict": v} for c, v in checks]}
                                         for name, checks in nodes.items()]}
    (reports / folder).mkdir(parents=True)
    (reports / folder / "report.json").write_text(json.dumps(data))


def test_each_node_gets_the_newest_report_that_names_it(tmp_path):
    reports = tmp_path / "reports"
    _report(reports, "20260101T000000Z-quick", "quick", {"ctl01": [("slurm.controller", "pass")],
                                                        "c1": [("slurm.srun", "pass")], "c2": [("slurm.srun", "pass")]})
    # a later run of c2 alone (a grow, a release): the last word on c2, not on c1
    _report(reports, "20260102T000000Z-standard", "standard", {"c2": [("slurm.srun", "fail"), ("node.reachable", "fail"),
                                                                     ("slurm.srun", "fail")]})
    (reports / "20260103T000000Z-quick").mkdir()  # an interrupted run: no report.json
    (reports / "20260104T000000Z-quick").mkdir()
    (reports / "20260104T000000Z-quick" / "report.json").write_text("{not json")
    found = last_verdicts(reports, ["ctl01", "c1", "c2", "c3"])
    assert found["c1"] == CertifyVerdict("pass", "quick", "20260101T00:01:00+00:00", "20260101T000000Z-quick")
    assert found["c2"] == CertifyVerdict("fail", "standard", "20260102T00:01:00+00:00", "20260102T000000Z-standard",
                                         ("slurm.srun", "node.reachable"))
    assert "c3" not in found  # never certified


def test_no_reports_folder_means_no_verdicts(tmp_path):
    assert last_verdicts(tmp_path / "absent", ["c1"]) == {}
