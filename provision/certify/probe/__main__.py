"""Command line of the node-side probe; prints one JSON document on stdout, exit 2 on bad input."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from provision.certify.probe import collect
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.expect import LEVELS, NodeExpectation


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The probe's options."""
    parser = argparse.ArgumentParser(prog="python -m provision.certify.probe",
                                     description="Certify this node: GPU health and performance, Xids, "
                                                 "RDMA ports, shared filesystem.")
    parser.add_argument("--level", choices=LEVELS, default="quick")
    parser.add_argument("--expect-json", required=True,
                        help="the NodeExpectation as JSON, or @FILE to read it from a file")
    parser.add_argument("--gpubench", help="path of the gpubench binary (default: on PATH)")
    parser.add_argument("--burn-seconds", type=int, help="GEMM burn-in before measuring (full level: 1800)")
    parser.add_argument("--fs-verify", action="store_true",
                        help="second pass: read every node's file of this run and compare checksums")
    parser.add_argument("--bench-again", action="store_true",
                        help="only the GPU benchmarks, without burn-in: a figure that failed, measured again")
    return parser.parse_args(argv)


def load_expectation(text: str) -> NodeExpectation:
    """Decode --expect-json (inline or @file); ValueError names what is wrong."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text()
        except OSError as exc:
            raise ValueError(f"--expect-json: cannot read {text[1:]} ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--expect-json: not valid JSON ({exc.msg} at position {exc.pos})") from exc
    return NodeExpectation.from_dict(data)


def main(argv: list[str] | None = None) -> int:
    """Run the probe and print its document."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        expect = load_expectation(args.expect_json)
    except ValueError as exc:
        print(json.dumps(ProbeDocument.failed(str(exc)).to_dict()))
        return 2
    if args.fs_verify:
        doc = collect.verify_filesystem(expect)
    elif args.bench_again:
        doc = collect.bench_again(expect, args.level, gpubench=args.gpubench)
    else:
        doc = collect.run(expect, args.level, gpubench=args.gpubench, burn_seconds=args.burn_seconds)
    print(json.dumps(doc.to_dict(), separators=(",", ":"), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
