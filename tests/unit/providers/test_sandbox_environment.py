"""check_environment refuses clearly, before changing anything, when this machine cannot run the sandbox."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import SandboxError
from provision.providers.sandbox import environment

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:40 / /srv/layers rw,relatime - overlay overlay rw,lowerdir=/a,upperdir=/b,workdir=/c
31 22 0:41 / /srv/my\\040state rw,relatime - tmpfs tmpfs rw
"""


def test_not_root_is_refused_first(monkeypatch, tmp_path):
    monkeypatch.setattr(environment.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxError, match="needs root") as caught:
        environment.check(tmp_path)
    assert "sudo" in caught.value.hint


def test_missing_binaries_are_named_with_their_packages(monkeypatch, tmp_path):
    monkeypatch.setattr(environment.os, "geteuid", lambda: 0)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    with pytest.raises(SandboxError) as caught:
        environment.check(tmp_path)
    assert "debootstrap" in caught.value.message and "apt-cacher-ng" in caught.value.message
    assert "ip" in caught.value.message.split("needs ")[1]
    assert caught.value.hint.startswith("install them with `apt-get install ")
    assert "iproute2" in caught.value.hint and "debootstrap" in caught.value.hint


@pytest.mark.parametrize("path, fstype", [
    ("/srv/layers/state", "overlay"),
    ("/srv/my state/x", "tmpfs"),  # mountinfo escapes the space as \040
    ("/var/lib/other", "ext4"),
])
def test_filesystem_of_picks_the_deepest_mount(path, fstype, monkeypatch):
    monkeypatch.setattr(Path, "resolve", lambda self: self)
    monkeypatch.setattr(Path, "exists", lambda self: True)
    assert environment.filesystem_of(Path(path), MOUNTINFO) == fstype


def test_state_on_an_overlay_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setattr(Path, "resolve", lambda self: self)
    monkeypatch.setattr(Path, "exists", lambda self: True)
    with pytest.raises(SandboxError, match="is on overlay") as caught:
        environment.check_state_filesystem(Path("/srv/layers/state"), MOUNTINFO)
    assert "PROVISION_STATE_DIR" in caught.value.hint
    environment.check_state_filesystem(Path("/var/lib/state"), MOUNTINFO)  # ext4: fine


def test_this_machine_passes():
    if environment.os.geteuid() != 0:
        pytest.skip("the sandbox needs root")
    environment.check(Path("/var/tmp"))
