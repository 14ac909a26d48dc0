"""Run the gpubench binary (provision/certify/gpubench/gpubench.cu, built on the node with nvcc).

GEMM and device copy run on every GPU at once (the node under full load, sampled through NVML);
host<->device copies then run one GPU at a time so GPUs behind one PCIe switch do not share it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

from provision.certify.probe.records import Measurement

BINARY_NAME = "gpubench"
SAMPLE_INTERVAL_S = 0.5
METRICS = {  # gpubench result key -> (metric, value key, unit)
    "gemm_bf16": ("gpu.gemm_bf16", "tflops", "TFLOP/s"),
    "copy": ("gpu.copy_bw", "gb_per_s", "GB/s"),
    "h2d": ("gpu.h2d_bw", "gb_per_s", "GB/s"),
    "d2h": ("gpu.d2h_bw", "gb_per_s", "GB/s"),
}


def find_binary(explicit: str | None = None) -> str | None:
    """The binary given, else `gpubench` on PATH, else one built beside the source file."""
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    beside = Path(__file__).resolve().parent.parent / "gpubench" / BINARY_NAME
    return shutil.which(BINARY_NAME) or (str(beside) if os.access(beside, os.X_OK) else None)


def run(binary: str, gpus: list[int], *, burn_seconds: int, timeout_s: float,
        sample: Callable[[], None]) -> tuple[dict[int, dict], list[str]]:
    """Results per GPU index (gpubench's JSON merged across phases) and error messages."""
    results: dict[int, dict] = {i: {} for i in gpus}
    errors: list[str] = []
    loaded = _concurrent(binary, gpus, ["--tests", "gemm,copy", "--seconds", str(burn_seconds)], timeout_s, sample)
    for index in gpus:
        _merge(results, index, loaded[index], errors)
        alone = _concurrent(binary, [index], ["--tests", "h2d,d2h"], timeout_s, sample)
        _merge(results, index, alone[index], errors)
    return results, errors


def _concurrent(binary: str, gpus: list[int], args: list[str], timeout_s: float,
                sample: Callable[[], None]) -> dict[int, tuple[int, str, str]]:
    """Start one process per GPU, sample while they run, collect (exit code, stdout, stderr)."""
    procs = {i: subprocess.Popen([binary, "--device", str(i), *args], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for i in gpus}
    deadline = time.monotonic() + timeout_s
    while any(p.poll() is None for p in procs.values()) and time.monotonic() < deadline:
        sample()
        time.sleep(SAMPLE_INTERVAL_S)
    out = {}
    for index, proc in procs.items():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            out[index] = (-9, "", f"timed out after {timeout_s:g} s")
            continue
        stdout, stderr = proc.communicate()
        out[index] = (proc.returncode, stdout, stderr)
    return out


def _merge(results: dict[int, dict], index: int, outcome: tuple[int, str, str], errors: list[str]) -> None:
    code, stdout, stderr = outcome
    try:
        doc = last_json(stdout)
    except ValueError:
        errors.append(f"gpu{index}: gpubench exit {code}: {(stderr or stdout).strip()[-300:]}")
        return
    if doc.get("error"):
        errors.append(f"gpu{index}: {doc['error']}")
    results[index].update({k: v for k, v in doc.items() if v is not None})


def last_json(text: str) -> dict:
    """The last line of the text that is a JSON object; ValueError when there is none."""
    for line in reversed(text.strip().splitlines()):
        if line.lstrip().startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON object in the output")


def measurements(node: str, results: dict[int, dict], context: dict[int, dict]) -> list[Measurement]:
    """One Measurement per GPU and metric gpubench reported."""
    out = []
    for index, doc in sorted(results.items()):
        for key, (metric, field, unit) in METRICS.items():
            value = (doc.get(key) or {}).get(field)
            if isinstance(value, (int, float)) and value > 0:
                note = (doc.get(key) or {}).get("counts", "")
                out.append(Measurement(metric=metric, node=node, value=float(value), unit=unit,
                                       subject=f"gpu{index}", context=context.get(index, {}), detail=note))
    return out
