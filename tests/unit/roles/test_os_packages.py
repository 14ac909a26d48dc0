"""The os_packages action (playbooks/roles/platform/action_plugins/os_packages.py), the one per-family package layer:
roles say what to install, the layer says how for the node's package manager. A wrong mapping would install the wrong
version, or nothing, on every node; so the arguments each family's module gets are pinned here, bad arguments fail with
the fix, and holding is idempotent (only names not held yet)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from role_plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "playbooks" / "roles" / "platform" / "action_plugins" / "os_packages.py"


def _load():
    return load_plugin(PLUGIN, "os_packages_under_test")


layer = _load()


def test_apt_pins_every_name_to_the_version_and_passes_the_options():
    spec = layer.normalise({"names": ["slurmd", "slurm-client"], "version": "24.11.5-1", "recommends": False,
                            "update_cache": True, "cache_valid_time": 3600, "allow_downgrade": True})
    assert layer.module_call("apt", spec) == ("ansible.builtin.apt", {
        "name": ["slurmd=24.11.5-1", "slurm-client=24.11.5-1"], "state": "present", "install_recommends": False,
        "allow_downgrade": True, "allow_change_held_packages": False, "update_cache": True, "cache_valid_time": 3600})


def test_apt_defaults_install_recommends_without_refreshing_the_lists():
    module, args = layer.module_call("apt", layer.normalise({"names": ["munge"]}))
    assert (module, args) == ("ansible.builtin.apt", {
        "name": ["munge"], "state": "present", "install_recommends": True, "allow_downgrade": False,
        "allow_change_held_packages": False})


def test_removal_names_the_packages_without_a_version():
    spec = layer.normalise({"names": ["nvidia-driver"], "version": "550.1-1", "state": "absent"})
    assert layer.module_call("apt", spec) == ("ansible.builtin.apt", {"name": ["nvidia-driver"], "state": "absent"})
    assert layer.module_call("dnf", spec) == ("ansible.builtin.dnf", {"name": ["nvidia-driver"], "state": "absent"})


def test_dnf_pins_as_name_dash_version_and_maps_recommends_to_weak_dependencies():
    spec = layer.normalise({"names": ["slurm"], "version": "24.11.5-1.el9", "recommends": False})
    assert layer.module_call("dnf", spec) == ("ansible.builtin.dnf", {
        "name": ["slurm-24.11.5-1.el9"], "state": "present", "install_weak_deps": False, "allow_downgrade": False,
        "update_cache": False})


def test_a_family_that_cannot_hold_says_so_instead_of_installing_unheld():
    with pytest.raises(layer.PackagesError, match="hold is not supported on dnf"):
        layer.module_call("dnf", layer.normalise({"names": ["slurm"], "hold": True}))


def test_an_unknown_package_manager_names_the_families_the_layer_knows():
    with pytest.raises(layer.PackagesError, match=r"no package layer for 'zypper'.*apt, dnf"):
        layer.module_call("zypper", layer.normalise({"names": ["a"]}))


@pytest.mark.parametrize(("args", "message"), [
    ({}, "names: None is not a non-empty list"),
    ({"names": []}, "is not a non-empty list"),
    ({"names": "munge"}, "is not a non-empty list"),
    ({"names": ["munge=0.5"]}, "give the version as `version`"),
    ({"names": ["a b"]}, "is not a non-empty list"),
    ({"names": ["-o", "x"]}, "is not a non-empty list"),
    ({"names": ["a"], "version": "1 2"}, "version: '1 2' is not a package version"),
    ({"names": ["a"], "state": "latest"}, "state: 'latest' is not one of present, absent"),
    ({"names": ["a"], "recommends": "maybe"}, "recommends: 'maybe' is not true or false"),
    ({"names": ["a"], "cache_valid_time": -1}, "cache_valid_time: -1 is not a number of seconds"),
    ({"names": ["a"], "hold": True, "state": "absent"}, "hold: true with state: absent"),
    ({"names": ["a"], "pkg": ["b"]}, "unknown argument.*pkg"),
])
def test_bad_arguments_fail_with_what_to_write(args, message):
    with pytest.raises(layer.PackagesError, match=message):
        layer.normalise(args)


def test_repeated_names_are_installed_once():
    assert layer.normalise({"names": ["a", "b", "a"]})["names"] == ["a", "b"]


def test_only_names_not_held_are_held_and_an_architecture_suffix_counts_as_held():
    listing = "slurmd\nslurm-client:amd64\n\n"
    assert layer.to_hold(["slurmd", "slurm-client", "slurmctld"], listing) == ["slurmctld"]
    assert layer.to_hold(["slurmd"], listing) == []


def test_the_hold_command_quotes_every_name():
    assert layer.FAMILIES["apt"][2](["a", "b;reboot"]) == "apt-mark hold a 'b;reboot'"


def test_the_manager_comes_from_the_platform_check_then_from_ansible_facts():
    assert layer.package_manager({"platform_package_manager": "apt"}) == "apt"
    assert layer.package_manager({"ansible_facts": {"pkg_mgr": "dnf"}}) == "dnf"
    with pytest.raises(layer.PackagesError, match="platform_package_manager"):
        layer.package_manager({})


def test_every_supported_release_names_a_manager_the_layer_knows():
    platform_vars = REPO / "playbooks" / "roles" / "platform" / "vars"
    managers = {path.name: (yaml.safe_load(path.read_text()) or {}).get("platform_package_manager")
                for path in platform_vars.glob("*-*.yml")}
    assert managers and all(manager in layer.FAMILIES for manager in managers.values()), managers


def test_no_role_installs_packages_with_a_manager_module_directly():
    direct = [f"{path.relative_to(REPO)}" for path in (REPO / "playbooks" / "roles").glob("*/*/**/*.yml")
              for task in _tasks(path) if {"ansible.builtin.apt", "apt", "ansible.builtin.dnf", "ansible.builtin.yum",
                                           "ansible.builtin.package"} & set(task)]
    assert direct == [], "install through os_packages (the per-family layer)"


def _tasks(path: Path) -> list[dict]:
    data = yaml.safe_load(path.read_text())
    found, stack = [], [data] if isinstance(data, list) else []
    while stack:
        for item in stack.pop():
            if isinstance(item, dict):
                found.append(item)
                stack.extend(item[key] for key in ("block", "rescue", "always") if isinstance(item.get(key), list))
    return found


def test_refreshing_the_lists_alone_needs_no_names():
    spec = layer.normalise({"update_cache": True, "cache_valid_time": "600"})
    assert layer.module_call("apt", spec) == ("ansible.builtin.apt", {"update_cache": True, "cache_valid_time": 600})
    assert layer.module_call("dnf", spec) == ("ansible.builtin.dnf", {"update_cache": True})
    with pytest.raises(layer.PackagesError, match="names: None"):
        layer.normalise({"update_cache": True, "recommends": False})
