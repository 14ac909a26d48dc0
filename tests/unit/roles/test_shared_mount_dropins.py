"""The shared_mount role's drop-ins as config_files entries (filter_plugins/shared_mount.py): one per unit, under the
unit's own .d folder; a unit name that is not one (a path, empty) is refused before anything is written."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[3] / "playbooks/roles/shared_mount/filter_plugins/shared_mount.py"
_spec = importlib.util.spec_from_file_location("shared_mount_filters", PLUGIN)
filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(filters)


def test_each_unit_gets_its_drop_in_rendered_root_owned_0644():
    assert filters.shared_mount_dropin_files(["slurmd.service", "docker.service"]) == [
        {"dest": "/etc/systemd/system/slurmd.service.d/gpu-provision-shared-mount.conf",
         "template": "requires-mount.conf.j2", "mode": "0644", "owner": "root", "group": "root"},
        {"dest": "/etc/systemd/system/docker.service.d/gpu-provision-shared-mount.conf",
         "template": "requires-mount.conf.j2", "mode": "0644", "owner": "root", "group": "root"}]
    assert filters.shared_mount_dropin_files([]) == []


@pytest.mark.parametrize("unit", ["", "../../etc/passwd", "a/b.service", "..", None, 3])
def test_a_unit_name_that_is_not_one_is_refused(unit):
    with pytest.raises(ValueError, match="is not a unit name"):
        filters.shared_mount_dropin(unit)


def test_the_filters_are_registered_under_their_names():
    assert set(filters.FilterModule().filters()) == {"shared_mount_dropin", "shared_mount_dropin_files"}
