"""Time `provision up` (nodes + inventory + preflight + deploy, no certify) from nothing, then a re-run deploy.

Run as root: .venv/bin/python bench/deploy_scale.py [--nodes 4 16] [--os debian-13 debian-12]
                                                   [--filesystem none|glusterfs] [--profile N]
                                                   [--certify quick]
Prints cold, re-run and down per size (for each node OS asked for), then the per-node marginal cost between the
smallest and largest size;
--profile N adds the N slowest tasks of each deploy (bench/deploy_profile.py);
--certify LEVEL certifies each size after its re-run and prints the time, its verdict and the failed checks.
Figures depend on the apt proxy's cache: the first run on a machine also downloads every package.
Targets on a 2-core machine with nothing else running (issue 22): marginal cold <= 4 s per node, re-run of 4
nodes <= 20 s and of 16 nodes <= 45 s, both with changed=0.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deploy_profile import DEFAULT_OS, SPEC, last_deploy_run, load_events, profile, report, timed_cli  # noqa: E402


def measure(nodes: int, filesystem: str, top: int, os_name: str = DEFAULT_OS,
            certify: str | None = None) -> dict[str, float]:
    """Cold up, re-run deploy (must be changed=0), down; print one line per step; the seconds of each."""
    spec = Path(tempfile.mkdtemp()) / f"dbench{nodes}.yaml"
    compute = nodes - 1 if filesystem == "none" or (nodes - 1) % 2 == 0 else nodes - 2
    spec.write_text(SPEC.format(nodes=nodes, octet=nodes, compute=compute, filesystem=filesystem, os=os_name))
    size, figures = compute + 1, {}
    print(f"-- {size} nodes on {os_name}", flush=True)
    timed_cli("down", str(spec))
    try:
        cpu, result = timed_cli("up", str(spec), "--skip-certify", "--quiet")
        figures["cold"] = cpu.wall
        status = "ok" if result.returncode == 0 else f"FAILED\n{result.stderr[-2000:]}"
        print(f"{size} nodes: cold up {cpu.wall:.1f} s ({status}; CPU: controller {cpu.controller:.1f} s, "
              f"nodes and the rest {cpu.rest:.1f} s)", flush=True)
        if top and result.returncode == 0:
            print(report(f"{size} nodes, cold up", profile(load_events(last_deploy_run(spec))), top), flush=True)
        cpu, result = timed_cli("deploy", str(spec), "--json")
        figures["rerun"] = cpu.wall
        changed = sum(h["changed"] for h in json.loads(result.stdout)["hosts"]) if result.stdout else "?"
        print(f"{size} nodes: re-run deploy {cpu.wall:.1f} s, changed={changed}, rc={result.returncode} "
              f"(CPU: controller {cpu.controller:.1f} s, nodes and the rest {cpu.rest:.1f} s)", flush=True)
        if top and result.stdout:
            print(report(f"{size} nodes, re-run", profile(load_events(last_deploy_run(spec))), top), flush=True)
        if certify:
            figures["certify"] = certify_once(spec, size, certify)
    finally:
        cpu, _ = timed_cli("down", str(spec))
        figures["down"] = cpu.wall
        print(f"{size} nodes: down {cpu.wall:.1f} s", flush=True)
    return {**figures, "nodes": size}


def certify_once(spec: Path, size: int, level: str) -> float:
    """Certify at `level`; print its time, verdict and failed checks; the seconds it took."""
    cpu, result = timed_cli("certify", str(spec), "--level", level, "--quiet", "--json")
    try:
        document = json.loads(result.stdout)
    except ValueError:
        document = {}
    checks = [c for n in document.get("nodes") or [] for c in n.get("checks") or []] + (document.get("checks") or [])
    failed = [f"{c.get('check')} {c.get('node')}: {c.get('detail', '')[:120]}" for c in checks
              if c.get("verdict") == "fail"]
    print(f"{size} nodes: certify {level} {cpu.wall:.1f} s, rc={result.returncode}, {len(failed)} failed "
          f"(CPU: controller {cpu.controller:.1f} s, nodes and the rest {cpu.rest:.1f} s)", flush=True)
    for line in failed[:20]:
        print(f"  fail {line}", flush=True)
    return cpu.wall


def marginal(small: dict[str, float], large: dict[str, float]) -> str:
    """Seconds each node beyond the smaller cluster adds, cold and on a re-run."""
    extra = large["nodes"] - small["nodes"]
    parts = [f"{step} {(large[step] - small[step]) / extra:.1f} s"
             for step in ("cold", "rerun", "down") if step in small and step in large]
    return f"per node beyond {small['nodes']:.0f} (of {extra:.0f} more): " + ", ".join(parts)


def main() -> None:
    """Measure each size in turn, then the marginal cost between the first and the last."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--os", nargs="+", default=[DEFAULT_OS], choices=["debian-13", "debian-12"],
                        help="the sandbox nodes' release(s), measured one after the other")
    parser.add_argument("--filesystem", default="none", choices=["none", "glusterfs"])
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N slowest tasks of each deploy")
    parser.add_argument("--certify", choices=["quick", "standard"], help="certify each size after its re-run")
    args = parser.parse_args()
    for os_name in args.os:
        results = [measure(nodes, args.filesystem, args.profile, os_name, args.certify) for nodes in args.nodes]
        if len(results) > 1:
            print(f"{os_name}: {marginal(results[0], results[-1])}", flush=True)
        if args.certify and len(results) > 1 and "certify" in results[0] and "certify" in results[-1]:
            print(f"{os_name}: certify {args.certify} {results[-1]['certify'] / results[0]['certify']:.1f}x "
                  f"from {results[0]['nodes']:.0f} to {results[-1]['nodes']:.0f} nodes", flush=True)


if __name__ == "__main__":
    main()
