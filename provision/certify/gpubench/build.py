"""How to compile gpubench.cu: the nvcc command line, with cuBLAS from the toolkit or the pip wheel.

On nodes the CUDA role's toolkit has cuBLAS next to nvcc, so `nvcc -O2 -o gpubench gpubench.cu -lcublas`
is enough. Where cuBLAS comes from the `nvidia-cublas` wheel instead (site-packages/nvidia/cu13), the
wheel ships only libcublas.so.13, so a link directory with the unversioned name is made beside the output.
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "gpubench.cu"


def nvcc() -> str | None:
    """The nvcc on PATH, or the CUDA role's default location."""
    return shutil.which("nvcc") or next((str(p) for p in (Path("/usr/local/cuda/bin/nvcc"),) if p.exists()), None)


def toolkit_has_cublas(compiler: str | None = None) -> bool:
    """Whether the toolkit that holds nvcc also holds cuBLAS (headers and the unversioned library)."""
    compiler = compiler or nvcc()
    if compiler is None:
        return False
    root = Path(compiler).resolve().parent.parent
    return (root / "include" / "cublas_v2.h").exists() and any((root / "lib64").glob("libcublas.so"))


def wheel_cublas() -> Path | None:
    """The root of an installed nvidia-cublas wheel (holding include/ and lib/), if any."""
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        for root in sorted(Path(base).glob("cu*")):
            if (root / "include" / "cublas_v2.h").exists() and list((root / "lib").glob("libcublas.so*")):
                return root
    return None


def command(output: Path, *, cublas_root: Path | None = None, source: Path = SOURCE) -> list[str]:
    """The nvcc command; with `cublas_root` (a wheel), add its include path, a link dir and an rpath."""
    cmd = [nvcc() or "nvcc", "-O2", "-std=c++17", "-o", str(output), str(source)]
    if cublas_root is not None:
        link_dir = output.parent / ".cublas-link"
        link_dir.mkdir(parents=True, exist_ok=True)
        for name in ("libcublas", "libcublasLt"):
            versioned = sorted((cublas_root / "lib").glob(f"{name}.so.*"))
            target = link_dir / f"{name}.so"
            if versioned and not target.exists():
                target.symlink_to(versioned[0])
        lib = str(cublas_root / "lib")
        cmd += [f"-I{cublas_root / 'include'}", f"-L{link_dir}", "-Xlinker", f"-rpath={lib}",
                "-Xlinker", f"-rpath-link={lib}"]
    return cmd + ["-lcublas"]
