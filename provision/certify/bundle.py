"""What the certify role ships to every node: the node-side package, gpubench.cu and the nvidia-ml-py wheel.

The probe runs in its own venv on the node, without the rest of gpu-provision's dependencies: what ships is the
node-side package `provision.certify.probe`, found by walking its folder, plus the two package markers above it
(a unit test proves the package imports only the standard library and nvidia-ml-py, and runs alone). The
nvidia-ml-py wheel is fetched once by the control node into a cache folder (nodes may have no route to PyPI) and
installed on the nodes with `pip --no-index`.

The role calls `python -m provision.certify.bundle CACHE_DIR [--wheel FILE]` on the control node and
reads the one JSON line it prints: {"probe_dir", "source_dir", "wheel", "nvml_version", "downloaded"}.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import provision
from provision.errors import CertifyError, ProvisionError

NVML_DISTRIBUTION = "nvidia-ml-py"
NODE_PACKAGE = "provision.certify.probe"  # everything that runs on a node; nothing else is shipped
SOURCES: tuple[str, ...] = ("certify/gpubench/gpubench.cu",)  # built on GPU nodes by the role, relative to the package
DIGEST_FILE = "BUNDLE_DIGEST"  # beside the staged package: certify compares it with its own before running


def package_root() -> Path:
    """The directory of the installed `provision` package."""
    return Path(provision.__file__).resolve().parent


def probe_modules() -> tuple[str, ...]:
    """The node-side package's modules, found by walking its folder, after the package markers above it."""
    root = package_root()
    folder = root.joinpath(*NODE_PACKAGE.split(".")[1:])
    found = sorted(path.relative_to(root).with_suffix("") for path in folder.rglob("*.py"))
    names = [".".join(("provision", *(p.parts[:-1] if p.name == "__init__" else p.parts))) for p in found]
    parents = [".".join(NODE_PACKAGE.split(".")[:i]) for i in range(1, NODE_PACKAGE.count(".") + 1)]
    return (*parents, *names)


def module_file(name: str) -> Path:
    """The relative path of a module of the package: a.b -> a/b.py, a package -> a/__init__.py."""
    parts = name.split(".")[1:]
    root = package_root()
    candidate = Path(*parts, "__init__.py") if parts else Path("__init__.py")
    return candidate if (root / candidate).exists() else Path(*parts[:-1], f"{parts[-1]}.py")


def _sync(source: Path, target: Path) -> bool:
    """Copy a file only when its content differs (so mtimes, and the role's copy, stay stable)."""
    data = source.read_bytes()
    if target.exists() and target.read_bytes() == data:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return True


def digest() -> str:
    """SHA-256 over the probe's modules (names and contents): what the nodes must run, this exact code."""
    hasher = hashlib.sha256()
    for name in probe_modules():
        hasher.update(name.encode() + b"\0" + (package_root() / module_file(name)).read_bytes() + b"\0")
    return hasher.hexdigest()


def stage_probe(dest: Path) -> Path:
    """Copy the probe's modules into dest/provision/... and the digest into dest; returns dest (the node's
    PYTHONPATH entry)."""
    root = package_root()
    for name in probe_modules():
        relative = module_file(name)
        _sync(root / relative, dest / "provision" / relative)
    marker = dest / DIGEST_FILE
    current = digest() + "\n"
    if not marker.exists() or marker.read_text() != current:
        marker.write_text(current)
    return dest


def pack(directory: Path, archive: Path) -> Path:
    """A byte-for-byte reproducible tar of a folder (sorted, zero times and owners), rewritten only when it
    changes, so the role copies one file and a re-run compares one checksum."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            info = tarfile.TarInfo(str(path.relative_to(directory)))
            data = path.read_bytes()
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    if not archive.exists() or archive.read_bytes() != buffer.getvalue():
        archive.write_bytes(buffer.getvalue())
    return archive


def stage_sources(dest: Path) -> Path:
    """Copy the sources built on the nodes (gpubench.cu) into dest, flat."""
    for relative in SOURCES:
        _sync(package_root() / relative, dest / Path(relative).name)
    return dest


def nvml_version() -> str:
    """The nvidia-ml-py version installed here: the nodes get the same one."""
    try:
        return importlib.metadata.version(NVML_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise CertifyError(f"{NVML_DISTRIBUTION} is not installed on the control node",
                           hint="reinstall gpu-provision (it depends on nvidia-ml-py)") from exc


def wheel_name(version: str) -> str:
    """The file name of the pure-Python nvidia-ml-py wheel of a version."""
    return f"nvidia_ml_py-{version}-py3-none-any.whl"


def ensure_wheel(wheels: Path, version: str | None = None) -> tuple[Path, bool]:
    """(the wheel in the cache, whether it was downloaded now); `pip download` only when it is missing."""
    version = version or nvml_version()
    wheel = wheels / wheel_name(version)
    if wheel.is_file():
        return wheel, False
    wheels.mkdir(parents=True, exist_ok=True, mode=0o700)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(wheels), f"{NVML_DISTRIBUTION}=={version}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0 or not wheel.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CertifyError(f"cannot download {NVML_DISTRIBUTION}=={version} into {wheels}: {last}",
                           hint="set PIP_INDEX_URL to a reachable index, or put the wheel there by hand, or "
                                "set certify_nvml_wheel to a wheel file on the control node")
    return wheel, True


def prepare(cache: Path, wheel: Path | None = None) -> dict:
    """Stage everything the role copies; the document the role reads."""
    probe_dir = stage_probe(cache / "probe")
    probe_archive = pack(probe_dir, cache / "probe.tar")
    source_dir = stage_sources(cache / "src")
    downloaded = False
    if wheel is None:
        wheel, downloaded = ensure_wheel(cache / "wheels")
    elif not wheel.is_file():
        raise CertifyError(f"certify_nvml_wheel: {wheel} is not a file",
                           hint="give the path of an nvidia-ml-py wheel on the control node, or leave it empty")
    version = wheel.name.split("-")[1] if wheel.name.count("-") >= 2 else ""
    return {"probe_dir": str(probe_dir), "probe_archive": str(probe_archive), "source_dir": str(source_dir), "wheel": str(wheel),
            "wheel_name": wheel.name, "nvml_version": version, "downloaded": downloaded}


def main(argv: list[str] | None = None) -> int:
    """`python -m provision.certify.bundle CACHE_DIR [--wheel FILE]`: one JSON line, exit 1 with a message."""
    parser = argparse.ArgumentParser(prog="python -m provision.certify.bundle")
    parser.add_argument("cache", type=Path, help="folder on the control node for the staged files and the wheel")
    parser.add_argument("--wheel", type=Path, default=None, help="an nvidia-ml-py wheel to use instead of downloading")
    args = parser.parse_args(argv)
    try:
        doc = prepare(args.cache.expanduser().resolve(), args.wheel)
    except ProvisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
