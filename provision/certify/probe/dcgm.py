"""DCGM's own diagnostic beside our checks: `dcgmi diag -r <1|2|3> -j`, one check per DCGM test.

The run level follows the probe level (quick 1, standard 2, full 3) and is bounded so the probe stays
within the runner's time for its level. It runs after gpubench, so the GPUs are idle as DCGM wants
them. Each DCGM test becomes `dcgm.<test>` (`dcgm.memory`, `dcgm.pcie`, `dcgm.diagnostic`, ...; DCGM
3.x display names are mapped to the 4.x names) with DCGM's status as verdict (Skip and Not Run are
n/a) and DCGM's message as detail. Without dcgmi, or without GPUs, one `dcgm.diag` check says so;
output that cannot be read, a timeout or a DCGM runtime error fail `dcgm.diag` with the reason.
"""
from __future__ import annotations

import shutil
import subprocess

from provision.certify.probe import dcgm_json as dcgm
from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.parse_errors import ParseError
from provision.certify.probe.records import CheckResult

RUN_LEVEL = {"quick": 1, "standard": 2, "full": 3}
TIMEOUT_S = {"quick": 60, "standard": 600, "full": 3600}  # within run.PROBE_TIMEOUT_S of each level
VERDICT = {"pass": "pass", "warn": "warn", "fail": "fail", "skip": "na", "not run": "na"}
RUN_CHECK = "dcgm.diag"
MAX_DETAIL = 400


def command(level: str) -> list[str]:
    """The dcgmi command line for a probe level."""
    return ["dcgmi", "diag", "-r", str(RUN_LEVEL[level]), "-j"]


def run(expect: NodeExpectation, level: str, *, has_gpus: bool) -> list[CheckResult]:
    """Run the diagnostic where it can run; always at least one check."""
    if not has_gpus:
        return [_run_check(expect.node, "na", "no GPU on this node")]
    if shutil.which("dcgmi") is None:
        return [_run_check(expect.node, "na", "dcgmi not installed")]
    argv, timeout = command(level), TIMEOUT_S[level]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return [_run_check(expect.node, "fail", f"`{' '.join(argv)}` did not finish within {timeout} s")]
    except OSError as exc:
        return [_run_check(expect.node, "fail", f"`{' '.join(argv)}` could not start: {exc}")]
    return judge_output(done.stdout, expect.node, level, exit_code=done.returncode, stderr=done.stderr)


def judge_output(text: str, node: str, level: str, *, exit_code: int | None = None,
                 stderr: str = "") -> list[CheckResult]:
    """Checks from the output of `dcgmi diag -j`; never raises, whatever the output holds."""
    try:
        diag = dcgm.parse(text)
    except ParseError as exc:
        extra = f" (exit {exit_code})" if exit_code not in (None, 0) else ""
        if not text.strip() and stderr.strip():
            extra += f"; stderr: {stderr.strip().splitlines()[-1][:200]}"
        return [_run_check(node, "fail", f"{exc}{extra}")]
    source = f"dcgmi diag -r {RUN_LEVEL[level]}" + (f" (DCGM {diag.version})" if diag.version else "")
    if diag.runtime_error:
        return [_run_check(node, "fail", f"DCGM could not run the diagnostic: {diag.runtime_error}", source)]
    checks: dict[str, CheckResult] = {}
    for test in diag.tests:
        checks.setdefault(f"dcgm.{test.key}", test_check(test, node, source))
    return list(checks.values())


def test_check(test: dcgm.DcgmTest, node: str, source: str) -> CheckResult:
    """One DCGM test as a check: DCGM's verdict, the GPUs it concerns and what DCGM said."""
    bad = [r for r in test.results if r.status != "pass"]
    subject = ", ".join(r.entity for r in bad if r.entity) or None
    if test.status == "pass":
        entities = [r.entity for r in test.results if r.entity]
        detail = f"passed on {', '.join(entities)}" if entities else "passed"
    else:
        detail = "; ".join(_say(r) for r in bad) or f"DCGM reports {test.status}"
    return CheckResult(f"dcgm.{test.key}", VERDICT[test.status], node=node, subject=subject,
                       value=test.status, threshold="Pass", source=source, detail=_cut(detail))


def _say(result: dcgm.DcgmResult) -> str:
    words = " ".join(result.warnings) or " ".join(result.info)
    who = f"{result.entity} " if result.entity else ""
    return f"{who}{result.status}" + (f": {words}" if words else "")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL] + "..."


def _run_check(node: str, verdict: str, detail: str, source: str = "dcgmi diag") -> CheckResult:
    return CheckResult(RUN_CHECK, verdict, node=node, source=source, detail=_cut(detail))  # type: ignore[arg-type]
