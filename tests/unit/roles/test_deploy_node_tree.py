"""The certify role's node archive (playbooks/roles/certify/files/node_tree.py): packed once on the control node, one
transfer and one checksum per node, so it must be byte-for-byte reproducible and lay the files out where the probe,
`provision certify` and the builds look for them."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "playbooks/roles/certify/files/node_tree.py"
LAUNCHER = b"#!/bin/sh\nexec python -m provision.certify.probe \"$@\"\n"


@pytest.fixture
def staged(tmp_path):
    probe = tmp_path / "probe"
    (probe / "provision/certify/probe").mkdir(parents=True)
    (probe / "provision/__init__.py").write_text("")
    (probe / "provision/certify/probe/__main__.py").write_text("print('probe')\n")
    (probe / "BUNDLE_DIGEST").write_text("abc\n")
    wheel = tmp_path / "nvidia_ml_py-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pynvml.py", "NVML = 1\n")
        archive.writestr("nvidia_ml_py-1.0.dist-info/METADATA", "Name: nvidia-ml-py\nVersion: 1.0\n")
    source = tmp_path / "mpi_check.c"
    source.write_text("int main(void) { return 0; }\n")
    return probe, wheel, source


def _pack(archive: Path, probe: Path, wheel: Path, source: Path, launcher: bytes = LAUNCHER) -> dict:
    result = subprocess.run([sys.executable, str(SCRIPT), str(archive), "--probe", str(probe), "--wheel", str(wheel),
                             "--source", str(source)], input=launcher, capture_output=True, check=True)
    return json.loads(result.stdout)


def test_the_archive_lays_out_every_file_under_the_prefix_with_its_mode(tmp_path, staged):
    answer = _pack(tmp_path / "node.tar", *staged)
    with tarfile.open(answer["archive"]) as tar:
        modes = {m.name: (m.mode, m.uid, m.gid, m.isfile()) for m in tar.getmembers()}
        assert tar.extractfile("bin/certify-probe").read() == LAUNCHER
    assert modes == {
        "bin/certify-probe": (0o755, 0, 0, True), "probe/BUNDLE_DIGEST": (0o644, 0, 0, True),
        "probe/provision/__init__.py": (0o644, 0, 0, True),
        "probe/provision/certify/probe/__main__.py": (0o644, 0, 0, True),
        "src/mpi_check.c": (0o644, 0, 0, True), "site/pynvml.py": (0o644, 0, 0, True),
        "site/nvidia_ml_py-1.0.dist-info/METADATA": (0o644, 0, 0, True)}
    assert answer["checksum"] == hashlib.sha1(Path(answer["archive"]).read_bytes()).hexdigest()


def test_the_same_files_give_the_same_bytes_and_the_archive_is_left_alone(tmp_path, staged):
    first = _pack(tmp_path / "node.tar", *staged)
    mtime = (tmp_path / "node.tar").stat().st_mtime_ns
    again = _pack(tmp_path / "node.tar", *staged)
    assert first["changed"] and not again["changed"] and again["checksum"] == first["checksum"]
    assert (tmp_path / "node.tar").stat().st_mtime_ns == mtime
    assert _pack(tmp_path / "elsewhere.tar", *staged)["checksum"] == first["checksum"]


def test_a_changed_file_changes_the_archive_and_that_file_s_time(tmp_path, staged):
    probe, wheel, source = staged
    first = _pack(tmp_path / "node.tar", *staged)
    with tarfile.open(tmp_path / "node.tar") as tar:
        before = {m.name: m.mtime for m in tar.getmembers()}
    (probe / "provision/certify/probe/__main__.py").write_text("print('PROBE')\n")  # same size: only the time
    changed = _pack(tmp_path / "node.tar", *staged)                                  # keeps a stale .pyc away
    with tarfile.open(tmp_path / "node.tar") as tar:
        after = {m.name: m.mtime for m in tar.getmembers()}
    assert changed["changed"] and changed["checksum"] != first["checksum"]
    assert [name for name in before if before[name] != after[name]] == ["probe/provision/certify/probe/__main__.py"]
    assert _pack(tmp_path / "node.tar", *staged, launcher=b"#!/bin/sh\n")["checksum"] != changed["checksum"]


def test_the_wheel_is_unpacked_so_python_imports_it_and_knows_its_version(tmp_path, staged):
    answer = _pack(tmp_path / "node.tar", *staged)
    with tarfile.open(answer["archive"]) as tar:
        tar.extractall(tmp_path / "prefix", filter="data")
    site = tmp_path / "prefix" / "site"
    out = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path[:0] = [sys.argv[1]]; import pynvml, "
                          "importlib.metadata as m; print(pynvml.NVML, m.version('nvidia-ml-py'))", str(site)],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "1.0"]


def test_a_wheel_entry_outside_the_site_folder_is_refused(tmp_path, staged):
    probe, wheel, source = staged
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("../../etc/evil", "x")
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "node.tar"), "--probe", str(probe),
                             "--wheel", str(wheel), "--source", str(source)], input=LAUNCHER, capture_output=True)
    assert result.returncode != 0 and b"would leave the site folder" in result.stderr
    assert not (tmp_path / "node.tar").exists()
