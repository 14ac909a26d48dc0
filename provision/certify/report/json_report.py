"""The report as a versioned JSON document; its JSON Schema ships beside this module."""
from __future__ import annotations

import json
from importlib import resources
from typing import Any

from provision.certify.judging import thresholds
from provision.certify.records import ClusterReport

SCHEMA_ID = "gpu-provision/certify-report"
SCHEMA_VERSION = "1.4"  # major bump when a field changes meaning or goes away; minor when one is added
# 1.1: a check may carry "action", what to do about it (e.g. "reset_gpu" for an Xid); null when none applies
# 1.2: "tool_version" and "spec_digest" in the header; per node its "group" and "inventory" (kernel, OS, Slurm,
#      NCCL, driver, CUDA, VBIOS per GPU; null when the probe did not run there)
# 1.3: "scope": what the run certified, {"kind": "full"} or {"kind": "partial", "nodes": the nodes certified,
#      "peers": the in-service nodes they were measured against (never judged), "note": how the peers were chosen};
#      a report without it was a full run
# 1.4: "network"."sampling": which pairs the matrix measured, {"kind": "all pairs" | "sampled", "seed" (replays a
#      sampled schedule), "rounds", "pairs", "matchings"}; null (or absent) in a report from before: every pair
SCHEMA_FILE = "report-v1.schema.json"


def to_document(report: ClusterReport) -> dict[str, Any]:
    """The report as plain data, with the schema id and version and the threshold table it was judged by."""
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "cluster": report.cluster,
        "tool_version": report.tool_version,
        "spec_digest": report.spec_digest,
        "level": report.level,
        "scope": report.scope.to_dict(),
        "started_at": report.started_at,
        "finished_at": report.finished_at,
        "verdict": report.verdict,
        "counts": report.counts(),
        "nodes": [n.to_dict() for n in report.nodes],
        "checks": [c.to_dict() for c in report.checks],
        "network": report.network.to_dict() if report.network else None,
        "thresholds": [{"metric": t.metric, "key": t.key, "value": t.value, "unit": t.unit,
                        "reference": t.reference, "source": t.source, "derivation": t.derivation}
                       for t in thresholds.TABLE],
    }


def render(report: ClusterReport) -> str:
    """Pretty JSON text of the document."""
    return json.dumps(to_document(report), indent=2, sort_keys=False) + "\n"


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) the document follows."""
    text = resources.files("provision.certify.report").joinpath(SCHEMA_FILE).read_text()
    return json.loads(text)
