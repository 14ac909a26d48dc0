"""One catalogue of check ids: every id the code emits is in it, each entry says where its threshold comes from,
and the judge's floors and the report's charts come from it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from provision.certify import catalogue
from provision.certify.catalogue import Check
from provision.certify.judging import thresholds
from provision.certify.report import charts

CERTIFY = Path(catalogue.__file__).resolve().parent
_ID = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")  # the report schema's pattern for a check id
_ID_CALLS = {"CheckResult", "Measurement", "result", "_run_check", "Sample"}


def _literal_ids(node: ast.AST) -> set[str]:
    """Strings a node holds that look like check ids (a.b), including inside tuples and f-string prefixes."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _ID.fullmatch(node.value):
        return {node.value}
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) and \
            _ID.fullmatch(f"{node.values[0].value}x"):
        return {f"{node.values[0].value}<name>"}  # e.g. f"dcgm.{key}": a family
    if isinstance(node, (ast.Tuple, ast.List)):
        return {i for element in node.elts for i in _literal_ids(element)}
    if isinstance(node, ast.Dict):
        return {i for value in node.values for i in _literal_ids(value)}
    return set()


def _about_checks(name: str) -> bool:
    return "check" in name.lower() or "metric" in name.lower()


def emitted_ids() -> dict[str, str]:
    """check id -> a file that emits it: first argument (or check=/metric=) of a record, or a `check` constant."""
    found: dict[str, str] = {}
    for path in CERTIFY.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            ids: set[str] = set()
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in _ID_CALLS and node.args:
                    ids |= _literal_ids(node.args[0])
                if _about_checks(name):  # e.g. gres_checks(step, output, "slurm.gres_single")
                    ids |= {i for arg in node.args for i in _literal_ids(arg)}
                ids |= {i for kw in node.keywords if kw.arg in ("check", "metric") for i in _literal_ids(kw.value)}
            elif isinstance(node, (ast.Assign, ast.For)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                if any(_about_checks(n) for n in names):
                    ids |= _literal_ids(node.value if isinstance(node, ast.Assign) else node.iter)
            elif isinstance(node, ast.arguments):  # def f(..., check: str = "slurm.gres")
                named = node.args[len(node.args) - len(node.defaults):]
                ids |= {i for arg, default in zip(named, node.defaults) if _about_checks(arg.arg)
                        for i in _literal_ids(default)}
            for check_id in ids:
                found.setdefault(check_id, str(path.relative_to(CERTIFY)))
    return found


def test_every_entry_says_where_its_threshold_comes_from():
    assert catalogue.problems() == []


def test_an_entry_without_a_threshold_source_is_refused():
    lacking = Check("gpu.new_metric", "gpu", "W", "a check someone added", threshold=" ")
    assert catalogue.problems(catalogue.ENTRIES + (lacking,)) == ["gpu.new_metric: no threshold source"]


def test_every_check_the_code_emits_is_in_the_catalogue():
    emitted = emitted_ids()
    assert len(emitted) > 50  # the scan sees the checks
    missing = {i: where for i, where in emitted.items() if catalogue.lookup(i.replace("<name>", "x")) is None}
    assert missing == {}


def test_every_catalogued_check_is_emitted_somewhere():
    emitted = {i.replace("<name>", "<test>") for i in emitted_ids()}
    assert [c.id for c in catalogue.ENTRIES if c.id not in emitted] == []


def test_floors_come_from_the_threshold_table_and_every_table_metric_serves_a_check():
    floored = {c.floor_table for c in catalogue.ENTRIES if c.floor_table}
    assert floored == {t.metric for t in thresholds.TABLE}
    assert all(c.floor_table for c in catalogue.ENTRIES if c.floor_by)


def test_the_report_charts_the_catalogue_entries_that_have_a_chart():
    assert charts.BAR_METRICS == catalogue.charts() and len(charts.BAR_METRICS) == 8
    assert all(catalogue.CHECKS[check].unit for check, _ in charts.BAR_METRICS)


def test_a_dcgm_test_belongs_to_the_dcgm_family():
    assert catalogue.lookup("dcgm.memory").id == "dcgm.<test>" and catalogue.lookup("dcgm.diag").id == "dcgm.diag"
    assert catalogue.lookup("gpu.unheard_of") is None


def test_the_readme_table_has_a_row_per_entry():
    table = catalogue.markdown_table().splitlines()
    assert len(table) == 2 + len(catalogue.ENTRIES) and table[2].startswith("| `node.reachable` |")
