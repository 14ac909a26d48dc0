"""A node's identity goes into its own upper layer: its host key, the cluster key, the apt proxy."""
from __future__ import annotations

import os
import stat

from provision.providers.sandbox import rootfs
from provision.providers.sandbox.mirror import Mirrors

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIClusterKeyForTests cluster"


def lower_layer(tmp_path):
    lower = tmp_path / "lower"
    (lower / "root").mkdir(parents=True, exist_ok=True)
    os.chmod(lower / "root", 0o700)
    (lower / "etc/ssh").mkdir(parents=True, exist_ok=True)
    return lower


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def prepare(tmp_path, upper, **overrides):
    args = {"name": "node01", "address": "10.98.0.11", "authorized_key": KEY, "proxy_url": "http://10.98.0.1:3142"}
    args.update(overrides)
    return rootfs.prepare_node(upper, lower_layer(tmp_path), **args)


def test_identity_files_and_modes(tmp_path):
    upper = tmp_path / "upper"
    upper.mkdir()
    host_key = prepare(tmp_path, upper)
    assert host_key.startswith("ssh-ed25519 ") and len(host_key.split()) == 2
    assert (upper / "etc/hostname").read_text() == "node01\n"
    assert "10.98.0.11\tnode01" in (upper / "etc/hosts").read_text()
    assert (upper / "root/.ssh/authorized_keys").read_text() == KEY + "\n"
    assert mode(upper / "root") == 0o700  # copied from the lower layer: the merged /root stays private
    assert mode(upper / "root/.ssh") == 0o700
    assert mode(upper / "root/.ssh/authorized_keys") == 0o600
    assert mode(upper / rootfs.HOST_KEY) == 0o600
    assert (upper / rootfs.PROXY_CONF).read_text() == (
        'Acquire::http::Proxy "http://10.98.0.1:3142";\nAcquire::http::Pipeline-Depth "0";\n'
        'Acquire::http::Timeout "60";\nAcquire::Retries "3";\n')
    assert mode(upper / rootfs.INIT_PATH) == 0o755


def test_restart_keeps_host_key_and_what_roles_changed(tmp_path):
    upper = tmp_path / "upper"
    upper.mkdir()
    first = prepare(tmp_path, upper)
    (upper / "etc/hosts").write_text("10.98.0.10 ctl01\n10.98.0.11 node01\n")
    second = prepare(tmp_path, upper)
    assert first == second
    assert (upper / "etc/hosts").read_text() == "10.98.0.10 ctl01\n10.98.0.11 node01\n"


def test_every_node_gets_its_own_host_key(tmp_path):
    keys = set()
    for name in ("a", "b", "c"):
        upper = tmp_path / f"upper-{name}"
        upper.mkdir()
        keys.add(prepare(tmp_path, upper, name=name))
    assert len(keys) == 3


def test_new_cluster_key_replaces_the_old_one(tmp_path):
    upper = tmp_path / "upper"
    upper.mkdir()
    prepare(tmp_path, upper)
    prepare(tmp_path, upper, authorized_key="ssh-ed25519 AAAAnewkey cluster")
    assert (upper / "root/.ssh/authorized_keys").read_text() == "ssh-ed25519 AAAAnewkey cluster\n"


def test_node_apt_sources_use_the_host_mirror_and_security():
    text = rootfs.apt_sources(Mirrors("http://m.example/debian", "http://m.example/debian-security", ("main",)))
    assert "URIs: http://m.example/debian\nSuites: bookworm bookworm-updates\n" in text
    assert "URIs: http://m.example/debian-security\nSuites: bookworm-security\n" in text
    assert "security" not in rootfs.apt_sources(Mirrors("http://m.example/debian", None))
