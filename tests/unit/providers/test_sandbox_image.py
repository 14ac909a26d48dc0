"""The base image cache: built once, reused, unpacked from the tarball, repaired when damaged.

The builder (debootstrap, a minute of downloads) is replaced by a small fake; tar and zstd are real. These tests ask
for the base alone (packages=None); the node image built on top of it is tested in test_sandbox_image_nodes.py."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from provision.providers.sandbox import debootstrap, image
from provision.providers.sandbox.mirror import Mirrors

MIRRORS = Mirrors("http://m.example/debian", None)
pytestmark = pytest.mark.skipif(not (shutil.which("zstd") and shutil.which("tar")), reason="needs tar and zstd")


class FakeBuilder:
    """Writes a tiny root file system and counts how often it was asked to."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, target: Path, mirrors: Mirrors, progress) -> None:
        self.calls += 1
        (target / "etc").mkdir()
        (target / "etc/os-release").write_text(f"build {self.calls}\n")


@pytest.fixture
def cache(tmp_path):
    builder = FakeBuilder()
    return image.ImageCache(tmp_path, builder, packages=None), builder


def test_first_call_builds_and_packs_then_reuses(cache):
    images, builder = cache
    root = images.ensure(MIRRORS, print)
    assert (root / "etc/os-release").read_text() == "build 1\n"
    assert images.tarball(image.image_key(MIRRORS)).stat().st_size > 0
    assert images.ensure(MIRRORS, print) == root
    assert builder.calls == 1


def test_missing_unpacked_copy_comes_from_the_tarball_without_building(cache):
    images, builder = cache
    root = images.ensure(MIRRORS, print)
    shutil.rmtree(root)
    assert (images.ensure(MIRRORS, print) / "etc/os-release").read_text() == "build 1\n"
    assert builder.calls == 1


def test_damaged_tarball_is_replaced(cache):
    images, builder = cache
    images.ensure(MIRRORS, print)
    tarball = images.tarball(image.image_key(MIRRORS))
    tarball.write_bytes(tarball.read_bytes()[:20])
    images.ensure(MIRRORS, print)
    assert image._verify(tarball)  # packed again from the intact unpacked copy
    assert builder.calls == 1


def test_damaged_tarball_without_unpacked_copy_is_rebuilt(cache):
    images, builder = cache
    root = images.ensure(MIRRORS, print)
    shutil.rmtree(root)
    tarball = images.tarball(image.image_key(MIRRORS))
    tarball.write_bytes(b"not zstd at all")
    assert (images.ensure(MIRRORS, print) / "etc/os-release").read_text() == "build 2\n"
    assert image._verify(tarball)


def test_missing_tarball_is_packed_again(cache):
    images, builder = cache
    images.ensure(MIRRORS, print)
    images.tarball(image.image_key(MIRRORS)).unlink()
    images.ensure(MIRRORS, print)
    assert images.tarball(image.image_key(MIRRORS)).is_file()
    assert builder.calls == 1


def test_a_failed_build_leaves_no_half_image(tmp_path):
    def broken(target, mirrors, progress):
        (target / "partial").write_text("x")
        raise RuntimeError("mirror unreachable")

    images = image.ImageCache(tmp_path, broken, packages=None)
    with pytest.raises(RuntimeError):
        images.ensure(MIRRORS, print)
    key = image.image_key(MIRRORS)
    assert not images.rootfs(key).exists() and not images.tarball(key).exists()
    assert [p.name for p in images.dir.iterdir()] == [f"{key}.lock"]


def test_key_changes_with_the_mirror():
    assert image.image_key(MIRRORS) != image.image_key(Mirrors("http://other.example/debian", None))


def test_debootstrap_progress_is_one_line_per_phase_and_interval():
    lines: list[str] = []
    reporter = debootstrap.PhaseReporter(lines.append, interval=3600)
    for package in ("a", "b", "c"):
        reporter.feed(f"I: Retrieving {package} 1.0\n")
    reporter.feed("W: something odd\n")
    reporter.feed("I: Unpacking a...\n")
    reporter.feed("I: Unpacking b...\n")
    assert lines == ["base image: downloading packages (1)", "base image: unpacking packages (1)"]
