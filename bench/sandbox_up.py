"""Time the sandbox provider: base image build (cold), `up` of 4 and 16 nodes, `down`; print the figures.

Run as root: .venv/bin/python bench/sandbox_up.py [--cold] [--sizes 4 16]

--cold builds the base image from nothing in a private, temporary state root (its cache starts empty and
is deleted afterwards), so the shared cache that running clusters use as their lower layer is never
touched; the `up` runs then use that freshly built image. Without --cold they use the normal state root
and its cached image (built first if missing, which is then reported as the build time).
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from provision.providers.sandbox import layout, mirror
from provision.providers.sandbox.provider import SandboxProvider
from provision.providers.sandbox.image import ImageCache
from provision.spec.model import ClusterSpec
from provision.state import ClusterState, state_root


def spec(size: int, index: int) -> ClusterSpec:
    """A sandbox cluster of one controller and size-1 compute nodes on its own subnet."""
    return ClusterSpec.model_validate({
        "name": f"bench{size}",
        "provider": {"type": "sandbox", "subnet": f"10.95.{index}.0/24"},
        "node_groups": [{"name": "ctl", "roles": ["controller"], "count": 1},
                        {"name": "node", "roles": ["compute"], "count": size - 1}],
    })


def timed(action) -> tuple[float, object]:
    """Seconds an action took, and its result."""
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def build_base(root: Path) -> tuple[float, bool]:
    """Seconds to make the base image available under root's cache; whether it had to be built."""
    probe = ClusterState(root, "bench-image")
    cache = ImageCache(layout.sandbox_cache(probe))
    built: list[str] = []
    seconds, _ = timed(lambda: cache.ensure(mirror.resolve(None), built.append))
    return seconds, any("debootstrap" in line for line in built)


def cycle(root: Path, size: int, index: int) -> dict[str, float]:
    """up from nothing, up again (idempotent), down; seconds for each."""
    provider = SandboxProvider(spec(size, index), ClusterState(root, f"bench{size}"))
    provider.destroy()
    try:
        up, info = timed(provider.create)
        assert all(n.state == "running" for n in info.nodes), info
        again, _ = timed(provider.create)
    finally:
        down, teardown = timed(provider.destroy)
    assert not teardown.leftovers, teardown.leftovers
    return {"up": up, "up again": again, "down": down}


def main() -> None:
    """Parse arguments, run the measurements, print one line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="build the base image from nothing (private cache)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 16])
    args = parser.parse_args()
    SandboxProvider(spec(4, 0), ClusterState(state_root(), "bench4")).check_environment()
    root = Path(tempfile.mkdtemp(prefix="gpu-provision-bench-", dir="/var/tmp")) if args.cold else state_root()
    try:
        seconds, built = build_base(root)
        label = "base image build (cold)" if built else "base image (cached, unpacked copy reused)"
        print(f"{label:<44} {seconds:7.1f} s")
        for index, size in enumerate(args.sizes):
            for name, value in cycle(root, size, index).items():
                print(f"{name + f' {size} nodes':<44} {value:7.2f} s")
    finally:
        if args.cold:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
