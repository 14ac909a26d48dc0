"""gpubench against PyTorch on this machine's GPU, interleaved in one run, then the standard-level probe.

Run on a GPU machine with torch and nvcc: python bench/gpu_vs_torch.py [--rounds 3] [--out DIR]
Prints each round, a table of best values and ratios (GEMM and copy must reach 90 % of PyTorch), and every
GPU verdict of the probe. Exit 0 when the ratios are met, 1 when not, 2 without a GPU, nvcc or torch.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from provision.certify.gpubench.compare import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
