"""Pack what the certify role puts on every node into one reproducible tar, once, on the control node.

    python node_tree.py ARCHIVE --probe DIR --wheel FILE [--source FILE ...] < launcher

Members, relative to certify_prefix: probe/... (the staged probe modules), site/... (the nvidia-ml-py wheel's files,
its .dist-info included, so the launcher's PYTHONPATH imports it and importlib.metadata knows its version: no venv
and no pip run on the node), src/<each source> and bin/certify-probe (the rendered launcher, read from stdin, mode
0755). File entries only (tar makes the folders),
sorted, owned by root, each file's mtime taken from its content so that a changed module never meets a stale .pyc.
The archive is rewritten only when its bytes change; prints {"archive", "checksum", "changed"} with the SHA-1 that
the node's copy is compared with.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path


def members(probe: Path, wheel: Path, sources: list[Path], launcher: bytes) -> list[tuple[str, bytes, int]]:
    """(name, content, mode) of every file, sorted by name."""
    found = [(f"probe/{p.relative_to(probe)}", p.read_bytes(), 0o644) for p in probe.rglob("*") if p.is_file()]
    found += wheel_files(wheel)
    found += [(f"src/{s.name}", s.read_bytes(), 0o644) for s in sources]
    found += [("bin/certify-probe", launcher, 0o755)]
    return sorted(found)


def wheel_files(wheel: Path) -> list[tuple[str, bytes, int]]:
    """A pure-Python wheel's files under site/ (a wheel is a zip laid out as site-packages); refuses an entry that
    would land outside site/."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if not n.endswith("/")]
        for name in names:
            if name.startswith("/") or ".." in Path(name).parts:
                raise SystemExit(f"{wheel.name}: entry {name!r} would leave the site folder")
        return [(f"site/{name}", archive.read(name), 0o644) for name in names]


def pack(files: list[tuple[str, bytes, int]]) -> bytes:
    """The tar's bytes: the same files always give the same bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data, mode in files:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            info.mtime = int.from_bytes(hashlib.sha256(data).digest()[:4], "big") % (1 << 31)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Write the archive if it changed; print the JSON line the role reads."""
    parser = argparse.ArgumentParser(prog="node_tree.py")
    parser.add_argument("archive", type=Path)
    parser.add_argument("--probe", type=Path, required=True)
    parser.add_argument("--wheel", type=Path, required=True)
    parser.add_argument("--source", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    data = pack(members(args.probe, args.wheel, args.source, sys.stdin.buffer.read()))
    changed = not args.archive.is_file() or args.archive.read_bytes() != data
    if changed:
        args.archive.parent.mkdir(parents=True, exist_ok=True)
        temporary = args.archive.with_name(f".{args.archive.name}.tmp")
        temporary.write_bytes(data)
        temporary.replace(args.archive)
    print(json.dumps({"archive": str(args.archive), "checksum": hashlib.sha1(data).hexdigest(), "changed": changed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
