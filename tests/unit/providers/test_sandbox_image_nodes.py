"""The node image: the base plus what the roles declare for it (meta/image.yml), built once per package list.

The base builder and the package installer (apt in a chroot, minutes of downloads) are small fakes; tar and zstd are
real, so the node image really is the base's tarball unpacked with the installer's work on top."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from provision.errors import SandboxError
from provision.providers.sandbox import image
from provision.providers.sandbox.mirror import Mirrors
from provision.providers.sandbox.packages import NodePackages, role_packages
from provision.resources import playbooks_dir

MIRRORS = Mirrors("http://m.example/debian", None)
PACKAGES = NodePackages(("munge", "slurmd"), ("gcc",), (("munge", 980, "/nonexistent"),))
pytestmark = pytest.mark.skipif(not (shutil.which("zstd") and shutil.which("tar")), reason="needs tar and zstd")


class Fakes:
    """A base builder and a package installer that write marker files and count their calls."""

    def __init__(self) -> None:
        self.builds = 0
        self.installs: list[NodePackages] = []

    def build(self, target: Path, mirrors: Mirrors, progress) -> None:
        self.builds += 1
        (target / "etc").mkdir()
        (target / "etc/os-release").write_text("base\n")

    def install(self, root: Path, packages: NodePackages, progress) -> list[str]:
        self.installs.append(packages)
        assert (root / "etc/os-release").read_text() == "base\n"  # installed on top of the unpacked base
        (root / "installed").write_text(" ".join(packages.with_recommends + packages.without_recommends))
        return ["etc/rc3.d/S01munge"]


@pytest.fixture
def fakes(tmp_path):
    return Fakes()


def test_nodes_get_the_base_with_the_packages_and_the_base_stays_as_it_was(tmp_path, fakes):
    cache = image.ImageCache(tmp_path, fakes.build, PACKAGES, fakes.install)
    root = cache.ensure(MIRRORS, print)
    assert root == cache.rootfs(image.node_image_key(MIRRORS, PACKAGES))
    assert (root / "installed").read_text() == "munge slurmd gcc"
    base = cache.rootfs(image.image_key(MIRRORS))
    assert (base / "etc/os-release").is_file() and not (base / "installed").exists()
    manifest = json.loads((cache.dir / f"{image.node_image_key(MIRRORS, PACKAGES)}.manifest.json").read_text())
    assert manifest["units_disabled"] == ["etc/rc3.d/S01munge"] and manifest["base"] == image.image_key(MIRRORS)


def test_the_node_image_is_built_once_and_then_reused(tmp_path, fakes):
    cache = image.ImageCache(tmp_path, fakes.build, PACKAGES, fakes.install)
    first = cache.ensure(MIRRORS, print)
    assert image.ImageCache(tmp_path, fakes.build, PACKAGES, fakes.install).ensure(MIRRORS, print) == first
    assert (fakes.builds, len(fakes.installs)) == (1, 1)


def test_a_missing_unpacked_node_image_comes_back_from_its_tarball(tmp_path, fakes):
    cache = image.ImageCache(tmp_path, fakes.build, PACKAGES, fakes.install)
    shutil.rmtree(cache.ensure(MIRRORS, print))
    assert (cache.ensure(MIRRORS, print) / "installed").is_file()
    assert len(fakes.installs) == 1


def test_another_package_list_builds_another_node_image_on_the_same_base(tmp_path, fakes):
    other = NodePackages(("munge",), (), PACKAGES.accounts)
    first = image.ImageCache(tmp_path, fakes.build, PACKAGES, fakes.install).ensure(MIRRORS, print)
    second = image.ImageCache(tmp_path, fakes.build, other, fakes.install).ensure(MIRRORS, print)
    assert first != second and (second / "installed").read_text() == "munge"
    assert fakes.builds == 1 and fakes.installs == [PACKAGES, other]


def test_the_node_image_key_follows_packages_accounts_and_mirror():
    key = image.node_image_key(MIRRORS, PACKAGES)
    assert key.startswith(image.image_key(MIRRORS) + "-nodes-")
    assert key == image.node_image_key(MIRRORS, NodePackages(("munge", "slurmd"), ("gcc",), PACKAGES.accounts))
    assert key != image.node_image_key(MIRRORS, NodePackages(("munge",), ("gcc",), PACKAGES.accounts))
    assert key != image.node_image_key(MIRRORS, NodePackages(PACKAGES.with_recommends, (), PACKAGES.accounts))
    assert key != image.node_image_key(MIRRORS, PACKAGES.__class__(PACKAGES.with_recommends,
                                                                   PACKAGES.without_recommends, ()))
    assert key != image.node_image_key(Mirrors("http://other.example/debian", None), PACKAGES)


def test_packages_none_gives_the_base_alone(tmp_path, fakes):
    root = image.ImageCache(tmp_path, fakes.build, None, fakes.install).ensure(MIRRORS, print)
    assert root == image.ImageCache(tmp_path).rootfs(image.image_key(MIRRORS)) and fakes.installs == []


def test_a_failed_install_leaves_no_node_image_but_keeps_the_base(tmp_path, fakes):
    def broken(root, packages, progress):
        raise SandboxError("apt-get failed")

    cache = image.ImageCache(tmp_path, fakes.build, PACKAGES, broken)
    with pytest.raises(SandboxError):
        cache.ensure(MIRRORS, print)
    key = image.node_image_key(MIRRORS, PACKAGES)
    assert not cache.rootfs(key).exists() and not cache.tarball(key).exists()
    assert cache.tarball(image.image_key(MIRRORS)).is_file()


def test_the_package_lists_are_the_roles_own():
    packages = role_packages()
    defaults = {role: yaml.safe_load((playbooks_dir() / "roles" / role / "defaults/main.yml").read_text())
                for role in ("common", "munge", "slurm", "mpi", "certify")}
    assert set(defaults["common"]["common_packages"]) | set(defaults["munge"]["munge_packages"]) \
        | set(defaults["slurm"]["slurm_compute_packages"]) <= set(packages.with_recommends)
    assert set(defaults["mpi"]["mpi_packages"]) | set(defaults["certify"]["certify_packages"]) \
        <= set(packages.without_recommends)  # the mpi and certify roles install without recommends
    assert "chrony" not in packages.with_recommends  # time sync is off on sandbox nodes
    assert {(a["name"], a["uid"]) for a in defaults["common"]["common_service_accounts"]} \
        == {(name, uid) for name, uid, _ in packages.accounts}


def test_the_image_carries_what_the_roles_declare_and_nothing_else():
    packages = role_packages()
    assert "glusterfs-client" in packages.with_recommends  # shared_mount's vars/glusterfs.yml, named by its file
    assert "nfs-common" not in packages.with_recommends + packages.without_recommends  # declared not_in_image
    assert not {"libnccl2", "rdma-core"} & set(packages.with_recommends + packages.without_recommends)


def test_the_same_packages_give_the_same_image_key_in_whatever_order_they_are_declared(tmp_path):
    copy = tmp_path / "playbooks"
    shutil.copytree(playbooks_dir(), copy)
    meta = copy / "roles/slurm/meta/image.yml"
    declared = yaml.safe_load(meta.read_text())
    meta.write_text(yaml.safe_dump({**declared, "packages": declared["packages"][::-1]}))
    assert role_packages(copy) == role_packages()
    assert image.node_image_key(MIRRORS, role_packages(copy)) == image.node_image_key(MIRRORS, role_packages())


def test_a_package_declared_with_and_without_recommends_goes_in_with_them(tmp_path):
    copy = tmp_path / "playbooks"
    shutil.copytree(playbooks_dir(), copy)
    (copy / "roles/common/meta/image.yml").write_text(yaml.safe_dump({"packages": [
        {"from": "common_packages", "recommends": True}, {"from": "common_packages", "recommends": False}]}))
    packages = role_packages(copy)
    assert "procps" in packages.with_recommends and "procps" not in packages.without_recommends


def _roles_with(tmp_path: Path, common_packages: object) -> Path:
    """A copy of the playbooks whose common role lists the given packages."""
    copy = tmp_path / "playbooks"
    shutil.copytree(playbooks_dir(), copy)
    defaults = copy / "roles/common/defaults/main.yml"
    values = yaml.safe_load(defaults.read_text())
    defaults.write_text(yaml.safe_dump({**values, "common_packages": common_packages}))
    return copy


@pytest.mark.parametrize("value, message", [
    (["procps", "{{ extra_package }}"], "common/defaults/main.yml: common_packages holds '{{ extra_package }}'"),
    ("procps", "common_packages is not a list"),
])
def test_a_package_list_the_image_cannot_read_is_refused_naming_the_role_and_variable(tmp_path, value, message):
    with pytest.raises(SandboxError, match=message.replace("{", r"\{").replace("}", r"\}")):
        role_packages(_roles_with(tmp_path, value))


@pytest.mark.parametrize("declared, message", [
    ({"packages": [{"from": "common_packages"}]}, "common/meta/image.yml: packages.0.recommends: Field required"),
    ({"packages": [{"from": "no_such_list", "recommends": True}]},
     "common/defaults/main.yml: no_such_list is not a list"),
    ({"packages": [{"from": "common_packages", "file": "../../slurm/defaults/main.yml", "recommends": True}]},
     "common/meta/image.yml: packages.0.file: String should match pattern"),
    ({"pakages": []}, "common/meta/image.yml: pakages: Extra inputs are not permitted"),
    ({"not_in_image": [{"from": "common_packages"}]}, "common/meta/image.yml: not_in_image.0.why: Field required"),
    ({"accounts": [{"from": "common_packages"}]}, "common/defaults/main.yml: common_packages holds 'ca-certificates'"),
])
def test_a_role_image_declaration_the_image_cannot_read_is_refused_naming_the_file(tmp_path, declared, message):
    copy = tmp_path / "playbooks"
    shutil.copytree(playbooks_dir(), copy)
    (copy / "roles/common/meta/image.yml").write_text(yaml.safe_dump(declared))
    with pytest.raises(SandboxError, match=re.escape(message)):
        role_packages(copy)
