"""Cross-check gpubench against PyTorch on this machine's GPU, in one run, and certify the node with the probe.

Certify's performance figures are only as good as gpubench. This measures the same quantities with the
same sizes through gpubench and through torch_reference, interleaved round by round so both see the same
clocks and temperature, and requires gpubench to reach REQUIRED_RATIO of PyTorch for the GEMM and the
device copy (host<->device copies are reported, not required: both are bound by the same PCIe link).
Then it runs the node probe at the standard level with the binary it built and prints every GPU verdict.

Run on a GPU machine where torch is installed (torch is not a dependency of gpu-provision):

    python -m provision.certify.gpubench.compare --rounds 3 --out results/

Exit codes: 0 all required ratios met, 1 a required ratio missed, 2 no GPU, nvcc or torch here.
"""
from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from provision.certify.gpubench import build
from provision.certify.probe import nvml
from provision.certify.probe.bench import last_json
from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.gpus import model_for_nvml_name

REQUIRED_RATIO = 0.90
TORCH_REFERENCE = [sys.executable, "-m", "provision.certify.gpubench.torch_reference"]
# gpubench JSON key -> (value field, unit, required to reach REQUIRED_RATIO of PyTorch)
METRICS: dict[str, tuple[str, str, bool]] = {
    "gemm_bf16": ("tflops", "TFLOP/s", True),
    "copy": ("gb_per_s", "GB/s", True),
    "h2d": ("gb_per_s", "GB/s", False),
    "d2h": ("gb_per_s", "GB/s", False),
}


@dataclass(frozen=True)
class Row:
    """One metric: the best of the rounds through each tool, their ratio and the verdict."""

    metric: str
    unit: str
    gpubench: float | None
    torch: float | None
    ratio: float | None
    required: bool
    verdict: str  # pass, fail, info (not required), missing


def best(docs: list[dict], key: str, field: str) -> float | None:
    """The highest value of key.field over the rounds; None when no round measured it."""
    values = [(doc.get(key) or {}).get(field) for doc in docs if not doc.get("error")]
    values = [float(v) for v in values if isinstance(v, (int, float)) and v > 0]
    return max(values) if values else None


def compare(gpubench_docs: list[dict], torch_docs: list[dict], required_ratio: float = REQUIRED_RATIO) -> list[Row]:
    """A Row per metric; a required metric that either tool did not measure is 'missing' (a failure)."""
    rows = []
    for key, (field, unit, required) in METRICS.items():
        ours, theirs = best(gpubench_docs, key, field), best(torch_docs, key, field)
        ratio = round(ours / theirs, 3) if ours and theirs else None
        if ratio is None:
            verdict = "missing" if required else "info"
        elif not required:
            verdict = "info"
        else:
            verdict = "pass" if ratio >= required_ratio else "fail"
        rows.append(Row(key, unit, ours, theirs, ratio, required, verdict))
    return rows


def passed(rows: list[Row]) -> bool:
    """Every required metric measured by both tools and at or above the ratio."""
    return all(row.verdict == "pass" for row in rows if row.required)


def render(rows: list[Row], required_ratio: float = REQUIRED_RATIO) -> str:
    """A plain-text table of the rows."""
    lines = [f"{'metric':<10} {'gpubench':>10} {'PyTorch':>10} {'unit':<8} {'ratio':>7}  verdict"]
    for row in rows:
        ours = f"{row.gpubench:.1f}" if row.gpubench else "-"
        theirs = f"{row.torch:.1f}" if row.torch else "-"
        ratio = f"{row.ratio:.1%}" if row.ratio else "-"
        need = f" (needs >= {required_ratio:.0%})" if row.required else " (reported only)"
        lines.append(f"{row.metric:<10} {ours:>10} {theirs:>10} {row.unit:<8} {ratio:>7}  {row.verdict}{need}")
    return "\n".join(lines)


def tool_args(device: int, size: int, iters: int, warmup: int) -> list[str]:
    """The options both tools take, so they measure the same sizes."""
    return ["--device", str(device), "--size", str(size), "--iters", str(iters), "--warmup", str(warmup),
            "--copy-mib", "1024", "--xfer-mib", "256"]


