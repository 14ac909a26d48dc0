"""python -m provision.certify.probe.metrics slurm --out DIR [--timeout S] [--accounting]

Writes the Slurm collector's textfile (catalogue.TEXTFILES["slurm"]) into DIR, node exporter's textfile directory.
Exit 0: the file was written, whatever Slurm answered (a command that failed reads as
slurm_collector_command_ok{command} 0 in it, and each note is printed on stderr for the journal); 1: the file could
not be written (the directory missing or not writable); 2: wrong arguments.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from provision.certify.probe.metrics import slurm
from provision.certify.probe.metrics.catalogue import TEXTFILE_DIR


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The program's options."""
    parser = argparse.ArgumentParser(prog="python -m provision.certify.probe.metrics",
                                     description="Write gpu-provision's metrics for node exporter's textfile collector.")
    writers = parser.add_subparsers(dest="writer", required=True)
    collector = writers.add_parser("slurm", help="Slurm's view of the cluster (run on the controller)")
    collector.add_argument("--out", type=Path, default=Path(TEXTFILE_DIR), help="node exporter's textfile directory")
    collector.add_argument("--timeout", type=_positive, default=10.0, help="seconds each Slurm command may take")
    collector.add_argument("--accounting", action="store_true", help="ask slurmdbd too (sacctmgr): slurm_dbd_up")
    return parser.parse_args(argv)


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: must be a number of seconds above 0")
    return value


def main(argv: list[str] | None = None) -> int:
    """Collect and write; 0 written, 1 not written."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        path, collection = slurm.collect_to(args.out, args.timeout, args.accounting)
    except OSError as exc:
        print(f"gpu-provision metrics: cannot write the Slurm textfile: {exc.strerror or exc}", file=sys.stderr)
        return 1
    for note in collection.notes:
        print(f"gpu-provision metrics: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
