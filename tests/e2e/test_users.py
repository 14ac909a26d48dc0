"""Issue 33 end to end on the shared sandbox cluster: a team uses it.

Its spec (conftest.E2E_SPEC) has a login node, the GlusterFS filesystem, three people (alice in physics; bob in ml and
physics; carol in no account) and Slurm accounting with enforcement, a QoS `long` of one job per user, and fair share
40/60 between physics and its sub-account ml. Everything a user does here, they do logged in to the login node over
SSH with their own key, as a person would:
- their `srun` runs as their own uid on every compute node; `sbatch` output written to their home is on every node;
  sacct gives the job to their account;
- Slurm refuses carol with its own message (no association), holds alice's second `long` job, and shows the spec's
  fair shares;
- `provision users` lists them with their accounts and QoS as the cluster has them;
- taken out of the spec, carol is locked (expired, no shell, refused at login) with her home kept; changing one
  account's limit changes that limit only; the re-run after it changes nothing; put back, she logs in again.
"""
from __future__ import annotations

import json
import time

import pytest

from conftest import provision

pytestmark = pytest.mark.e2e

SLURM_REFUSES_NO_ASSOCIATION = "Invalid account or account/partition combination specified"


def _as(cluster, keys, user: str, command: str, **kwargs):
    """A command run by `user`, logged in to the login node with their own key."""
    return cluster.ssh_as(user, keys[user], cluster.login, command, **kwargs)


def _until(probe, seconds: float = 30.0):
    """probe() until it returns something true (then that), or its last answer once the time is up."""
    deadline = time.monotonic() + seconds
    while True:
        answer = probe()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(1)


def test_each_user_logs_in_to_the_login_node_with_their_own_key_only(slurm_cluster, e2e_user_keys):
    shown = _as(slurm_cluster, e2e_user_keys, "alice", "id -un; id -u; id -g; echo $HOME; stat -c '%U %a' $HOME")
    assert shown.stdout.split() == ["alice", "2001", "2001", "/shared/home/alice", "alice", "700"]
    wrong_key = slurm_cluster.ssh_as("alice", e2e_user_keys["bob"], slurm_cluster.login, "true", check=False)
    assert wrong_key.returncode == 255 and "Permission denied" in wrong_key.stderr


def test_a_person_logs_in_to_a_compute_node_only_while_they_have_a_job_there(slurm_cluster, e2e_user_keys):
    node = slurm_cluster.compute[0]
    refused = slurm_cluster.ssh_as("alice", e2e_user_keys["alice"], node, "true", check=False)
    assert refused.returncode == 255 and "Access denied by pam_slurm_adopt" in refused.stderr, refused.stderr
    job = _as(slurm_cluster, e2e_user_keys, "alice", f"cd && sbatch --parsable -N1 -w {node} -o /dev/null "
                                                     "--wrap 'sleep 300'").stdout.strip()
    try:
        running = _until(lambda: _as(slurm_cluster, e2e_user_keys, "alice",
                                     f"squeue -h -j {job} -o %T").stdout.strip() == "RUNNING")
        assert running, job
        inside = slurm_cluster.ssh_as("alice", e2e_user_keys["alice"], node, "echo $SLURM_JOB_ID; id -un")
        assert inside.stdout.split() == [job, "alice"]  # the session joined her job
        other = slurm_cluster.ssh_as("bob", e2e_user_keys["bob"], node, "true", check=False)
        assert other.returncode == 255 and "Access denied by pam_slurm_adopt" in other.stderr  # her job, not his
    finally:
        _as(slurm_cluster, e2e_user_keys, "alice", f"scancel {job}")
    assert slurm_cluster.ssh(node, "id -un").stdout.strip() == "root"  # root needs no job


def test_a_users_srun_runs_as_them_on_every_compute_node(slurm_cluster, e2e_user_keys):
    nodes = slurm_cluster.compute
    out = _as(slurm_cluster, e2e_user_keys, "alice", f"srun -N{len(nodes)} sh -c 'echo $(hostname) $(id -u) $(id -g)'",
              timeout=120).stdout
    assert sorted(line.split() for line in out.splitlines()) == sorted([node, "2001", "2001"] for node in nodes)


def test_batch_output_in_the_home_is_on_every_node_and_the_job_is_the_accounts(slurm_cluster, e2e_user_keys):
    nodes = slurm_cluster.compute
    job = _as(slurm_cluster, e2e_user_keys, "bob", f"cd && sbatch --parsable --wait -A ml -N{len(nodes)} "
              "-o e2e-%j.out --wrap 'srun hostname'", timeout=180).stdout.strip()
    assert job.isdigit(), job
    for node in slurm_cluster.info.nodes:
        seen = slurm_cluster.ssh(node.name, f"stat -c '%u %a' /shared/home/bob/e2e-{job}.out "
                                 f"&& sort /shared/home/bob/e2e-{job}.out").stdout.split("\n")
        assert seen[0].split()[0] == "2002" and seen[1:-1] == sorted(nodes), (node.name, seen)
    accounted = _until(lambda: _as(slurm_cluster, e2e_user_keys, "bob",
                                   f"sacct -X -n -P -j {job} -o user,account,state").stdout.strip() == "bob|ml|COMPLETED")
    assert accounted, _as(slurm_cluster, e2e_user_keys, "bob", f"sacct -X -P -j {job} -o user,account,state").stdout
    _as(slurm_cluster, e2e_user_keys, "bob", f"rm -f ~/e2e-{job}.out")


