"""`software.slurm.config`: extra slurm.conf parameters a spec may set, and the shape of their values.

A parameter is one of an allow-list of scheduler, timeout and priority settings (ALLOWED); the ones gpu-provision
writes itself (WRITTEN: nodes, partitions, the controller, accounting, the health program, plugins) are refused with
where they come from instead. A value is a slurm.conf word: ASCII letters, digits and `. _ , : = + / @ % -`, no
space, quote, `#` or shell character, so it can neither end its line nor start another. The slurm role writes each
as `Name=value` into slurm.conf (its template's "From the spec" block).
"""
from __future__ import annotations

import difflib
import re
from typing import Annotated, Union

from pydantic import AfterValidator, BeforeValidator

from provision.spec.shapes import shape_error

ALLOWED: tuple[str, ...] = (
    # scheduling and limits
    "SchedulerParameters", "SchedulerTimeSlice", "DefMemPerCPU", "DefMemPerGPU", "DefCpuPerGPU", "MaxMemPerCPU",
    "MaxJobCount", "MaxArraySize", "MaxStepCount", "MaxTasksPerNode", "FirstJobId", "EnforcePartLimits",
    "PreemptType", "PreemptMode", "JobRequeue", "KillOnBadExit", "PropagateResourceLimits",
    "PropagateResourceLimitsExcept", "ReturnToService", "TreeWidth",
    # timeouts
    "MessageTimeout", "SlurmctldTimeout", "SlurmdTimeout", "KillWait", "InactiveLimit", "MinJobAge",
    "OverTimeLimit", "WaitTime", "BatchStartTimeout", "CompleteWait", "GetEnvTimeout", "PrologEpilogTimeout",
    "TCPTimeout", "UnkillableStepTimeout",
    # priority
    "PriorityType", "PriorityWeightAge", "PriorityWeightFairshare", "PriorityWeightJobSize",
    "PriorityWeightPartition", "PriorityWeightQOS", "PriorityWeightTRES", "PriorityDecayHalfLife",
    "PriorityMaxAge", "PriorityFavorSmall", "PriorityFlags", "PriorityCalcPeriod", "PriorityUsageResetPeriod",
    # logging
    "SlurmctldDebug", "SlurmdDebug", "DebugFlags",
)

# What gpu-provision writes itself, and where a spec changes it instead.
WRITTEN: dict[str, str] = {
    "ClusterName": "the spec's name", "SlurmctldHost": "the controller node group",
    "ControlMachine": "the controller node group", "NodeName": "node_groups", "NodeSet": "node_groups",
    "DownNodes": "node_groups", "PartitionName": "node_groups[].partition",
    "AccountingStorageEnforce": "accounting.enforce", "AccountingStorage": "software.slurm.accounting",
    "DependencyParameters": "the slurm role (kill_invalid_depend)", "JobAcctGatherType": "the node's cgroup support",
    "ProctrackType": "the node's cgroup support", "TaskPlugin": "the node's cgroup support",
    "HealthCheckProgram": "health.enabled", "HealthCheckInterval": "health.interval_s",
    "HealthCheckNodeState": "health.node_state", "GresTypes": "node_groups[].gpu",
    "SlurmUser": "the slurm role", "AuthType": "the slurm role (munge)", "SlurmctldPort": "the slurm role",
    "SlurmdPort": "the slurm role", "StateSaveLocation": "the slurm role", "SlurmdSpoolDir": "the slurm role",
    "SlurmctldPidFile": "the installed Slurm version", "SlurmdPidFile": "the installed Slurm version",
    "SlurmctldLogFile": "the slurm role", "SlurmdLogFile": "the slurm role", "MailProg": "the slurm role",
    "MpiDefault": "the slurm role (pmix)", "SchedulerType": "the slurm role (sched/backfill)",
    "SelectType": "the slurm role (select/cons_tres)", "SelectTypeParameters": "the slurm role (CR_Core_Memory)",
    "JobCompType": "the slurm role", "Include": "nothing: slurm.conf is one file rendered from the spec",
}

_VALUE = re.compile(r"[A-Za-z0-9._,:=+/@%-]{1,256}")
_CANONICAL = {name.lower(): name for name in ALLOWED}


def _written_by_us(name: str) -> str | None:
    """Where a parameter gpu-provision writes comes from (AccountingStorage* by prefix), or None."""
    for written, source in WRITTEN.items():
        if name.lower() == written.lower() or (written == "AccountingStorage" and
                                               name.lower().startswith("accountingstorage")):
            return source
    return None


def parameter_name(name: str) -> str:
    """A parameter of the allow-list, spelled as slurm.conf's manual spells it."""
    source = _written_by_us(name)
    if source is not None:
        raise shape_error(f"is written by gpu-provision (from {source}); a spec cannot set it here",
                          f"remove it from software.slurm.config; change {source} instead")
    if name in ALLOWED:
        return name
    canonical = _CANONICAL.get(name.lower())
    if canonical is not None:
        raise shape_error(f"is spelled {canonical} in slurm.conf", f"write it as {canonical}")
    close = difflib.get_close_matches(name, ALLOWED, n=1, cutoff=0.75)
    raise shape_error("is not a slurm.conf parameter a spec may set",
                      f"did you mean {close[0]}?" if close else "use one of: " + ", ".join(ALLOWED))


def _as_text(value: object) -> object:
    """A whole number from YAML as its digits; a string as it is; anything else refused in one finding."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise shape_error("is not a slurm.conf value (a word or a whole number)",
                          "write it as slurm.conf takes it, quoted if YAML would read it otherwise: 'YES'")
    return value


def parameter_value(text: str) -> str:
    """A value as slurm.conf takes it: one word of the characters _VALUE allows."""
    if not _VALUE.fullmatch(text):
        raise shape_error("is not a slurm.conf value gpu-provision writes (ASCII letters, digits and . _ , : = + / @ "
                          "% -, at most 256 characters; no space, quote, '#' or shell character)",
                          "write it as slurm.conf takes it, e.g. bf_continue,bf_max_job_test=500 or 60")
    return text


SlurmParameter = Annotated[str, AfterValidator(parameter_name)]
SlurmValue = Annotated[str, BeforeValidator(_as_text, json_schema_input_type=Union[int, str]),
                       AfterValidator(parameter_value)]
