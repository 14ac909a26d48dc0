"""Certify's own user: the user-shaped checks (whole-node jobs, MPI, gres, NCCL, filesystem, sbatch) run as a
managed non-root user (spec `certify.user`), so that a node where people cannot run fails, named.

Slurm starts a task on a node where the job's uid does not exist (Slurm 24.11: srun exits 0, and `id -un` fails
there), so each node is asked first, as that user: the uid resolves, the home is there (mounted, where homes are
shared) and writable, /tmp is writable. slurm.user_job records it per node; the other user-shaped steps run on
the nodes where it passed. The probe (GPU health, Xids, DCGM) stays root's: a user cannot read the kernel log on a
host with kernel.dmesg_restrict=1, Debian's and Ubuntu's default.

Pure: the step is an srun.Step record; the judgement reads srun.StepOutput.
"""
from __future__ import annotations

import shlex
from collections.abc import Sequence

from provision.certify.control.slurm_checks import parse_fields
from provision.certify.control.srun import Step, StepOutput
from provision.certify.probe.records import CheckResult

TIMEOUT_S = 60
# Each line is key=value (slurm_checks.parse_fields); a failed test says why and stops.
CHECK = r"""u=$(id -u)
fail() { echo "user_check=fail"; echo "user_reason=$1"; exit 0; }
name=$(id -un 2>/dev/null) || fail "uid $u does not resolve on this node (getent passwd $u finds no entry)"
home=$(getent passwd "$u" | cut -d: -f6)
echo "user=$name"; echo "uid=$u"; echo "home=$home"; echo "account=${SLURM_JOB_ACCOUNT:-}"
[ -n "$home" ] && [ -d "$home" ] || fail "the home $home of $name is missing here (not made, or not mounted)"
f=$(mktemp -p "$home" .gp-certify.XXXXXX 2>/dev/null) && rm -f "$f" || fail "$name cannot write in its home $home"
f=$(mktemp -p /tmp gp-certify.XXXXXX 2>/dev/null) && rm -f "$f" || fail "$name cannot write in /tmp"
echo "user_check=pass"
"""


def step(nodes: Sequence[str], user: str, job_name: str, env: tuple[tuple[str, str], ...] = ()) -> Step:
    """The user check on every node, one task a node, submitted as `user`."""
    return Step(tuple(nodes), "sh -c " + shlex.quote(CHECK), job_name, TIMEOUT_S, env=env, user=user)


def checks(one: Step, output: StepOutput) -> list[CheckResult]:
    """slurm.user_job for each node of the step."""
    missing = output.missing(one.nodes)
    out = []
    for node in one.nodes:
        base = dict(node=node, threshold=f"runs as {one.user}", source="srun as certify.user (spec certify.user)")
        if node in missing:
            out.append(CheckResult("slurm.user_job", "fail", **base,
                                   detail=f"a job of {one.user} did not run here: {missing[node]}; users' jobs will "
                                          "not either (is the user's association in Slurm's accounting?)"))
            continue
        fields = parse_fields(output.texts[node])
        account = f" in account {fields['account']}" if fields.get("account") else ""
        if fields.get("user_check") == "pass":
            out.append(CheckResult("slurm.user_job", "pass", **base, value=fields.get("user"),
                                   detail=f"ran as {fields.get('user')} (uid {fields.get('uid')}){account}, home "
                                          f"{fields.get('home')} and /tmp writable"))
        else:
            reason = fields.get("user_reason") or "the check printed no verdict"
            out.append(CheckResult("slurm.user_job", "fail", **base, value=fields.get("user"),
                                   detail=f"{reason}: people cannot run jobs here; `provision deploy --tags users` "
                                          "makes users and homes again"))
    return out


def passed(results: Sequence[CheckResult]) -> list[str]:
    """The nodes where the user check passed."""
    return [c.node for c in results if c.check == "slurm.user_job" and c.verdict == "pass" and c.node]

