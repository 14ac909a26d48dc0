"""Reference measurements with PyTorch, to cross-check gpubench on a GPU machine.

Measures the same quantities the same way and prints the same JSON keys as gpubench:
dense BF16 matmul TFLOP/s (2*M*N*K per iteration, CUDA events, after warm-up), device-to-device
copy GB/s counting bytes read + written, pinned host<->device GB/s. Needs torch with CUDA; not a
dependency of gpu-provision (run it where torch is installed):

    python torch_reference.py --device 0 --size 8192 --iters 50
"""
from __future__ import annotations

import argparse
import json
import sys


def _timed(torch, fn, iters: int, warmup: int) -> float:
    """Milliseconds for `iters` calls of fn after `warmup` calls, between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def measure(device: int, size: int, iters: int, warmup: int, copy_mib: int, xfer_mib: int) -> dict:
    """The gpubench document, measured with torch."""
    import torch  # imported here so --help works without torch

    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    out: dict = {"tool": "torch_reference", "version": 1, "device": device,
                 "name": torch.cuda.get_device_name(device), "torch": torch.__version__}
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False  # FP32 accumulate, as cuBLAS there
    a = torch.randn(size, size, device=dev, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=dev, dtype=torch.bfloat16)
    ms = _timed(torch, lambda a=a, b=b: torch.matmul(a, b), iters, warmup)  # bound now: deleted below
    out["gemm_bf16"] = {"tflops": round(2 * size**3 * iters / (ms / 1e3) / 1e12, 2), "m": size, "n": size,
                        "k": size, "iters": iters, "ms": round(ms, 3), "accumulate": "fp32"}
    del a, b
    nbytes = copy_mib << 20
    src = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    ms = _timed(torch, lambda dst=dst, src=src: dst.copy_(src), iters, warmup)
    out["copy"] = {"gb_per_s": round(2 * nbytes * iters / (ms / 1e3) / 1e9, 1), "bytes": nbytes,
                   "counts": "bytes read + bytes written"}
    del src, dst
    nbytes = xfer_mib << 20
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    n = iters // 2 + 1
    ms = _timed(torch, lambda: gpu.copy_(host, non_blocking=True), n, warmup // 2 + 1)
    out["h2d"] = {"gb_per_s": round(nbytes * n / (ms / 1e3) / 1e9, 2), "bytes": nbytes, "memory": "pinned"}
    ms = _timed(torch, lambda: host.copy_(gpu, non_blocking=True), n, warmup // 2 + 1)
    out["d2h"] = {"gb_per_s": round(nbytes * n / (ms / 1e3) / 1e9, 2), "bytes": nbytes, "memory": "pinned"}
    out["error"] = None
    return out


def main(argv: list[str] | None = None) -> int:
    """Parse options, measure, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--copy-mib", type=int, default=1024)
    parser.add_argument("--xfer-mib", type=int, default=256)
    args = parser.parse_args(argv)
    try:
        doc = measure(args.device, args.size, args.iters, args.warmup, args.copy_mib, args.xfer_mib)
    except Exception as exc:  # noqa: BLE001 - report any failure as the tool's JSON error
        doc = {"tool": "torch_reference", "version": 1, "device": args.device, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(doc))
    return 0 if doc.get("error") is None else 1


if __name__ == "__main__":
    sys.exit(main())
