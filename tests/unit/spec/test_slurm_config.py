"""software.slurm.config: extra slurm.conf parameters from an allow-list, one-word values; what gpu-provision writes
itself is refused with where it comes from. Each bad input is one finding naming its field, its value and the fix."""
from __future__ import annotations

import pytest

from provision.spec.loader import validate_file
from provision.spec.slurm_config import ALLOWED, WRITTEN

SPEC = """\
name: demo
provider: {type: sandbox}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: cn, roles: [compute], count: 2}
software:
  slurm:
    config:
"""

REFUSED = [
    ("NodeName: cn01", "software.slurm.config.NodeName",
     "'NodeName' is written by gpu-provision (from node_groups); a spec cannot set it here; remove it from "
     "software.slurm.config; change node_groups instead"),
    ("HealthCheckInterval: 60", "software.slurm.config.HealthCheckInterval",
     "(from health.interval_s)"),
    ("AccountingStorageEnforce: limits", "software.slurm.config.AccountingStorageEnforce",
     "(from accounting.enforce)"),
    ("AccountingStorageTRES: gres/gpu", "software.slurm.config.AccountingStorageTRES",
     "(from software.slurm.accounting)"),
    ("DependencyParameters: kill_invalid_depend", "software.slurm.config.DependencyParameters",
     "(from the slurm role (kill_invalid_depend))"),
    ("slurmctldhost: x", "software.slurm.config.slurmctldhost", "is written by gpu-provision"),
    ("killwait: 60", "software.slurm.config.killwait", "'killwait' is spelled KillWait in slurm.conf; write it as "
                                                       "KillWait"),
    ("KilWait: 60", "software.slurm.config.KilWait", "is not a slurm.conf parameter a spec may set; did you mean "
                                                     "KillWait?"),
    ("Frobnicate: 1", "software.slurm.config.Frobnicate", "use one of: SchedulerParameters,"),
    ("MessageTimeout: '20 # x'", "software.slurm.config.MessageTimeout", "'20 # x' is not a slurm.conf value"),
    ("SchedulerParameters: \"bf_continue\\nNodeName=evil\"", "software.slurm.config.SchedulerParameters",
     "is not a slurm.conf value"),
    ("SchedulerParameters: \"$(reboot)\"", "software.slurm.config.SchedulerParameters", "is not a slurm.conf value"),
    ("SchedulerParameters: \"a'b\"", "software.slurm.config.SchedulerParameters", "is not a slurm.conf value"),
    ("MinJobAge: true", "software.slurm.config.MinJobAge",
     "True is not a slurm.conf value (a word or a whole number); write it as slurm.conf takes it"),
    ("MinJobAge: [1]", "software.slurm.config.MinJobAge", "is not a slurm.conf value (a word or a whole number)"),
    ("KillWait: 'é'", "software.slurm.config.KillWait", "is not a slurm.conf value"),
]


@pytest.mark.parametrize("line, path, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_parameter_or_value_outside_the_shapes_is_one_finding_naming_the_field(tmp_path, line, path, message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC + f"      {line}\n")
    result = validate_file(spec)
    errors = [f for f in result.findings if f.level == "error"]
    assert len(errors) == 1, [f.render() for f in result.findings]
    assert errors[0].path == path and errors[0].line == 9
    assert message in errors[0].render()


def test_allowed_parameters_keep_their_values_as_slurm_conf_text(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC + "      KillWait: 60\n      SchedulerParameters: bf_continue,bf_max_job_test=500\n"
                           "      ReturnToService: 1\n      PriorityDecayHalfLife: 7-0\n")
    result = validate_file(spec)
    assert result.ok, [f.render() for f in result.findings]
    assert result.spec.software.slurm.config == {"KillWait": "60", "SchedulerParameters": "bf_continue,"
                                                 "bf_max_job_test=500", "ReturnToService": "1",
                                                 "PriorityDecayHalfLife": "7-0"}


def test_no_parameter_is_both_allowed_and_written_by_the_tool():
    assert not {name.lower() for name in ALLOWED} & {name.lower() for name in WRITTEN}
    assert not [name for name in ALLOWED if name.lower().startswith("accountingstorage")]
