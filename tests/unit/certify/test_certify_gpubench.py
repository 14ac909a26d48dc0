"""gpubench.cu compiles with nvcc against cuBLAS; the binary prints one JSON document (an error without a GPU)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from provision.certify.gpubench import build
from provision.certify.probe.bench import last_json

NVCC = build.nvcc()


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    out = tmp_path_factory.mktemp("gpubench") / "gpubench"
    cublas = None if build.toolkit_has_cublas() else build.wheel_cublas()
    assert cublas is not None or build.toolkit_has_cublas(), (
        "cuBLAS not found: install the CUDA toolkit's cuBLAS or the nvidia-cublas wheel (pip install nvidia-cublas)")
    done = subprocess.run(build.command(out, cublas_root=cublas), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_gpubench_compiles_and_prints_one_json_document(binary):
    done = subprocess.run([str(binary), "--device", "0", "--iters", "5", "--warmup", "2", "--size", "2048"],
                          capture_output=True, text=True, timeout=300)
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    doc = json.loads(lines[0])
    assert doc["tool"] == "gpubench" and doc["device"] == 0
    if doc["error"] is None:  # a GPU machine: every measurement present, copy counted both ways
        assert done.returncode == 0
        assert doc["gemm_bf16"]["tflops"] > 0 and doc["gemm_bf16"]["accumulate"] == "fp32"
        assert doc["copy"]["counts"] == "bytes read + bytes written"
        assert doc["h2d"]["gb_per_s"] > 0 and doc["d2h"]["gb_per_s"] > 0
    else:  # no GPU or driver here: the error is reported as JSON and the exit code says so
        assert done.returncode == 1 and "cuda" in doc["error"].lower()


def test_gpubench_rejects_unknown_options(binary):
    done = subprocess.run([str(binary), "--frobnicate", "1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown option" in done.stderr


def test_last_json_reads_the_document_after_noise():
    assert last_json('warning\n{"tool": "gpubench", "error": null}\n') == {"tool": "gpubench", "error": None}
    with pytest.raises(ValueError):
        last_json("Segmentation fault\n")


def test_torch_reference_documents_itself_without_torch():
    done = subprocess.run([sys.executable, "-m", "provision.certify.gpubench.torch_reference", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--size" in done.stdout
