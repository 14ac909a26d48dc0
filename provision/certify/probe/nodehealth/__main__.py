"""gpu-provision-health: one pass. Slurm's HealthCheckProgram runs it, and the gpu-provision-health service runs
it every interval from its launcher's loop (a fresh process each time, so a new archive or config takes effect)."""
from __future__ import annotations

import argparse
import fcntl
import json
import sys
from pathlib import Path

from provision.certify.probe.nodehealth import config as health_config
from provision.certify.probe.nodehealth.passes import one_pass


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The program's options."""
    parser = argparse.ArgumentParser(prog="gpu-provision-health", description="Check this node and drain or resume "
                                     "it in Slurm (see provision/certify/probe/nodehealth).")
    parser.add_argument("--config", type=Path, default=health_config.DEFAULT_PATH)
    parser.add_argument("--trigger", choices=("once", "service", "slurm"),
                        help="who started this pass (default: slurm under slurmd, otherwise once)")
    parser.add_argument("--json", action="store_true", help="print the pass's record as JSON")
    return parser.parse_args(argv)


def locked_pass(cfg: health_config.HealthConfig, trigger: str, as_json: bool) -> int:
    """One pass unless another is running (Slurm's and the service's can meet): 0 healthy, 1 a check failed."""
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    with open(cfg.state_dir / "lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(json.dumps({"node": cfg.node, "skipped": "another pass is running"}) if as_json
                  else "another pass is running")
            return 0
        record = one_pass(cfg, trigger)
    failed = [c["check"] for c in record.checks if c["verdict"] == "fail"]
    print(json.dumps(record.to_dict()) if as_json else
          f"{record.node}: {'healthy' if record.ok else 'failed ' + ', '.join(failed)}; slurm: {record.action} "
          f"({record.seconds:.1f} s)")
    return 0 if record.ok else 1


def main(argv: list[str] | None = None) -> int:
    """One pass: 0 healthy, 1 a check failed, 2 bad configuration."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cfg = health_config.load_or_say(args.config, "gpu-provision-health")
    if cfg is None:
        return 2
    return locked_pass(cfg, args.trigger or ("slurm" if _under_slurmd() else "once"), args.json)


def _under_slurmd() -> bool:
    """Started by slurmd (HealthCheckProgram): its parent is slurmd."""
    try:
        parent = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[1]
        return Path(f"/proc/{parent}/comm").read_text().strip() == "slurmd"
    except (OSError, IndexError):
        return False


if __name__ == "__main__":
    sys.exit(main())
