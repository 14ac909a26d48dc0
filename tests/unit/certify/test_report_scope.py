"""A partial run is called partial everywhere: report.json's scope, the JUnit suite names, the HTML headline, and the
runs index, which lists it as a run of its nodes and keeps it out of the cluster's trends."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import jsonschema
from test_certify_report import sample_report

from provision.certify.records import RunScope
from provision.certify.report import html, index, json_report, junit, runs, write_reports

SCOPE = RunScope("partial", ("gpu03", "gpu04"), ("gpu01", "gpu02"), "2 of 2 compute nodes in service")


def partial_report():
    return replace(sample_report(), scope=SCOPE)


def test_report_json_records_the_scope_and_validates():
    document = json_report.to_document(partial_report())
    jsonschema.validate(document, json_report.schema())
    assert document["scope"] == {"kind": "partial", "nodes": ["gpu03", "gpu04"], "peers": ["gpu01", "gpu02"],
                                 "note": "2 of 2 compute nodes in service"}
    assert json_report.to_document(sample_report())["scope"]["kind"] == "full"
    assert RunScope.from_dict(document["scope"]) == SCOPE and RunScope.from_dict(None) == RunScope()


def test_the_headline_names_the_nodes_and_the_peers():
    assert SCOPE.headline() == "partial: 2 nodes (gpu03, gpu04) against peers gpu01, gpu02"
    assert RunScope("partial", ("cn05",)).headline() == "partial: 1 node (cn05) against no peer"
    many = RunScope("partial", tuple(f"cn{i:02d}" for i in range(10)), ("cn99",))
    assert "cn07 and 2 more" in many.headline()


def test_junit_says_partial_in_the_suite_names():
    root = ET.fromstring(junit.render(partial_report()))
    assert root.get("name") == "certify c1 (partial: 2 nodes (gpu03, gpu04) against peers gpu01, gpu02)"
    assert [s.get("name") for s in root.iter("testsuite")][-1] == "partial"
    full = ET.fromstring(junit.render(sample_report()))
    assert full.get("name") == "certify c1" and [s.get("name") for s in full.iter("testsuite")][-1] == "cluster"


def test_html_headline_says_partial_against_peers():
    page = html.render(partial_report())
    headline = re.search(r'<span class="scope" id="scope" data-kind="partial">([^<]+)</span>', page)
    assert headline and headline.group(1) == SCOPE.headline()
    assert "<title>Certification of c1 (partial): FAIL</title>" in page and "judged by its pairs in aggregate" in page
    assert 'id="scope"' not in html.render(sample_report())


def test_index_lists_a_partial_run_as_a_run_of_its_nodes_and_leaves_it_out_of_the_trends(tmp_path):
    full = replace(sample_report(), started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:10:00+00:00")
    write_reports(full, tmp_path / "20260101T000000Z-standard")
    grow = replace(partial_report(), started_at="2026-01-02T00:00:00+00:00", finished_at="2026-01-02T00:00:04+00:00")
    write_reports(grow, tmp_path / "20260102T000000Z-quick")
    found = runs.read_runs(tmp_path).runs
    assert [(r.folder, r.partial) for r in found] == [("20260102T000000Z-quick", True),
                                                      ("20260101T000000Z-standard", False)]
    page = index.render(tmp_path)
    row = page[page.index('data-run="20260102T000000Z-quick"'):]
    row = row[:row.index("</tr>")]
    assert 'data-scope="partial"' in row and SCOPE.headline() in row
    walls = re.search(r'data-key="wall_s">.*?</figure>', page, re.S).group(0)
    assert re.findall(r'data-run="([^"]+)"', walls) == ["20260101T000000Z-standard"]  # its 4 s are not a trend
    assert 'id="partial-note"' in page


def test_a_report_without_a_scope_is_a_full_run(tmp_path):
    write_reports(sample_report(), tmp_path / "20260101T000000Z-standard")
    path = tmp_path / "20260101T000000Z-standard" / "report.json"
    document = json.loads(path.read_text())
    del document["scope"]
    document["schema_version"] = "1.2"
    path.write_text(json.dumps(document))
    [run] = runs.read_runs(tmp_path).runs
    assert not run.partial and run.scope == RunScope()
