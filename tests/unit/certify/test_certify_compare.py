"""gpubench against PyTorch: best of the rounds, the 90 % rule for GEMM and copy, the command's exit codes."""
from __future__ import annotations

import json
import sys

import pytest

from provision.certify.gpubench import build, compare

STUB = """#!{python}
# Stands in for gpubench or torch_reference at the process boundary: same options, same JSON shape.
import json, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
assert args["--size"] == "4096" and args["--copy-mib"] == "1024", args
print(json.dumps({{"tool": "{tool}", "device": int(args["--device"]), "name": "NVIDIA H100 80GB HBM3", "error": None,
                  "gemm_bf16": {{"tflops": {gemm}}}, "copy": {{"gb_per_s": {copy}}},
                  "h2d": {{"gb_per_s": 50.1}}, "d2h": {{"gb_per_s": 49.0}}}}))
"""


def doc(gemm=None, copy=None, error=None):
    out = {"error": error}
    if gemm is not None:
        out["gemm_bf16"] = {"tflops": gemm}
    if copy is not None:
        out["copy"] = {"gb_per_s": copy}
    return out


def test_best_round_is_kept_and_failed_rounds_ignored():
    docs = [doc(700, 3000), doc(780, 2900), doc(999, 9999, error="cuBLAS status 13")]
    assert compare.best(docs, "gemm_bf16", "tflops") == 780
    assert compare.best(docs, "copy", "gb_per_s") == 3000
    assert compare.best([doc(error="no GPU")], "copy", "gb_per_s") is None


def test_ninety_percent_of_pytorch_passes_and_less_fails():
    rows = {r.metric: r for r in compare.compare([doc(711, 2700)], [doc(790, 3000)])}
    assert rows["gemm_bf16"].ratio == 0.9 and rows["gemm_bf16"].verdict == "pass"
    assert rows["copy"].verdict == "pass"
    rows = compare.compare([doc(700, 2700)], [doc(790, 3000)])
    assert {r.metric: r.verdict for r in rows}["gemm_bf16"] == "fail" and not compare.passed(rows)


def test_a_required_metric_one_tool_missed_fails_and_host_copies_are_reported_only():
    rows = {r.metric: r for r in compare.compare([doc(790)], [doc(790, 3000)])}
    assert rows["copy"].verdict == "missing" and rows["h2d"].verdict == "info"
    assert not compare.passed(list(rows.values()))
    assert "reported only" in compare.render(list(rows.values()))


def stub(tmp_path, name, gemm, copy):
    path = tmp_path / name
    path.write_text(STUB.format(python=sys.executable, tool=name, gemm=gemm, copy=copy))
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("gemm, code", [(760.0, 0), (600.0, 1)])
def test_command_interleaves_rounds_and_exits_on_the_ratio(tmp_path, monkeypatch, capsys, gemm, code):
    binary = stub(tmp_path, "gpubench", gemm, 2950.0)
    monkeypatch.setattr(compare, "compile_gpubench", lambda workdir: binary)
    monkeypatch.setattr(compare, "TORCH_REFERENCE", [str(stub(tmp_path, "torch", 790.0, 3000.0))])
    out = tmp_path / "out"
    assert compare.main(["--rounds", "2", "--size", "4096", "--no-probe", "--out", str(out)]) == code
    printed = capsys.readouterr().out
    assert printed.count("round 1 ") == 2 and printed.count("round 2 ") == 2
    saved = json.loads((out / "compare.json").read_text())
    assert len(saved["gpubench"]) == len(saved["torch"]) == 2
    gemm_row = next(r for r in saved["rows"] if r["metric"] == "gemm_bf16")
    assert gemm_row["ratio"] == round(gemm / 790.0, 3) and f"{gemm_row['ratio']:.1%}" in printed


def test_without_a_gpu_the_command_says_so_and_exits_2(capsys):
    if build.nvcc() is None:
        pytest.skip("nvcc is not installed")
    code = compare.main(["--rounds", "1", "--size", "256", "--iters", "1", "--warmup", "1", "--no-probe"])
    captured = capsys.readouterr()
    if code == 2:  # this machine has no usable GPU or no torch: the error says what is missing
        assert "no round measured anything" in captured.err and "error:" in captured.out
    else:  # a GPU machine with torch: the table was printed and judged
        assert code in (0, 1) and "gemm_bf16" in captured.out


def test_probe_line_shows_value_and_why():
    check = {"check": "gpu.gemm_bf16", "subject": "gpu0", "verdict": "pass", "value": 771.2, "unit": "TFLOP/s",
             "threshold": 675.3, "detail": ""}
    line = compare.probe_line(check)
    assert "gpu.gemm_bf16" in line and "771.2 TFLOP/s" in line and "threshold 675.3" in line
    assert compare.probe_line({**check, "value": None, "detail": "persistence mode off"}).endswith(
        "persistence mode off")


def test_probe_run_is_judged_into_gpu_checks(tmp_path):
    doc, checks = compare.probe_node(stub(tmp_path, "gpubench", 790.0, 3000.0), 120)
    assert doc["mode"] == "probe" and doc["level"] == "standard"
    by_id = {c["check"]: c for c in checks}
    assert {"gpu.nvml", "gpu.bench", "gpu.xid"} <= set(by_id) and all(c["check"].startswith("gpu.") for c in checks)
    if not doc["nvml"]["available"]:  # no GPU here: not applicable, and the reason is carried to the line
        assert by_id["gpu.nvml"]["verdict"] == "na" and doc["nvml"]["reason"] in compare.probe_line(by_id["gpu.nvml"])
