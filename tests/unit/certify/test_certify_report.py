"""Report renderers: JSON against its schema, JUnit parsed back, HTML with its charts (and in Chromium)."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport, NetMatrix, NodeResult
from provision.certify.report import html, json_report, junit, write_reports, write_to_state
from provision.state import ClusterState

NODES = ("gpu01", "gpu02", "gpu03", "gpu04")


def sample_report() -> ClusterReport:
    nodes = []
    for i, name in enumerate(NODES):
        checks = [
            CheckResult("slurm.srun", "pass", node=name, value=name),
            CheckResult("gpu.ecc.volatile_uncorrected", "fail" if i == 1 else "pass", node=name, subject="gpu0",
                        value=2 if i == 1 else 0, unit="errors", threshold="== 0", source="NVML",
                        detail="<script>alert(1)</script>" if i == 1 else ""),
            CheckResult("gpu.retired_pages", "na", node=name, subject="gpu0", detail="row remapping instead"),
        ]
        for gpu in range(2):
            checks.append(CheckResult("gpu.gemm_bf16", "warn" if (i, gpu) == (2, 1) else "pass", node=name,
                                      subject=f"gpu{gpu}", value=700.0 if (i, gpu) == (2, 1) else 790.0 + i,
                                      unit="TFLOP/s", threshold=675.3, source="ml-engineering"))
            checks.append(CheckResult("gpu.copy_bw", "pass", node=name, subject=f"gpu{gpu}", value=2900.0 - i,
                                      unit="GB/s", threshold=1905.0, source="DCGM"))
        checks.append(CheckResult("net.node_bw", "pass", node=name, value=390.0, unit="Gb/s"))
        nodes.append(NodeResult(name, tuple(checks), "H100-SXM"))
    values = tuple(tuple(None if a == b else 390.0 - 10 * (a == 2 or b == 2) for b in range(4)) for a in range(4))
    matrix = NetMatrix(NODES, values, "Gb/s", "ib_write_bw")
    cluster = (CheckResult("nccl.cluster_busbw", "pass", value=350.0, unit="GB/s", threshold=331.2, source="x"),
               CheckResult("net.pairwise_bw", "pass", subject="gpu01->gpu02", value=390.0, unit="Gb/s"))
    return ClusterReport("c1", "standard", "2026-01-01T00:00:00+00:00", "2026-01-01T00:10:00+00:00",
                         tuple(nodes), cluster, matrix)


def test_json_document_validates_against_its_schema():
    document = json_report.to_document(sample_report())
    jsonschema.validate(document, json_report.schema())
    assert document["schema_version"] == json_report.SCHEMA_VERSION and document["verdict"] == "fail"
    assert document["counts"]["fail"] == 1 and document["counts"]["na"] == 4
    assert json.loads(json_report.render(sample_report())) == document


def test_schema_rejects_a_document_that_breaks_it():
    document = json_report.to_document(sample_report())
    document["nodes"][0]["checks"][0]["verdict"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, json_report.schema())
    document = json_report.to_document(sample_report())
    del document["schema_version"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, json_report.schema())


def test_junit_has_one_testcase_per_check_and_maps_verdicts():
    report = sample_report()
    root = ET.fromstring(junit.render(report))
    cases = root.findall(".//testcase")
    assert len(cases) == len(report.all_checks())
    assert int(root.get("tests")) == len(cases) and int(root.get("failures")) == 1
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["gpu.ecc.volatile_uncorrected[gpu0]"]
    assert failed[0].get("classname") == "c1.gpu02"
    assert len([c for c in cases if c.find("skipped") is not None]) == 4
    warned = [c for c in cases if c.find("system-out").text.startswith("WARN")]
    assert [c.get("name") for c in warned] == ["gpu.gemm_bf16[gpu1]"]
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == set(NODES) | {"cluster"} and suites["gpu02"].get("failures") == "1"


def test_html_has_a_bar_per_node_per_chart_and_a_cell_per_pair():
    page = html.render(sample_report())
    assert page.count('<rect class="bar ') == 3 * len(NODES)  # gemm, copy, network: one bar per node
    assert page.count('<rect class="cell"') == len(NODES) ** 2
    assert 'data-node="gpu03" data-verdict="warn"' in page  # worst GPU of gpu03 decides its bar


def test_html_is_self_contained_and_escaped():
    page = html.render(sample_report())
    assert not re.search(r"(src|href)\s*=\s*\"(https?:)?//", page) and "http" not in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_html_without_measurements_or_network_still_renders():
    node = NodeResult("login01", (CheckResult("slurm.srun", "pass", node="login01"),), None)
    page = html.render(ClusterReport("c1", "quick", "t0", "t1", (node,)))
    assert "No performance measurements" in page and "No pairwise network measurement" in page


def test_reports_written_privately_to_the_state_directory(tmp_path):
    state = ClusterState(tmp_path, "c1")
    paths = write_to_state(sample_report(), state, stamp="20260101T000000Z")
    assert paths.directory == state.reports_dir / "20260101T000000Z-standard"
    for path in (paths.json, paths.junit, paths.html):
        assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(paths.json.read_text())["cluster"] == "c1"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0", "--dump-dom"]


def render_in_chromium(page_path, profile) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and every console or resource-load message Chromium logged."""
    done = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", page_path.as_uri()],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(profile)})
    assert done.returncode == 0, done.stderr[-2000:]
    noise = [line for line in done.stderr.splitlines()
             if ":CONSOLE" in line or "Failed to load resource" in line or "net::ERR" in line]
    return done.stdout, noise


