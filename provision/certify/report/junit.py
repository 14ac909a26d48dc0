"""The report as JUnit XML: a test suite per node (and one for cluster-wide checks), a test case per check.

fail -> <failure>, na -> <skipped>, warn -> a passing case whose <system-out> starts with "WARN", so CI
systems show warnings without failing the build on them. A partial run (some nodes measured against peers in
service) says so in the name of the <testsuites> ("certify demo (partial: 1 node (compute05) against peers ...)")
and names its cross-node suite "partial" instead of "cluster".

Durations: a suite's time is the run's wall time (every node's checks ran within it, side by side), or the sum
of its cases if that is more. A check whose value is in seconds takes that as its time; the suite's remaining
time is shared evenly by its other checks, so the cases of a suite add up to the wall time. A report whose
start or finish is not ISO 8601 has no wall time: then only measured seconds are non-zero.

Size: a 1,000-node run has a net.pairwise_bw result per ordered pair (999,000). When one check id has more than
FOLD_ABOVE results in a suite, its passing results become one case ("net.pairwise_bw[998990 passing]") holding
their time and value range; its failures, warnings and n/a stay a case each. report.json keeps every result.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport
from provision.certify.report.summary import is_number, wall_seconds

CLUSTER_SUITE = "cluster"
PARTIAL_SUITE = "partial"  # the cluster-wide suite of a partial run: its checks span the nodes certified and peers
FOLD_ABOVE = 64  # results of one check id in one suite above which the passing ones are folded into one case


def case_name(check: CheckResult) -> str:
    """A check's test case name: its id, and its subject in brackets when it has one."""
    return f"{check.check}[{check.subject}]" if check.subject else check.check


def _describe(check: CheckResult) -> str:
    value = "" if check.value is None else f"{check.value}{' ' + check.unit if check.unit else ''}"
    parts = [f"value {value}" if value else "", f"threshold {check.threshold}" if check.threshold is not None else "",
             f"source {check.source}" if check.source else "", check.detail,
             f"action {check.action}" if check.action else ""]
    return "; ".join(p for p in parts if p)


def measured_seconds(check: CheckResult) -> float | None:
    """The check's own duration: its value when that is a non-negative number of seconds."""
    if check.unit == "s" and is_number(check.value) and check.value >= 0:
        return float(check.value)
    return None


def durations(checks: list[CheckResult], wall_s: float) -> list[float]:
    """Seconds per check: measured where the check has them, the rest of the wall time shared by the others."""
    measured = [measured_seconds(c) for c in checks]
    others = sum(m is None for m in measured)
    share = max(wall_s - sum(m for m in measured if m is not None), 0.0) / others if others else 0.0
    return [share if m is None else m for m in measured]


def seconds(value: float) -> str:
    """A JUnit time attribute: seconds with microsecond resolution."""
    return f"{value:.6f}"


def fold(checks: list[CheckResult], times: list[float]) -> list[tuple[CheckResult, float]]:
    """(case, seconds): the passing results of an id with more than FOLD_ABOVE results become one case."""
    per_id: dict[str, int] = {}
    for check in checks:
        per_id[check.check] = per_id.get(check.check, 0) + 1
    folded: dict[str, list[tuple[CheckResult, float]]] = {}
    out: list[tuple[CheckResult, float]] = []
    for check, spent in zip(checks, times):
        if per_id[check.check] > FOLD_ABOVE and check.verdict == "pass":
            if check.check not in folded:
                folded[check.check] = []
                out.append((check, -1.0))  # the folded case's place: the first passing result's
            folded[check.check].append((check, spent))
        else:
            out.append((check, spent))
    return [_folded(c.check, folded[c.check]) if spent < 0 else (c, spent) for c, spent in out]


def _folded(check_id: str, results: list[tuple[CheckResult, float]]) -> tuple[CheckResult, float]:
    values = [c.value for c, _ in results if is_number(c.value)]
    unit = next((c.unit for c, _ in results if c.unit), None)
    spread = f"values {min(values):g} to {max(values):g}{' ' + unit if unit else ''}; " if values else ""
    summary = CheckResult(check_id, "pass", subject=f"{len(results)} passing",
                          detail=f"{spread}each result is in report.json")
    return summary, sum(spent for _, spent in results)


def _suite(parent: ET.Element, cluster: str, name: str, checks: list[CheckResult], wall_s: float) -> int:
    """Add the suite; the number of test cases it holds."""
    cases = fold(checks, durations(checks, wall_s))
    suite = ET.SubElement(parent, "testsuite", name=name, tests=str(len(cases)),
                          failures=str(sum(c.verdict == "fail" for c in checks)), errors="0",
                          skipped=str(sum(c.verdict == "na" for c in checks)),
                          time=seconds(max(wall_s, sum(spent for _, spent in cases))))
    for check, spent in cases:
        case = ET.SubElement(suite, "testcase", name=case_name(check), classname=f"{cluster}.{name}",
                             time=seconds(spent))
        text = _describe(check)
        if check.verdict == "fail":
            ET.SubElement(case, "failure", message=text[:500] or check.check, type="fail").text = text
        elif check.verdict == "na":
            ET.SubElement(case, "skipped", message=text[:500] or "not applicable")
        ET.SubElement(case, "system-out").text = f"{check.verdict.upper()}: {text}"
    return len(cases)


def render(report: ClusterReport) -> str:
    """JUnit XML text with an XML declaration."""
    wall_s = wall_seconds(report) or 0.0
    name = f"certify {report.cluster}" + (f" ({report.scope.headline()})" if report.scope.partial else "")
    root = ET.Element("testsuites", name=name, failures=str(report.counts()["fail"]),
                      errors="0", skipped=str(report.counts()["na"]), time=seconds(wall_s))
    cases = sum(_suite(root, report.cluster, node.name, list(node.checks), wall_s) for node in report.nodes)
    if report.checks:
        suite = PARTIAL_SUITE if report.scope.partial else CLUSTER_SUITE
        cases += _suite(root, report.cluster, suite, list(report.checks), wall_s)
    root.set("tests", str(cases))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
