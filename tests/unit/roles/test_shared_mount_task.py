"""The shared_mount role's mount command, run as the role writes it (with stand-in `findmnt` and `mount`): a node
that has just booted mounts the filesystem from /etc/fstab on its own, perhaps after the role's probe read it
unmounted, and mount.glusterfs refuses a second mount ("according to mtab, GlusterFS is already mounted"), which
failed `deploy --retry-failed` of a node just started again. A mount there now is left alone and reported unchanged;
otherwise the mount point is mounted, reaching the shell as one argument, never as code."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

MOUNT_TASKS = Path(__file__).resolve().parents[3] / "playbooks/roles/shared_mount/tasks/mount.yml"
HOSTILE = "/shared dir; touch /tmp/owned $(id) `id`"


def _task() -> dict:
    [task] = [t for t in yaml.safe_load(MOUNT_TASKS.read_text()) if t["name"].startswith("Mount the filesystem")]
    return task


def _run(tmp_path: Path, mounted: bool, mount_rc: int = 0,
         point: str = HOSTILE) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run the task's argv with the mount point substituted (as Ansible passes it: one argv element)."""
    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, rc in (("findmnt", 0 if mounted else 1), ("mount", mount_rc)):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\nprintf "%s|" {name} "$@" >> "{calls}"\necho >> "{calls}"\nexit {rc}\n')
        tool.chmod(0o755)
    argv = [point if part == "{{ shared_mount_point }}" else part for part in _task()["ansible.builtin.command"]["argv"]]
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"})
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_a_mount_the_boot_made_meanwhile_is_left_alone_and_unchanged(tmp_path):
    done, calls = _run(tmp_path, mounted=True)
    assert done.returncode == 0 and done.stdout.strip() != "mounted"
    assert calls == [f"findmnt|-n|--mountpoint|{HOSTILE}|"]  # asked about the mount point only; mount never ran


def test_an_unmounted_point_is_mounted_as_one_argument_and_reported_changed(tmp_path):
    done, calls = _run(tmp_path, mounted=False)
    assert done.returncode == 0 and done.stdout.strip() == "mounted"
    assert calls[-1] == f"mount|{HOSTILE}|"
    assert not Path("/tmp/owned").exists()


def test_a_mount_that_fails_fails_the_task(tmp_path):
    done, _ = _run(tmp_path, mounted=False, mount_rc=32)
    assert done.returncode == 32 and done.stdout.strip() != "mounted"


def test_the_task_reports_change_from_its_output_and_still_retries_a_mount_that_fails():
    task = _task()
    assert task["changed_when"] == "_shared_mount_done.stdout == 'mounted'"
    assert task["until"] == "_shared_mount_done.rc == 0" and task["retries"] >= 3
