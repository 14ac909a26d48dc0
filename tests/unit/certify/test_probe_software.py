"""The node's software and firmware inventory: what the probe reads, how it reaches the report, and the odd nodes."""
from __future__ import annotations

import sys
from dataclasses import replace

import certify_fake_nvml as fakes
import jsonschema
from test_certify_assemble import NAMES, NODES, probe_doc, typed
from test_certify_report import sample_report

from provision.certify.judging.assemble import assemble, node_inventory
from provision.certify.probe import nvml, software
from provision.certify.probe.document import ProbeDocument
from provision.certify.records import NodeInventory
from provision.certify.report import html, inventory, json_report

PY = sys.executable
MISSING = ("/nonexistent/gpu-provision-test-tool",)


def say(text: str, rc: int = 0) -> tuple[str, ...]:
    """A command that prints `text` and exits with `rc`."""
    return (PY, "-c", f"import sys; sys.stdout.write({text!r}); sys.exit({rc})")


def test_os_name_is_pretty_name_else_name_and_version(tmp_path):
    pretty, plain = tmp_path / "a", tmp_path / "b"
    pretty.write_text('NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_ID="12"\n')
    plain.write_text("NAME=Rocky\nVERSION_ID='9.4'\n# PRETTY_NAME=commented\n")
    assert software.os_name((tmp_path / "missing", pretty)) == "Debian GNU/Linux 12 (bookworm)"
    assert software.os_name((plain,)) == "Rocky 9.4"
    assert software.os_name((tmp_path / "missing",)) == software.NA


def test_slurm_version_from_the_first_command_that_names_it():
    assert software.slurm_version((MISSING, say("slurm-wlm 22.05.8\n"))) == "22.05.8"
    assert software.slurm_version((say("slurm 24.11.1\n"),)) == "24.11.1"
    assert software.slurm_version((say("bash: command not found", rc=127), say("garbage"))) == software.NA
    assert software.slurm_version((MISSING,)) == software.NA


def test_nccl_version_from_the_package_else_the_library_file(tmp_path):
    assert software.nccl_version((say("2.26.2-1+cuda12.8"),), ()) == "2.26.2-1+cuda12.8"
    (tmp_path / "libnccl.so.2").touch()
    (tmp_path / "libnccl.so.2.21.5").touch()
    assert software.nccl_version((MISSING, say("", rc=1)), (tmp_path / "none", tmp_path)) == "2.21.5"
    assert software.nccl_version((MISSING,), (tmp_path / "none",)) == software.NA


def test_a_command_that_outlasts_its_timeout_gives_nothing():
    assert software.run((PY, "-c", "import time; time.sleep(30)"), timeout_s=0.5) == ""


def test_read_never_raises_and_gives_a_string_for_every_entry():
    found = software.read()
    assert all(isinstance(v, str) and v for v in found.to_dict().values())
    assert software.SoftwareInventory.from_dict(found.to_dict()) == found
    assert software.SoftwareInventory.from_dict({"kernel": 5, "os": None}) == software.SoftwareInventory()


def test_vbios_is_read_per_gpu_and_n_a_where_unsupported(fake):
    fake([fakes.FakeGpu(vbios="96.00.74.00.01"),
          fakes.FakeGpu(unsupported={"nvmlDeviceGetVbiosVersion"})])
    snap = nvml.snapshot()
    assert snap.gpus[0].vbios == "96.00.74.00.01"
    assert snap.gpus[1].vbios is None and "vbios" in snap.gpus[1].unsupported


def with_software(node: str, kernel: str = "6.1.0-28-amd64", vbios: tuple[str, ...] = ("96.00.74.00.01",) * 2,
                  slurm: str = "22.05.8") -> dict:
    doc = probe_doc(node)
    doc["software"] = {"kernel": kernel, "os": "Debian GNU/Linux 12 (bookworm)", "slurm": slurm, "nccl": "2.26.2-1"}
    doc["nvml"] = {"available": True, "driver_version": "570.86.15", "cuda_driver_version": "12.8",
                   "gpus": [{"index": i, "vbios": v} for i, v in enumerate(vbios)]}
    return doc


def test_the_node_inventory_comes_from_the_probe_document_and_survives_its_json():
    doc = ProbeDocument.from_dict(with_software("gpu01"))
    assert node_inventory(doc) == NodeInventory("6.1.0-28-amd64", "Debian GNU/Linux 12 (bookworm)", "22.05.8",
                                                 "2.26.2-1", "570.86.15", "12.8", ("96.00.74.00.01",) * 2)
    bare = ProbeDocument.from_dict(probe_doc("gpu01"))  # an older probe: no software reading, no NVML
    assert node_inventory(bare) == NodeInventory(*(["n/a"] * 6))
    assert node_inventory(ProbeDocument.failed("srun failed")) is None


def inventory_report(docs: dict):
    return assemble(cluster="c1", level="standard", nodes=NODES, probes=typed(docs), started_at="t0",
                    finished_at="t1", spec_digest="sha256:" + "ab" * 32)


def test_report_json_carries_group_inventory_tool_version_and_spec_digest():
    report = inventory_report({n: with_software(n) for n in NAMES})
    document = json_report.to_document(report)
    jsonschema.validate(document, json_report.schema())
    major, minor = map(int, document["schema_version"].split("."))
    assert (major, minor) >= (1, 2) and document["spec_digest"] == "sha256:" + "ab" * 32  # 1.2 added them
    assert document["tool_version"] and document["nodes"][0]["group"] == "gpu"
    assert document["nodes"][0]["inventory"]["vbios"] == ["96.00.74.00.01"] * 2
    assert document["nodes"][0]["inventory"]["slurm"] == "22.05.8"


def test_nodes_that_differ_from_their_group_are_marked():
    docs = {n: with_software(n) for n in NAMES}
    docs["gpu02"] = with_software("gpu02", kernel="6.1.0-31-amd64")
    docs["gpu04"] = with_software("gpu04", vbios=("96.00.74.00.01", "96.00.99.00.01"))
    table = inventory.inventory(inventory_report(docs))
    assert table.odd_nodes == ("gpu02", "gpu04")
    row = {r.node: r for r in table.rows}
    assert [c for c, odd in zip(table.columns, row["gpu02"].odd) if odd] == ["kernel"]
    assert dict(zip(table.columns, row["gpu04"].entries))["VBIOS"] == "96.00.74.00.01 (gpu0), 96.00.99.00.01 (gpu1)"
    page = html.render(inventory_report(docs))
    assert '<td class="odd">6.1.0-31-amd64</td>' in page and "2 node(s) run something other" in page
    assert page.count('class="odd-node"') == 2 and 'id="spec-digest"' in page


def test_a_tie_or_an_unknown_entry_marks_no_node():
    docs = {n: with_software(n, slurm="22.05.8" if i < 2 else "23.02.1") for i, n in enumerate(NAMES[:4])}
    docs["gpu05"] = with_software("gpu05", slurm="n/a")
    table = inventory.inventory(inventory_report(docs))
    assert table.odd_nodes == ()


def test_a_schema_1_1_report_shows_driver_and_cuda_from_its_checks():
    report = sample_report()
    nodes = tuple(replace(n, checks=n.checks + (
        replace(n.checks[0], check="gpu.driver.version", value="570.86.15"),)) for n in report.nodes)
    table = inventory.inventory(replace(report, nodes=nodes))
    assert table.columns == ("GPU model", "NVIDIA driver") and table.rows[0].entries == ("H100-SXM", "570.86.15")
