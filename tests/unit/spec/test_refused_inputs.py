"""Spec values that crashed, hung or passed though they must not (issue 31): each is refused by validate, plan and
inventory alike with exit 2 and one `error:` line naming its field, at once, with nothing written.

Before: a FIFO as the repository key hung every command; Unicode digits in nccl.version passed (and Unicode 15
digits crashed int()); a name over 255 bytes in a path gave a traceback; `//etc` passed the system-path check; hosts
named default, all or localhost and a partition DEFAULT passed.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_contract import cli, one_error_line

import provision.cluster.lifecycle  # noqa: F401 - imported once here, so that the time bound measures the command only

SPEC = """\
name: demo
provider: {type: sandbox}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: cn, roles: [compute], hosts: "cn[01-02]"}
"""
REPOSITORY = ("software:\n  slurm: {{source: repository, repository_url: 'https://slurm.example.internal/debian', "
              "version: 24.11.5-1, repository_key: '{key}'}}\n")
LONG = "x" * 256


def _fifo(tmp_path: Path) -> str:
    os.mkfifo(tmp_path / "key.asc")
    return str(tmp_path / "key.asc")


CASES = [
    ("repository key that is a FIFO", lambda t: SPEC + REPOSITORY.format(key=_fifo(t)),
     "software.slurm.repository_key", "key.asc: is a FIFO, not a regular file"),
    ("repository key that is a device", lambda t: SPEC + REPOSITORY.format(key="/dev/zero"),
     "software.slurm.repository_key", "/dev/zero: is a device, not a regular file"),
    ("ssh key that is a FIFO", lambda t: SPEC + f"ssh: {{key_path: '{_fifo(t)}'}}\n",
     "ssh.key_path", "key.asc: is a FIFO, not a regular file"),
    ("nccl version in full-width digits", lambda t: SPEC + "software: {nccl: {version: '２.26.2'}}\n",
     "software.nccl.version", "is not an NCCL version (MAJOR.MINOR.PATCH in ASCII digits)"),
    ("nccl version in Arabic-Indic digits", lambda t: SPEC + "software: {nccl: {version: '٢.٢٦.٢'}}\n",
     "software.nccl.version", "is not an NCCL version"),
    ("nccl version in Unicode 15 digits", lambda t: SPEC + "software: {nccl: {version: '\U00011f52.26.2'}}\n",
     "software.nccl.version", "is not an NCCL version"),
    ("state_dir with a name over 255 bytes", lambda t: SPEC + f"state_dir: /tmp/{LONG}/state\n",
     "state_dir", "has a name of 256 bytes"),
    ("ssh key path with a name over 255 bytes", lambda t: SPEC + f"ssh: {{key_path: /tmp/{LONG}}}\n",
     "ssh.key_path", "has a name of 256 bytes"),
    ("repository key with a name over 255 bytes", lambda t: SPEC + REPOSITORY.format(key=f"/tmp/{LONG}"),
     "software.slurm.repository_key", "has a name of 256 bytes"),
    ("state_dir over 4095 bytes", lambda t: SPEC + f"state_dir: /{'ab/' * 1365}\n",
     "state_dir", "bytes long; a path has at most 4095"),
    ("mount point //etc", lambda t: SPEC + "filesystem: {type: nfs, server: nas, mount_point: //etc}\n",
     "filesystem.mount_point", "'//etc' (that is /etc) is a system path"),
    ("host named default", lambda t: SPEC.replace("cn[01-02]", "default,cn02"),
     "node_groups[1].hosts", "'default' is a reserved name"),
    ("host named all", lambda t: SPEC.replace("cn[01-02]", "cn01,all"),
     "node_groups[1].hosts", "'all' is a reserved name"),
    ("host named localhost", lambda t: SPEC.replace("cn[01-02]", "localhost,cn02"),
     "node_groups[1].hosts", "'localhost' is a reserved name"),
    ("partition DEFAULT", lambda t: SPEC.replace('"cn[01-02]"}', '"cn[01-02]", partition: DEFAULT}'),
     "node_groups[1].partition", "'DEFAULT' is a reserved name"),
    ("partition default from the group's name", lambda t: SPEC.replace("name: cn,", "name: default,"),
     "node_groups[1].name", "'default' is a reserved partition name"),
    ("partition named like the active checks' own", lambda t: SPEC.replace('"cn[01-02]"}', '"cn[01-02]", partition: gp-active}'),
     "node_groups[1].partition", "'gp-active' is a reserved name (the hidden partition of the active checks"),
]


@pytest.mark.parametrize("command", ["validate", "plan", "inventory"])
@pytest.mark.parametrize("text, field, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_refused_value_is_one_error_line_at_once_and_nothing_is_written(tmp_path, monkeypatch, command, text,
                                                                          field, message):
    spec = tmp_path / "cluster.yaml"
    spec.write_text(text(tmp_path), encoding="utf-8")
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    before = sorted(tmp_path.rglob("*"))
    extra = ["-o", str(tmp_path / "inventory")] if command == "inventory" else []
    code, err = cli(command, str(spec), *extra, limit_s=2)
    assert code == 2, err
    one_error_line(err, message)
    assert f"error: {field} (line " in err, err
    assert sorted(tmp_path.rglob("*")) == before, "a refused spec wrote something"
