"""promtool for the rule and dashboard tests: unpacked by `make promtool`; a test that needs it fails without it, never
skips."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from monitoring_files import REPO

PROMTOOL = REPO / "build" / "prometheus-tools" / "usr" / "bin" / "promtool"


def find_promtool() -> Path:
    """build/prometheus-tools/usr/bin/promtool (`make promtool`), else promtool on PATH; the test fails without one."""
    if PROMTOOL.is_file():
        return PROMTOOL
    found = shutil.which("promtool")
    if found:
        return Path(found)
    pytest.fail(f"promtool is missing: run `make promtool` (it unpacks Debian's prometheus package into "
                f"{PROMTOOL.relative_to(REPO).parents[2]}), or put a promtool on PATH", pytrace=False)


@pytest.fixture(scope="session")
def promtool() -> Path:
    """The promtool the rule tests run."""
    return find_promtool()
