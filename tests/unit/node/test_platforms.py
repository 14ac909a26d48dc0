"""provision.node.platforms: the supported OS as the platform role lists them, read from its files (their one home), and
how a node's os-release is judged against them."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from provision.errors import StateError
from provision.node import platforms
from provision.node.platforms import NodeOS, Platform

VARS = platforms.role_dir() / "vars"


def test_the_supported_releases_come_from_the_platform_role():
    assert [(p.title, p.codename, p.tested, p.slurm_series) for p in platforms.supported()] == [
        ("Debian 12", "bookworm", True, "22.05"), ("Debian 13", "trixie", True, "24.11"),
        ("Ubuntu 22.04", "jammy", False, "21.08"), ("Ubuntu 24.04", "noble", False, "23.11")]
    assert {p.package_manager for p in platforms.supported()} == {"apt"}


def test_every_release_has_a_vars_file_and_every_vars_file_a_release():
    listed = {f"{p.key}.yml" for p in platforms.supported()}
    present = {path.name for path in VARS.glob("*.yml")} - {"main.yml"}
    assert listed == present


def test_every_vars_file_defines_the_same_variables_and_names_itself():
    """A release added without one of the variables a role reads would fail only on a node running it."""
    files = {path.stem: yaml.safe_load(path.read_text()) for path in VARS.glob("*-*.yml")}
    reference = set(files["Debian-12"])
    assert {name: set(values) ^ reference for name, values in files.items()} == {name: set() for name in files}
    assert {name: values["platform_release"] for name, values in files.items()} == {name: name for name in files}


def test_the_platform_vars_hold_platform_facts_only():
    """Each role owns its per-OS values (vars/os/<family>.yml, vars/os/<OS>-<release>.yml); platform's files hold
    no other role's private variables."""
    for path in VARS.glob("*-*.yml"):
        assert all(name.startswith("platform_") for name in yaml.safe_load(path.read_text())), path.name


def test_the_gpu_roles_carry_their_values_for_every_release():
    roles = VARS.parents[1]
    releases = {f"{p.key}.yml" for p in platforms.supported()}
    for role in ("gpu_base", "nvidia_driver", "rdma"):
        assert releases <= {path.name for path in (roles / role / "vars" / "os").glob("*.yml")}, role


@pytest.mark.parametrize("text, expected", [
    ('NAME="Rocky Linux"\nID="rocky"\nVERSION_ID="9.4"\nPRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"\n',
     NodeOS("rocky", "9.4", "Rocky Linux", "Rocky Linux 9.4 (Blue Onyx)")),
    ("# a comment\nID=debian\nVERSION_ID='13'\n\nNAME='Debian GNU/Linux'\n",
     NodeOS("debian", "13", "Debian GNU/Linux")),
    ("", NodeOS()),
])
def test_os_release_is_read_like_a_shell_would(text, expected):
    assert platforms.parse_os_release(text) == expected


@pytest.mark.parametrize("node, title", [
    (NodeOS("debian", "13"), "Debian 13"), (NodeOS("ubuntu", "24.04"), "Ubuntu 24.04"),
    (NodeOS("debian", "12.5"), None), (NodeOS("debian", ""), None), (NodeOS("ubuntu", "24.10"), None),
    (NodeOS("rocky", "9.4"), None), (NodeOS("raspbian", "12"), None), (NodeOS(), None),
])
def test_a_node_matches_a_release_by_id_and_version_exactly(node, title):
    found = platforms.match(node)
    assert (found.title if found else None) == title


@pytest.mark.parametrize("node, shown", [
    (NodeOS("debian", "13", "Debian GNU/Linux"), "Debian 13 (trixie)"),
    (NodeOS("rocky", "9.4", "Rocky Linux"), "Rocky Linux 9.4"),
    (NodeOS("debian", "11"), "debian 11"),
    (NodeOS("debian", "", "Debian GNU/Linux", "Debian GNU/Linux trixie/sid"), "Debian GNU/Linux"),
    (NodeOS(pretty="Something"), "Something"),
    (NodeOS(), "an OS without /etc/os-release"),
])
def test_a_node_os_is_described_by_name_and_release(node, shown):
    assert platforms.describe(node) == shown


def test_the_refusal_lists_what_is_supported_and_what_the_node_runs():
    assert platforms.refusal("gpu01", NodeOS("rocky", "9.4", "Rocky Linux")) == (
        "gpu-provision supports Debian 12, Debian 13 (tested); Ubuntu 22.04, Ubuntu 24.04 (untested); "
        "gpu01 runs Rocky Linux 9.4")


def test_a_group_without_releases_is_left_out_of_the_list():
    only = (Platform("Debian", "13", "debian", "trixie", True, "24.11", "apt"),)
    assert platforms.supported_text(only) == "gpu-provision supports Debian 13 (tested)"


def test_a_broken_role_file_is_a_state_error_naming_it(tmp_path):
    shutil.copytree(platforms.role_dir(), tmp_path / "roles" / "platform")
    main = tmp_path / "roles" / "platform" / "vars" / "main.yml"
    main.write_text("platform_supported: []\n")
    with pytest.raises(StateError, match="platform_supported is missing or empty"):
        platforms.supported(tmp_path)
    main.write_text(": not yaml [")
    platforms.supported.cache_clear()
    with pytest.raises(StateError, match=str(Path("vars") / "main.yml")):
        platforms.supported(tmp_path)
