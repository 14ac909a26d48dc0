"""What a deploy applied: the rendered inventory read back as settings (every host's, each host's own with its groups),
its digest, and the private state document it is kept in."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from provision import inventory
from provision.cluster import converge, lifecycle
from provision.deploy import engine
from provision.errors import StateError
from provision.settings import applied
from provision.spec.loader import load_spec
from provision.state import ClusterState

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def rendered(monkeypatch, tmp_path):
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    spec = load_spec(REPO / "inventories" / "onprem.yaml")
    cluster = lifecycle.planned_cluster(spec)
    return spec, cluster, inventory.render(spec, cluster)


def test_the_inventory_reads_back_as_every_hosts_and_each_hosts_own_variables(rendered):
    spec, cluster, files = rendered
    settings = applied.from_inventory(files)
    assert settings.common["slurm_conf_parameters"] == {"SchedulerParameters": "bf_continue,bf_max_job_test=500",
                                                        "KillWait": "60"}  # !unsafe strings, read as text
    assert settings.common["slurm_health_interval"] == spec.health.interval_s
    assert settings.common["ansible_host_key_checking"] is True  # hosts.yml's all.vars belong to every host
    assert set(settings.hosts) == {n.name for n in cluster.nodes}
    first = cluster.controller
    assert settings.hosts[first.name]["ansible_host"] == first.address
    assert settings.groups_of(first.name) == sorted([*first.roles, f"nodegroup_{first.group}"])


def test_which_nodes_are_held_is_not_a_setting(rendered):
    spec, cluster, files = rendered
    held = cluster.model_copy(update={"vars": {**cluster.vars, converge.HOLD_VAR: "gpu01", "provider_fact": "x"}})
    settings = applied.from_inventory(inventory.render(spec, held), held.vars)
    assert converge.HOLD_VAR in applied.TRANSIENT and converge.HOLD_VAR not in settings.common
    assert settings.provider_vars == {"provider_fact": "x"} and settings.common["provider_fact"] == "x"
    assert settings.digest != applied.from_inventory(files).digest  # the provider's fact is rendered, so it counts


def test_the_digest_follows_every_value_and_nothing_else(rendered):
    _, _, files = rendered
    one, two = applied.from_inventory(files), applied.from_inventory(dict(files))
    assert one.digest == two.digest and len(one.digest) == 64
    changed = files["group_vars/all/cluster.yml"].replace("slurm_health_interval: 300", "slurm_health_interval: 120")
    assert applied.from_inventory({**files, "group_vars/all/cluster.yml": changed}).digest != one.digest


def test_the_record_round_trips_through_a_private_state_document(rendered, tmp_path):
    _, _, files = rendered
    state = ClusterState(tmp_path / "state", "onprem-example")
    assert applied.load(state) is None
    settings = applied.record(state, applied.from_inventory(files, {"fact": "1"}))
    loaded = applied.load(state)
    assert loaded == settings and loaded.digest == settings.digest
    assert stat.S_IMODE((state.path / "settings.json").stat().st_mode) == 0o600
    state.write(applied.DOCUMENT, {"format": 99})
    with pytest.raises(StateError, match="format 99"):
        applied.load(state)


def test_a_deploy_records_what_ansible_read_from_the_inventory_folder(rendered, tmp_path):
    spec, cluster, _ = rendered
    state = ClusterState.for_spec(spec)
    inventory.write(spec, cluster, state.inventory_dir)
    settings = engine.record_settings(state, cluster)
    assert applied.load(state) == settings == applied.from_inventory(inventory.render(spec, cluster), cluster.vars)


@pytest.mark.parametrize("options, whole", [
    (dict(), True), (dict(limit="gpu01"), False), (dict(tags="slurm"), False), (dict(check=True), False),
    (dict(retry_failed=True), False),
])
def test_only_a_run_on_every_node_with_every_role_is_recorded(options, whole):
    assert engine.whole(engine.DeployOptions(**options)) is whole
