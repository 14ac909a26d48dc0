"""The probe's documents recorded on a real H200 (driver 580.159.04; bench/gpu_session.sh, tests/fixtures/certify/h200),
judged by today's code: as root every GPU check passes or is n/a on a one-GPU node; as a non-root user everything is
the same but gpu.xid, which warns: the kernel log is not readable there (why certify's probe stays root's)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.certify.judging.assemble import assemble
from provision.certify.probe.document import ProbeDocument
from provision.records import NodeInfo

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "certify" / "h200"
NODE = NodeInfo(name="vm", group="gpu", roles=("compute",), gpu_model="H200-SXM", gpu_count=1)


def judged(name: str) -> dict[tuple[str, str | None], tuple[str, str]]:
    doc = ProbeDocument.from_dict(json.loads((H200 / name).read_text()))
    assert doc.error is None, doc.error
    report = assemble(cluster="h200", level="standard", nodes=[NODE], probes={"vm": doc},
                      started_at="2026-11-28T17:27:21Z", finished_at="2026-11-28T17:27:23Z")
    [node] = report.nodes
    return {(c.check, c.subject): (c.verdict, c.detail) for c in node.checks if c.check.startswith("gpu.")}


def test_the_h200_passes_as_root():
    found = judged("probe_standard_root.json")
    assert {v for v, _ in found.values()} <= {"pass", "na"}
    assert found[("gpu.model", "gpu0")][0] == "pass" and found[("gpu.gemm_bf16", "gpu0")][0] == "pass"
    assert found[("gpu.xid", None)][0] == "pass"


@pytest.mark.parametrize("name", ["probe_standard_root.json", "probe_standard_user.json"])
def test_the_measurements_clear_the_h200_floors(name):
    doc = json.loads((H200 / name).read_text())
    figures = {m["metric"]: m["value"] for m in doc["measurements"]}
    assert figures["gpu.gemm_bf16"] > 675.3 and figures["gpu.copy_bw"] > 4000  # TFLOP/s, GB/s read + written
    assert figures["gpu.h2d_bw"] > 48.0 and figures["gpu.d2h_bw"] > 48.0  # PCIe Gen5 x16 floor


def test_as_a_user_only_the_xid_check_differs_and_it_warns_naming_the_kernel_log():
    root, user = judged("probe_standard_root.json"), judged("probe_standard_user.json")
    assert root.keys() == user.keys()
    differ = {key for key in root if root[key][0] != user[key][0]}
    assert differ == {("gpu.xid", None)}
    assert user[("gpu.xid", None)][0] == "warn" and "kernel log unreadable" in user[("gpu.xid", None)][1]
