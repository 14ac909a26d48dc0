"""`certify --level` says what the level adds on this cluster, and what of it is skipped there and why."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from provision.certify import levels
from provision.certify.control.run import FS_SIZE_MIB
from provision.cli.main import app
from provision.cluster import lifecycle
from provision.spec import loader
from provision.spec.model import ClusterSpec


def _spec(gpu_nodes: int, filesystem: str = "none") -> ClusterSpec:
    groups = [{"name": "ctl", "roles": ["controller"], "count": 1},
              {"name": "cpu", "roles": ["compute"], "count": 2, "partition": "batch", "default_partition": True}]
    if gpu_nodes:
        groups.append({"name": "gpu", "roles": ["compute"], "count": gpu_nodes, "partition": "gpu",
                       "gpu": {"model": "H100-SXM", "count": 8}})
    fs = {"type": filesystem, "server": "nfs01", "remote_path": "/export"} if filesystem == "nfs" else {"type": "none"}
    return ClusterSpec.model_validate({"name": "unit", "provider": {"type": "static"}, "node_groups": [
        {**g, "addresses": [f"10.0.{i}.{n + 1}" for n in range(g["count"])]} for i, g in enumerate(groups)],
        "filesystem": fs})


def test_standard_without_gpus_says_the_gpu_checks_are_skipped_and_why():
    [note] = levels.explain("standard", _spec(0))
    assert note.runs == ()
    assert note.line() == (
        "standard adds: nothing this cluster can run; skipped here, no GPU nodes: GPU benchmarks (BF16 GEMM, memory "
        "and PCIe bandwidth), NCCL all_reduce within each GPU node, NCCL all_reduce across the GPU nodes, DCGM "
        f"diagnostic level 2; no shared filesystem: a {FS_SIZE_MIB['standard']} MiB shared filesystem test")


def test_one_gpu_node_skips_only_nccl_across_nodes():
    [note] = levels.explain("standard", _spec(1, "nfs"))
    assert "GPU benchmarks (BF16 GEMM, memory and PCIe bandwidth)" in note.runs
    assert note.skipped == (("NCCL all_reduce across the GPU nodes", "one GPU node only"),)


@pytest.mark.parametrize("level, shown", [("quick", ["quick"]), ("standard", ["standard"]),
                                          ("full", ["standard", "full"])])
def test_each_level_above_quick_is_explained_on_top_of_the_one_below(level, shown):
    assert [n.level for n in levels.explain(level, _spec(2, "nfs"))] == shown
    assert all(not n.skipped for n in levels.explain(level, _spec(2, "nfs")))


def test_certify_prints_the_explanation_before_it_runs(monkeypatch, tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("unused")
    monkeypatch.setattr(loader, "load_spec", lambda path: _spec(0))

    def certify(spec_, options, progress):
        progress("certify ran")
        raise SystemExit(0)
    monkeypatch.setattr(lifecycle, "certify", certify)
    done = CliRunner().invoke(app, ["certify", str(spec), "--level", "standard"])
    shown = done.output
    assert shown.index("- standard adds: nothing this cluster can run; skipped here, no GPU nodes: GPU "
                       "benchmarks") < shown.index("- certify ran")