@pytest.mark.e2e
@pytest.mark.skipif(CHROMIUM is None, reason="Debian package chromium is not installed")
def test_html_renders_its_charts_in_headless_chromium_without_console_errors(tmp_path):
    paths = write_reports(sample_report(), tmp_path / "report")
    dom, messages = render_in_chromium(paths.html, tmp_path / "profile")
    assert messages == []
    assert re.search(r'<body[^>]*data-ready="1"', dom), "the page script did not run to its end"
    assert re.search(rf'data-bars="{3 * len(NODES)}"', dom) and re.search(rf'data-cells="{len(NODES) ** 2}"', dom)
    assert len(re.findall(r'<rect class="bar ', dom)) == 3 * len(NODES)
    assert len(re.findall(r'<rect class="cell"', dom)) == len(NODES) ** 2


@pytest.mark.e2e
@pytest.mark.skipif(CHROMIUM is None, reason="Debian package chromium is not installed")
def test_chromium_harness_does_catch_a_console_error(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text(html.render(sample_report()).replace('"use strict";', '"use strict"; undefinedCall();'))
    dom, messages = render_in_chromium(broken, tmp_path / "profile")
    assert any("undefinedCall" in m for m in messages)
    assert re.search(r'<body[^>]*data-ready="0"', dom)


def test_action_is_serialised_validated_and_shown():
    report = sample_report()
    xid_check = CheckResult("gpu.xid", "fail", node="gpu01", value=1, unit="Xids", detail="Xid 79 -> reboot",
                            action="reboot")
    report = ClusterReport(report.cluster, report.level, report.started_at, report.finished_at,
                           (NodeResult("gpu01", report.nodes[0].checks + (xid_check,), "H100-SXM"),) + report.nodes[1:],
                           report.checks, report.network)
    document = json_report.to_document(report)
    jsonschema.validate(document, json_report.schema())
    checks = document["nodes"][0]["checks"]
    assert checks[-1]["action"] == "reboot" and checks[0]["action"] is None
    assert tuple(int(p) for p in document["schema_version"].split(".")) >= (1, 1)  # "action" came in 1.1
    case = next(c for c in ET.fromstring(junit.render(report)).iter("testcase") if c.get("name") == "gpu.xid")
    assert "action reboot" in case.find("failure").text
    assert "<td>reboot</td>" in html.render(report)
    checks[-1]["action"] = "Reboot now!"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, json_report.schema())