def run_json(cmd: list[str], timeout_s: float) -> dict:
    """Run a tool that prints one JSON document; a crash becomes {"error": ...}."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:g} s: {' '.join(cmd)}"}
    try:
        return last_json(done.stdout)
    except ValueError:
        return {"error": f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-500:]}"}


def compile_gpubench(workdir: Path) -> Path:
    """Build gpubench with nvcc and cuBLAS from the toolkit, else from the nvidia-cublas wheel."""
    if build.nvcc() is None:
        raise RuntimeError("nvcc not found: install the CUDA toolkit (or put nvcc on PATH)")
    cublas = None if build.toolkit_has_cublas() else build.wheel_cublas()
    if cublas is None and not build.toolkit_has_cublas():
        raise RuntimeError("cuBLAS not found: install the toolkit's cuBLAS or the nvidia-cublas wheel")
    output = workdir / "gpubench"
    done = subprocess.run(build.command(output, cublas_root=cublas), capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"nvcc failed: {done.stderr.strip()[-2000:]}")
    return output


def probe_node(binary: Path, timeout_s: float) -> tuple[dict, list[dict]]:
    """Run the probe at the standard level on this node; its document and the judged GPU checks.

    The probe needs only the standard library and pynvml; judging its measurements against the threshold
    table needs the installed package (pydantic). Without it the node-side checks are returned unjudged."""
    snap = nvml.snapshot()
    model = model_for_nvml_name(snap.gpus[0].name or "") if snap.gpus else None
    branch = int(snap.driver_version.split(".")[0]) if snap.driver_version else None
    name = socket.gethostname().split(".")[0]
    expect = NodeExpectation(node=name, gpu_model=model.key if model else None, gpu_count=len(snap.gpus),
                             driver_branch=branch, run_id="compare")
    cmd = [sys.executable, "-m", "provision.certify.probe", "--level", "standard",
           "--expect-json", json.dumps(expect.to_dict()), "--gpubench", str(binary)]
    doc = run_json(cmd, timeout_s)
    try:
        from provision.certify.judging.assemble import assemble
        from provision.certify.probe.document import ProbeDocument
        from provision.records import NodeInfo
    except ImportError as exc:
        print(f"note: {exc}; showing the probe's node-side checks without the threshold table", file=sys.stderr)
        return doc, [c for c in doc.get("checks", []) if c["check"].startswith("gpu.")]
    node = NodeInfo(name=name, group="gpu", roles=("compute",), gpu_model=expect.gpu_model,
                    gpu_count=expect.gpu_count)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report = assemble(cluster="compare", level="standard", nodes=[node], probes={name: ProbeDocument.from_dict(doc)},
                      started_at=now, finished_at=now)
    checks = [asdict(c) for n in report.nodes for c in n.checks if c.check.startswith("gpu.")]
    return doc, checks


def probe_line(check: dict) -> str:
    """One judged probe check on one line: id, GPU, verdict, value, then the detail or the threshold."""
    value = "" if check["value"] is None else f" {check['value']} {check['unit'] or ''}".rstrip()
    why = check["detail"] or ("" if check["threshold"] is None else f"threshold {check['threshold']}")
    return f"probe {check['check']:<26} {check['subject'] or '':<5} {check['verdict']:<5}{value}  {why}".rstrip()


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command's options."""
    parser = argparse.ArgumentParser(prog="python -m provision.certify.gpubench.compare",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of each tool (best is kept)")
    parser.add_argument("--size", type=int, default=8192, help="M = N = K of the GEMM")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-probe", action="store_true", help="skip the standard-level probe run")
    parser.add_argument("--out", type=Path, help="directory for compare.json (raw documents, rows, probe checks)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Build, measure both ways, print the table and the probe's GPU verdicts."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="gpubench-") as tmp:
        try:
            started = time.monotonic()
            binary = compile_gpubench(Path(tmp))
            print(f"built gpubench in {time.monotonic() - started:.1f} s")
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        options = tool_args(args.device, args.size, args.iters, args.warmup)
        ours, theirs = [], []
        for round_no in range(1, args.rounds + 1):
            ours.append(run_json([str(binary), *options], 600))
            theirs.append(run_json([*TORCH_REFERENCE, *options], 600))
            for label, doc in (("gpubench", ours[-1]), ("torch", theirs[-1])):
                print(f"round {round_no} {label}: " + (f"error: {doc['error']}" if doc.get("error") else
                                                      json.dumps({k: doc.get(k) for k in METRICS})))
        if all(doc.get("error") for doc in ours) or all(doc.get("error") for doc in theirs):
            print("error: no round measured anything; see the errors above (no GPU, or no torch with CUDA?)",
                  file=sys.stderr)
            return 2
        rows = compare(ours, theirs)
        print(f"\n{ours[0].get('name', 'GPU')} (device {args.device}), best of {args.rounds} rounds:")
        print(render(rows))
        probe_doc, checks = ({}, []) if args.no_probe else probe_node(binary, 1800)
    for check in checks:
        print(probe_line(check))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "compare.json").write_text(json.dumps(
            {"gpubench": ours, "torch": theirs, "rows": [asdict(r) for r in rows], "required_ratio": REQUIRED_RATIO,
             "probe": probe_doc, "probe_checks": checks}, indent=2, default=str))
    return 0 if passed(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
