"""The report as JUnit XML: a test suite per node (and one for cluster-wide checks), a test case per check.

fail -> <failure>, na -> <skipped>, warn -> a passing case whose <system-out> starts with "WARN", so CI
systems show warnings without failing the build on them.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport

CLUSTER_SUITE = "cluster"


def case_name(check: CheckResult) -> str:
    """A check's test case name: its id, and its subject in brackets when it has one."""
    return f"{check.check}[{check.subject}]" if check.subject else check.check


def _describe(check: CheckResult) -> str:
    value = "" if check.value is None else f"{check.value}{' ' + check.unit if check.unit else ''}"
    parts = [f"value {value}" if value else "", f"threshold {check.threshold}" if check.threshold is not None else "",
             f"source {check.source}" if check.source else "", check.detail,
             f"action {check.action}" if check.action else ""]
    return "; ".join(p for p in parts if p)


def _suite(parent: ET.Element, cluster: str, name: str, checks: list[CheckResult]) -> None:
    suite = ET.SubElement(parent, "testsuite", name=name, tests=str(len(checks)),
                          failures=str(sum(c.verdict == "fail" for c in checks)), errors="0",
                          skipped=str(sum(c.verdict == "na" for c in checks)), time="0")
    for check in checks:
        case = ET.SubElement(suite, "testcase", name=case_name(check), classname=f"{cluster}.{name}", time="0")
        text = _describe(check)
        if check.verdict == "fail":
            ET.SubElement(case, "failure", message=text[:500] or check.check, type="fail").text = text
        elif check.verdict == "na":
            ET.SubElement(case, "skipped", message=text[:500] or "not applicable")
        ET.SubElement(case, "system-out").text = f"{check.verdict.upper()}: {text}"


def render(report: ClusterReport) -> str:
    """JUnit XML text with an XML declaration."""
    root = ET.Element("testsuites", name=f"certify {report.cluster}", tests=str(len(report.all_checks())),
                      failures=str(report.counts()["fail"]), errors="0", skipped=str(report.counts()["na"]))
    for node in report.nodes:
        _suite(root, report.cluster, node.name, list(node.checks))
    if report.checks:
        _suite(root, report.cluster, CLUSTER_SUITE, list(report.checks))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
