"""Sandbox nodes of either Debian release: the spec's provider.os picks the suite debootstrap builds, the apt
sources nodes use and the cache key, so Debian 12 and Debian 13 images live side by side."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from provision.providers.sandbox import debootstrap, image, releases, rootfs
from provision.providers.sandbox.config import SandboxConfig
from provision.providers.sandbox.mirror import Mirrors
from provision.providers.sandbox.packages import NodePackages

MIRRORS = Mirrors("http://m.example/debian", "http://m.example/debian-security", ("main", "contrib"))


def test_the_default_release_is_debian_13_and_both_releases_are_named():
    assert SandboxConfig(type="sandbox").os == releases.DEFAULT == "debian-13"
    assert {r.name: (r.suite, r.slurm_series) for r in releases.RELEASES.values()} == {
        "debian-12": ("bookworm", "22.05"), "debian-13": ("trixie", "24.11")}


def test_debootstrap_builds_the_suite_asked_for_with_what_that_suite_needs():
    trixie = debootstrap.command(Path("/t"), MIRRORS.archive, "trixie")
    bookworm = debootstrap.command(Path("/t"), MIRRORS.archive, "bookworm")
    assert trixie[-3:] == ["trixie", "/t", MIRRORS.archive] and bookworm[-3] == "bookworm"
    # trixie's minimal base carries systemd, which conflicts with the standalone tmpfiles package bookworm needs
    assert "systemd-standalone-tmpfiles" in bookworm[2] and "systemd-standalone-tmpfiles" not in trixie[2]


def test_nodes_get_apt_sources_of_their_own_suite():
    text = rootfs.apt_sources(MIRRORS, "trixie")
    assert "Suites: trixie trixie-updates\n" in text and "Suites: trixie-security\n" in text
    assert "bookworm" not in text and "Components: main contrib" in text


def test_each_release_has_its_own_cached_images():
    packages = NodePackages(("munge",), (), ())
    old, new = image.image_key(MIRRORS, "bookworm"), image.image_key(MIRRORS, "trixie")
    assert old.startswith("bookworm-") and new.startswith("trixie-") and old != new
    assert image.node_image_key(MIRRORS, packages, "trixie").startswith(new + "-nodes-")
    assert image.image_key(MIRRORS) == old  # images built before provider.os existed stay valid


@pytest.mark.skipif(not (shutil.which("zstd") and shutil.which("tar")), reason="needs tar and zstd")
def test_the_cache_builds_each_release_once_and_keeps_both(tmp_path, monkeypatch):
    suites = []

    def fake_debootstrap(self, target, mirrors, progress, suite):
        suites.append(suite)
        (target / "etc").mkdir()
        (target / "etc/debian_version").write_text(suite + "\n")
    monkeypatch.setattr(image.ImageCache, "_debootstrap", fake_debootstrap)
    cache = image.ImageCache(tmp_path, packages=None)
    trixie = cache.ensure(MIRRORS, print, "trixie")
    bookworm = cache.ensure(MIRRORS, print, "bookworm")
    assert cache.ensure(MIRRORS, print, "trixie") == trixie and suites == ["trixie", "bookworm"]
    assert (trixie / "etc/debian_version").read_text() == "trixie\n"
    assert (bookworm / "etc/debian_version").read_text() == "bookworm\n"


def test_a_running_cluster_cannot_change_release_under_its_nodes(tmp_path):
    from provision.errors import SandboxError
    from provision.providers.sandbox.provider import SandboxProvider
    from provision.providers.sandbox.record import SandboxRecord
    from provision.spec.model import ClusterSpec
    from provision.state import ClusterState

    spec = ClusterSpec.model_validate({"name": "rel", "provider": {"type": "sandbox", "os": "debian-13"},
                                       "node_groups": [{"name": "ctl", "roles": ["controller"], "count": 1},
                                                       {"name": "cn", "roles": ["compute"], "count": 1}]})
    provider = SandboxProvider(spec, ClusterState(tmp_path, "rel"))
    running = SandboxRecord(cluster="rel", subnet="10.99.0.0/24", bridge="pv-rel", bridge_address="10.99.0.1",
                            mirror=MIRRORS.archive, os="debian-12")
    with pytest.raises(SandboxError, match="provider.os: the cluster's nodes run debian-12, the spec says debian-13"):
        provider._check_unchanged(running, "pv-rel")
    provider._check_unchanged(SandboxRecord(**{**running.as_dict(), "os": "debian-13"}), "pv-rel")
    # a record written before provider.os existed is a Debian 12 cluster
    assert SandboxRecord.from_dict({k: v for k, v in running.as_dict().items() if k != "os"}).os == "debian-12"


def test_notify_slurm_units_run_forking_with_their_pid_file_in_the_sandbox(tmp_path):
    units = tmp_path / "usr/lib/systemd/system"
    units.mkdir(parents=True)
    (units / "slurmctld.service").write_text("[Service]\nType=notify\nExecStart=/usr/sbin/slurmctld --systemd\n")
    (units / "slurmd.service").write_text("[Service]\nType=notify\nExecStart=/usr/sbin/slurmd --systemd\n")
    dropins = rootfs.notify_unit_dropins(tmp_path)
    ctld = dropins["etc/systemd/system/slurmctld.service.d/gpu-provision-sandbox.conf"]
    assert "Type=forking\nPIDFile=/run/slurmctld/slurmctld.pid\nExecStart=\nExecStart=/usr/sbin/slurmctld " \
           "$SLURMCTLD_OPTIONS\n" in ctld
    assert "PIDFile=/run/slurm/slurmd.pid" in dropins["etc/systemd/system/slurmd.service.d/gpu-provision-sandbox.conf"]
    assert "RuntimeDirectoryPreserve=yes" in dropins["etc/systemd/system/slurmd.service.d/gpu-provision-sandbox.conf"]
    # Debian 12's 22.05 units are not Type=notify: nothing to change there
    (units / "slurmctld.service").write_text("[Service]\nType=simple\nExecStart=/usr/sbin/slurmctld -D\n")
    (units / "slurmd.service").unlink()
    assert rootfs.notify_unit_dropins(tmp_path) == {}
