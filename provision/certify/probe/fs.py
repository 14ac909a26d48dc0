"""Shared filesystem test: each node writes a file of known content, reads it back, and later every
node reads every other node's file, so checksums are compared across nodes.

Files live under <mount>/.provision-certify/<run id>/<node>.bin with a <node>.json beside it that
records the writer's SHA-256. Throughput is in MB/s (10^6 bytes per second); only the write/read
system calls are timed, not the hashing.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path
from typing import Iterator

BLOCK = 4 * 1024 * 1024
CERTIFY_DIR = ".provision-certify"
# Kernel filesystem types (/proc/mounts) each spec filesystem.type may show up as.
MOUNT_TYPES = {"glusterfs": ("fuse.glusterfs", "glusterfs"), "nfs": ("nfs", "nfs4"), "lustre": ("lustre",),
               "beegfs": ("beegfs",)}


def run_dir(mount: str, run_id: str) -> Path:
    """Where this run's files go on the shared mount."""
    return Path(mount) / CERTIFY_DIR / run_id


def mount_type(mount: str, mounts_file: str = "/proc/self/mounts") -> str | None:
    """The filesystem type mounted exactly at `mount`, or None when nothing is mounted there."""
    try:
        with open(mounts_file) as handle:
            entries = [line.split() for line in handle]
    except OSError:
        return None
    target = os.path.normpath(mount)
    found = [e[2] for e in entries if len(e) > 2 and e[1].replace("\\040", " ") == target]
    return found[-1] if found else None  # the last mount on a path is the visible one


def blocks(node: str, run_id: str, size_mib: int) -> Iterator[bytes]:
    """Deterministic content: a pseudo-random block seeded by run and node, each copy stamped with its index."""
    base = random.Random(f"{run_id}:{node}").randbytes(BLOCK)
    total = size_mib * 1024 * 1024
    for index in range((total + BLOCK - 1) // BLOCK):
        block = index.to_bytes(8, "little") + base[8:]
        yield block[: min(BLOCK, total - index * BLOCK)]


def write_and_read(mount: str, node: str, run_id: str, size_mib: int) -> dict:
    """Write, fsync, drop the cache, read back; sizes, checksums and MB/s (error set on failure)."""
    out: dict = {"mount": mount, "size_bytes": size_mib * 1024 * 1024, "error": None}
    try:
        folder = run_dir(mount, run_id)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{node}.bin"
        out["path"] = str(path)
        written, seconds = _write(path, blocks(node, run_id, size_mib))
        out.update(sha256_written=written, write_mb_s=_rate(out["size_bytes"], seconds))
        read, seconds = _read(path)
        out.update(sha256_read=read, read_mb_s=_rate(out["size_bytes"], seconds))
        meta = folder / f"{node}.json"
        tmp = folder / f".{node}.json.tmp"
        tmp.write_text(json.dumps({"node": node, "sha256": written, "size_bytes": out["size_bytes"]}))
        os.replace(tmp, meta)
    except OSError as exc:
        out["error"] = f"{exc.strerror or exc} ({getattr(exc, 'filename', '') or mount})"
    return out


def verify(mount: str, run_id: str) -> dict:
    """Read every node's file of this run and compare with the SHA-256 its writer recorded."""
    folder = run_dir(mount, run_id)
    files: dict[str, dict] = {}
    try:
        metas = sorted(folder.glob("*.json"))
    except OSError as exc:
        return {"mount": mount, "files": {}, "error": str(exc)}
    for meta_path in metas:
        try:
            meta = json.loads(meta_path.read_text())
            found, _ = _read(folder / f"{meta['node']}.bin")
            files[meta["node"]] = {"expected": meta["sha256"], "found": found, "ok": found == meta["sha256"],
                                   "error": None}
        except (OSError, ValueError, KeyError) as exc:
            files[meta_path.stem] = {"expected": None, "found": None, "ok": False, "error": str(exc)}
    return {"mount": mount, "files": files, "error": None if folder.is_dir() else f"{folder} does not exist"}


def _write(path: Path, data: Iterator[bytes]) -> tuple[str, float]:
    digest, spent = hashlib.sha256(), 0.0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for block in data:
            digest.update(block)
            start = time.perf_counter()
            view = memoryview(block)
            while view:
                view = view[os.write(fd, view):]
            spent += time.perf_counter() - start
        start = time.perf_counter()
        os.fsync(fd)
        spent += time.perf_counter() - start
        _drop_cache(fd)
    finally:
        os.close(fd)
    return digest.hexdigest(), spent


def _read(path: Path) -> tuple[str, float]:
    digest, spent = hashlib.sha256(), 0.0
    fd = os.open(path, os.O_RDONLY)
    try:
        _drop_cache(fd)
        while True:
            start = time.perf_counter()
            block = os.read(fd, BLOCK)
            spent += time.perf_counter() - start
            if not block:
                break
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest(), spent


def _drop_cache(fd: int) -> None:
    """Ask the kernel to forget cached pages so the read goes to the filesystem (best effort)."""
    if hasattr(os, "posix_fadvise"):
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass


def _rate(size: int, seconds: float) -> float:
    return round(size / 1e6 / seconds, 1) if seconds > 0 else 0.0
