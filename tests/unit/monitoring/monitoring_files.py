"""Where the monitoring role's files and their tests are (a plain module: `from conftest import` would be ambiguous
beside tests/unit/conftest.py)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FILES = REPO / "playbooks" / "roles" / "monitoring" / "files"
RULES = FILES / "rules"
DASHBOARDS = FILES / "dashboards"
RULE_TESTS = Path(__file__).resolve().parent / "rules"
