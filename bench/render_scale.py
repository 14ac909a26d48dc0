"""Render the inventory and the Slurm node/partition lines for large clusters; print seconds and line counts.

Run: .venv/bin/python bench/render_scale.py [--sizes 1000 10000]
"""
from __future__ import annotations

import argparse
import time

from provision import inventory
from provision.records import ClusterInfo
from provision.slurm import layout
from provision.spec.model import ClusterSpec
from provision.spec.topology import planned_nodes


def _spec(size: int) -> ClusterSpec:
    """A static cluster of one controller and `size` identical 8x H100 nodes."""
    return ClusterSpec.model_validate({
        "name": "scale",
        "provider": {"type": "static"},
        "node_groups": [
            {"name": "ctl", "roles": ["controller"], "hosts": "ctl01", "addresses": ["10.0.0.1"]},
            {"name": "gpu", "roles": ["compute"], "count": size, "gpu": {"model": "H100-SXM", "count": 8},
             "addresses": [f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}" for i in range(size)]},
        ],
    })


def measure(size: int) -> dict:
    """Seconds to plan nodes, compute the Slurm lines, and render the whole inventory."""
    spec = _spec(size)
    start = time.perf_counter()
    cluster = ClusterInfo(name=spec.name, provider="static", nodes=tuple(planned_nodes(spec)))
    planned = time.perf_counter()
    nodes = layout.node_entries(cluster)
    partitions = layout.partition_entries(cluster)
    slurm_done = time.perf_counter()
    files = inventory.render(spec, cluster)
    rendered = time.perf_counter()
    return {
        "nodes": size,
        "plan_s": planned - start,
        "slurm_lines_s": slurm_done - planned,
        "render_s": rendered - slurm_done,
        "total_s": rendered - start,
        "nodename_lines": len(nodes),
        "partition_lines": len(partitions),
        "inventory_lines": sum(text.count("\n") for text in files.values()),
    }


def main() -> None:
    """Print one line of figures per size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    for size in parser.parse_args().sizes:
        r = measure(size)
        print(f"{r['nodes']:>6} nodes: total {r['total_s']:.3f} s (plan {r['plan_s']:.3f}, slurm lines "
              f"{r['slurm_lines_s']:.3f}, render {r['render_s']:.3f}); NodeName lines {r['nodename_lines']}, "
              f"PartitionName lines {r['partition_lines']}, inventory lines {r['inventory_lines']}")


if __name__ == "__main__":
    main()
