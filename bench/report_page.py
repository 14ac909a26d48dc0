"""Render the HTML report of a 1,000-node, 8,000-GPU certification and load it in headless Chromium; print the
seconds of each (the issue's bound on loading and rendering that page is 5 s, measured here, not in a timed test).

The synthetic run is the one tests/unit/certify/test_report_scale.py checks for size, order and content.
Run: .venv/bin/python bench/report_page.py [--nodes 1000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests" / "unit" / "certify" / "test_report_scale.py"


def _scale_module():
    """The test module that builds the synthetic run (imported by path: tests are no package)."""
    spec = importlib.util.spec_from_file_location("report_scale", TESTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(nodes: int, repeat: int) -> dict:
    scale = _scale_module()
    from provision.certify.report import html
    report = scale.synthetic_report(nodes)
    began = time.monotonic()
    page = html.render(report)
    render_s = time.monotonic() - began
    loads = []
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "report.html"
        path.write_text(page)
        for attempt in range(repeat):
            _, errors, spent = scale.run_chromium(path, Path(work) / f"profile{attempt}", "--dump-dom")
            if errors:
                raise SystemExit(f"Chromium reported errors: {errors[:3]}")
            loads.append(round(spent, 2))
    return {"nodes": nodes, "html_bytes": len(page.encode()), "render_s": round(render_s, 2),
            "chromium_load_s": loads, "chromium_best_s": min(loads)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure(args.nodes, args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