def test_slurm_refuses_a_user_without_an_association_with_its_own_message(slurm_cluster, e2e_user_keys):
    refused = _as(slurm_cluster, e2e_user_keys, "carol", "srun -N1 true", check=False)
    assert refused.returncode != 0 and SLURM_REFUSES_NO_ASSOCIATION in refused.stderr, refused.stderr


def test_a_qos_of_one_job_per_user_holds_the_second_job_pending(slurm_cluster, e2e_user_keys):
    submit = "sbatch --parsable -q long -N1 --wrap 'sleep 300'"
    first, second = (_as(slurm_cluster, e2e_user_keys, "alice", submit).stdout.strip() for _ in range(2))
    try:
        def states():
            out = _as(slurm_cluster, e2e_user_keys, "alice", f"squeue -h -j {first},{second} -o '%i %T %r'").stdout
            rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
            held = rows.get(first, [None])[0] == "RUNNING" and rows.get(second) == ["PENDING", "QOSMaxJobsPerUserLimit"]
            return rows if held else None

        assert _until(states), _as(slurm_cluster, e2e_user_keys, "alice", "squeue -u alice -o '%i %T %r'").stdout
    finally:
        _as(slurm_cluster, e2e_user_keys, "alice", f"scancel {first} {second}")


def test_fair_share_counts_and_each_accounts_share_is_the_specs(slurm_cluster):
    config = slurm_cluster.ssh(slurm_cluster.controller, "scontrol show config").stdout
    settings = dict(line.split(" = ", 1) for line in config.splitlines() if " = " in line)
    padded = {key.strip(): value.strip() for key, value in settings.items()}  # scontrol pads the names
    assert padded["PriorityType"] == "priority/multifactor"
    assert padded["AccountingStorageEnforce"] == "associations,limits,qos"
    assert int(padded["PriorityWeightFairShare"]) > 0
    shares = slurm_cluster.ssh(slurm_cluster.controller, "sshare -n -P -a -o account,user,rawshares").stdout
    accounts = {row[0].strip(): row[2] for row in (line.split("|") for line in shares.splitlines()) if not row[1]}
    assert accounts["physics"] == "40" and accounts["ml"] == "60", shares


def _people(cluster) -> dict[str, tuple]:
    shown = json.loads(provision("users", str(cluster.spec_path), "--json", check=False).stdout)
    return {p["name"]: (p["uid"], p["state"], p["listed"], p["accounts"], p["qos"]) for p in shown["people"]}


def test_provision_users_lists_who_has_access_as_the_cluster_has_it(slurm_cluster):
    people = _people(slurm_cluster)
    assert people == {"alice": (2001, "active", True, ["physics"], ["long", "normal"]),
                      "bob": (2002, "active", True, ["ml", "physics"], ["long", "normal"]),
                      "carol": (2003, "active", True, [], []),
                      "gp-certify": (59990, "certify", True, ["gp-certify"], ["gp-certify"])}, people


def _associations(cluster) -> list[str]:
    return sorted(cluster.ssh(cluster.controller, "sacctmgr -nP show association wopl "
                                                  "format=account,user,parentname,share,maxjobs,grptres,qos").stdout.split())


def test_removing_a_user_locks_them_and_a_limit_change_changes_only_that(slurm_cluster, e2e_user_keys):
    spec = slurm_cluster.spec_path.read_text()
    before = _associations(slurm_cluster)
    carol = next(line for line in spec.splitlines() if "name: carol" in line)
    changed = spec.replace(carol + "\n", "").replace("max_jobs: 20,", "max_jobs: 30,")
    assert changed.count("max_jobs: 30,") == 1
    try:
        slurm_cluster.spec_path.write_text(changed)
        code, result = slurm_cluster.deploy()
        assert code == 0, result
        after = _associations(slurm_cluster)
        assert sorted(set(after) - set(before)) == ["physics||root|40|30||long,normal"], (before, after)
        assert sorted(set(before) - set(after)) == ["physics||root|40|20||long,normal"], (before, after)
        for node in slurm_cluster.info.nodes:
            state = slurm_cluster.ssh(node.name, "passwd -S carol | cut -d' ' -f2; getent passwd carol | cut -d: -f7; "
                                      "getent shadow carol | cut -d: -f8; stat -c '%u %a' /shared/home/carol").stdout
            assert state.split("\n")[:4] == ["L", "/usr/sbin/nologin", "1", "2003 700"], (node.name, state)  # expired: day 1
        refused = _as(slurm_cluster, e2e_user_keys, "carol", "true", check=False)
        assert refused.returncode == 255, refused.stderr
        assert _people(slurm_cluster)["carol"] == (2003, "locked", False, [], [])
        code, again = slurm_cluster.deploy()
        assert code == 0 and again["changed_hosts"] == [], again["hosts"]
    finally:
        slurm_cluster.spec_path.write_text(spec)
        provision("deploy", str(slurm_cluster.spec_path), "--quiet", timeout=900)
    assert _as(slurm_cluster, e2e_user_keys, "carol", "id -un").stdout.strip() == "carol"
    assert _associations(slurm_cluster) == before
