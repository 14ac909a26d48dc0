"""`dcgmi diag -j` output: every test DCGM ran, its status per GPU, and the messages it gave.

Standard library only: the node probe runs it. Three layouts are read:
- DCGM 2.x and 3.x: `{"DCGM GPU Diagnostic": {"test_categories": [...]}, "version": ...}`; each test
  has `results` with `gpu_ids` (nvvs) or `gpu_id` (dcgmi), `status`, `warnings` as a string (dcgmi)
  or a list of `{"warning", "error_id"}` (nvvs), `info` as a string or list; level-1 deployment
  tests carry no GPU id; null entries may stand in the test list (nvvs 3.1);
- DCGM 4.x: `{"DCGM Diagnostic": {"test_categories": [...]}, "metadata": {"version", ...}}`; results
  carry `entity_group`/`entity_id`, a list of warning objects and a `test_summary`;
- a `runtime_error` instead of results when DCGM could not run the diagnostic at all.
Text before the document (nvvs' own warnings, "Successfully ran diagnostic") is skipped.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from provision.certify.probe.parse_errors import LAST, ParseError, failure, guarded

ROOTS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")  # 4.x, then 2.x/3.x
STATUSES = ("pass", "warn", "fail", "skip", "not run")
_RANK = {"not run": 0, "skip": 1, "pass": 2, "warn": 3, "fail": 4}
# 2.x/3.x display names that 4.x renamed, and older spellings of the same test
ALIASES = {"gpu_memory": "memory", "eud_test": "eud", "cpu_eud_test": "cpu_eud", "blacklist": "denylist",
           "permissions_and_os_related_blocks": "permissions_and_os_blocks",
           "environmental_variables": "environment_variables"}


@dataclass(frozen=True)
class DcgmResult:
    """One test's outcome on one entity (a GPU), or on all of them for deployment tests."""

    entity: str | None  # "GPU0", "GPUs 0,1,2,3", None when DCGM names none
    status: str  # one of STATUSES
    warnings: tuple[str, ...] = ()
    info: tuple[str, ...] = ()


@dataclass(frozen=True)
class DcgmTest:
    """One DCGM test (plugin or deployment check) and its results."""

    name: str  # as DCGM prints it: "GPU Memory", "memory", "Persistence Mode"
    category: str  # Deployment, Integration, Hardware, Stress, ...
    status: str  # the test's overall status: its summary if given, else the worst result
    results: tuple[DcgmResult, ...]

    @property
    def key(self) -> str:
        """Stable, layout-independent name: "GPU Memory" (3.x) and "memory" (4.x) are both "memory"."""
        return normalise(self.name)


@dataclass(frozen=True)
class DcgmDiag:
    """A whole `dcgmi diag` run."""

    version: str | None
    driver: str | None
    tests: tuple[DcgmTest, ...]
    runtime_error: str | None = None


def normalise(name: str) -> str:
    """Test name -> check-id suffix: lower case, words joined by "_", older names mapped to 4.x names."""
    key = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return ALIASES.get(key, key) or "unnamed"  # a check id needs a word after "dcgm."


def status_of(value: Any) -> str:
    """DCGM's status text ("Pass", "PASS", "Not Run", ...) -> one of STATUSES; ParseError otherwise."""
    text = re.sub(r"[\s_]+", " ", str(value).strip().lower())
    if text not in STATUSES:
        raise ParseError("DCGM JSON has a status that is not Pass/Warn/Fail/Skip/Not Run", str(value))
    return text


def worst(statuses: list[str]) -> str:
    """The most severe status; "not run" when there is none."""
    return max(statuses, key=_RANK.__getitem__, default="not run")


def _texts(value: Any) -> tuple[str, ...]:
    """Warnings or info as DCGM gives them: a string, a list of strings, or a list of {"warning": ...}."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("warning") or item.get("message") or item.get("info")
        if item not in (None, ""):
            out.append(str(item).strip())
    return tuple(out)


def _entity(result: dict) -> str | None:
    if "entity_id" in result:
        return f"{result.get('entity_group') or 'GPU'}{result['entity_id']}"
    ids = result.get("gpu_ids", result.get("gpu_id"))
    if ids is None or ids == "":
        return None
    ids = str(ids)
    return f"GPU{ids}" if "," not in ids else f"GPUs {ids}"


def _result(result: Any) -> DcgmResult:
    if not isinstance(result, dict):
        raise ParseError("DCGM JSON has a result that is not an object", json.dumps(result))
    return DcgmResult(_entity(result), status_of(result.get("status")), _texts(result.get("warnings")),
                      _texts(result.get("info")))


def _test(test: dict, category: str) -> DcgmTest:
    name = str(test.get("name") or "").strip()
    if not name:
        raise ParseError("DCGM JSON has a test without a name", json.dumps(test)[:200])
    results = tuple(_result(r) for r in test.get("results") or [])
    summary = test.get("test_summary")
    if isinstance(summary, dict) and summary.get("status") is not None:
        results += _unplaced(_result(summary), results)
    return DcgmTest(name, category, worst([r.status for r in results]), results)


def _unplaced(summary: DcgmResult, results: tuple[DcgmResult, ...]) -> tuple[DcgmResult, ...]:
    """The 4.x test summary as a result of its own, with only the messages no entity's result carries
    (dcgmi writes every error of the test into the summary, those of the GPUs included)."""
    said = {m for r in results for m in r.warnings + r.info}
    warnings = tuple(m for m in summary.warnings if m not in said)
    info = tuple(m for m in summary.info if m not in said)
    if results and not warnings and not info and _RANK[summary.status] <= _RANK[worst([r.status for r in results])]:
        return ()
    return (DcgmResult(None, summary.status, warnings, info),)


def _tests(body: dict) -> tuple[DcgmTest, ...]:
    tests = []
    for category in body.get("test_categories") or []:
        if not isinstance(category, dict):
            continue
        name = str(category.get("category") or "")
        tests += [_test(t, name) for t in category.get("tests") or [] if isinstance(t, dict)]
    return tuple(tests)


def _document(text: str) -> dict:
    """The JSON object in the output: from the first line that opens one; ParseError quoting where it broke."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if start is None:
        raise failure("dcgmi printed no JSON document", lines, lambda _: False)
    body = "\n".join(lines[start:])
    try:
        doc, _ = json.JSONDecoder().raw_decode(body.lstrip())
    except json.JSONDecodeError as exc:
        shown = body.lstrip().splitlines()
        raise ParseError(f"dcgmi JSON is not valid ({exc.msg})", shown[min(exc.lineno, len(shown)) - 1]) from exc
    if not isinstance(doc, dict):
        raise ParseError("dcgmi JSON is not an object", lines[start])
    return doc


@guarded("dcgmi diag")
def parse(text: str) -> DcgmDiag:
    """Parse `dcgmi diag -j` output (2.x, 3.x or 4.x); ParseError when it holds neither results nor an error."""
    doc = _document(text)
    root = next((doc[name] for name in ROOTS if isinstance(doc.get(name), dict)), None)
    if root is None:
        raise ParseError(f"dcgmi JSON has none of {' / '.join(ROOTS)}", next(iter(doc), ""))
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    version = metadata.get("version") or doc.get("version") or root.get("version")
    driver = metadata.get("Driver Version Detected") or doc.get("Driver Version Detected")
    error = root.get("runtime_error")
    tests = _tests(root)
    if not tests and not error:
        raise ParseError("dcgmi JSON holds no test results", text.strip().splitlines()[-1], where=LAST)
    return DcgmDiag(str(version) if version else None, str(driver) if driver else None, tests,
                    str(error) if error else None)
