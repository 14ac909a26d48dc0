"""Faults injected at the SDK boundary: capacity, throttling, crashes. After each, `down` leaves nothing tagged."""
from __future__ import annotations

import json

import pytest
from aws_support import FAST, Faults, SimulatedCrash, creates, tagged

from provision.adaptors.aws import Aws
from provision.errors import CapacityError, ThrottledError

pytestmark = pytest.mark.aws


def _down_leaves_nothing(provider_for, spec, raw) -> None:
    """A fresh `down` (new process) removes everything and the independent check agrees."""
    teardown = provider_for(spec).destroy()
    assert teardown.leftovers == []
    assert tagged(raw, spec.name) == []


def _ledger(provider) -> dict:
    return json.loads((provider.state.path / "aws.json").read_text())


def test_capacity_error_mid_launch_is_clear_keeps_what_runs_and_leaves_no_orphan(make_spec, provider_for, faults,
                                                                                    raw, aws):
    faults.fail("RunInstances", "InsufficientInstanceCapacity", after=1, times=FAST.capacity_attempts)
    spec = make_spec()
    provider = provider_for(spec)
    with pytest.raises(CapacityError) as caught:
        provider.create()
    assert "no capacity for 4 x p5.48xlarge in us-east-1a after 2 attempts (InsufficientInstanceCapacity)" in str(
        caught.value)
    assert "1 instance(s) already launched are recorded" in caught.value.hint
    state = _ledger(provider)
    assert set(state["instances"]) == {"head01"} and state["launches"] == {}
    assert aws.calls["ec2:RunInstances"] == 1 + FAST.capacity_attempts
    _down_leaves_nothing(provider_for, spec, raw)


def test_capacity_error_is_retried_with_backoff_then_launches(make_spec, provider_for, faults, aws):
    faults.fail("RunInstances", "InsufficientInstanceCapacity", after=1, times=1)
    lines: list[str] = []
    cluster = provider_for(make_spec()).create(lines.append)
    assert {n.state for n in cluster.nodes} == {"running"}
    assert any(line.startswith("no capacity for 4 x p5.48xlarge") and "retrying" in line for line in lines)
    assert aws.calls["ec2:RunInstances"] == 3


def test_throttling_is_retried_then_succeeds(make_spec, provider_for, faults, aws, raw):
    faults.fail("CreateSecurityGroup", "RequestLimitExceeded", times=2)
    faults.fail("DescribeInstanceStatus", "Throttling", times=1)
    spec = make_spec()
    cluster = provider_for(spec).create()
    assert {n.state for n in cluster.nodes} == {"running"}
    assert aws.calls["ec2:CreateSecurityGroup"] == 3
    assert aws.calls["ec2:DescribeInstanceStatus"] == 2
    assert len(raw.ec2.describe_security_groups(
        Filters=[{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}])["SecurityGroups"]) == 1
    _down_leaves_nothing(provider_for, spec, raw)


def test_throttling_until_retries_run_out_is_a_throttled_error_and_no_orphan(make_spec, provider_for, faults, aws,
                                                                              raw):
    faults.fail("CreateSubnet", "Throttling", times=100)
    spec = make_spec()
    provider = provider_for(spec)
    with pytest.raises(ThrottledError) as caught:
        provider.create()
    assert f"ec2 create_subnet was still throttled after {FAST.max_attempts} attempts (Throttling)" in str(caught.value)
    assert aws.calls["ec2:CreateSubnet"] == FAST.max_attempts
    state = _ledger(provider)
    assert state["resources"]["vpc"]["status"] == "created" and state["resources"]["subnet"]["status"] == "creating"
    _down_leaves_nothing(provider_for, spec, raw)


def test_crash_between_two_resources_then_up_resumes(make_spec, provider_for, faults, raw, moto_url):
    faults.crash_before("CreateSecurityGroup")
    spec = make_spec()
    with pytest.raises(SimulatedCrash):
        provider_for(spec).create()
    resumed = Aws("us-east-1", endpoint_url=moto_url, policy=FAST, sleep=lambda _: None)  # a new process
    from provision.providers.aws.provider import AwsProvider

    provider = AwsProvider(spec, provider_for(spec).state, aws=resumed)
    cluster = provider.create()
    assert {n.state for n in cluster.nodes} == {"running"}
    assert creates(resumed.calls).get("ec2:CreateVpc") is None  # the VPC from before the crash was kept
    assert resumed.calls["ec2:CreateSecurityGroup"] == 1
    _down_leaves_nothing(provider_for, spec, raw)


@pytest.mark.parametrize("operation, kind, describe, key", [
    ("CreateSubnet", "subnet", "describe_subnets", "Subnets"),
    ("CreateVpc", "vpc", "describe_vpcs", "Vpcs"),
])
def test_crash_after_a_resource_was_made_but_not_recorded_adopts_it(make_spec, provider_for, faults, raw, moto_url,
                                                                    operation, kind, describe, key):
    faults.crash_after(operation)
    spec = make_spec()
    first = provider_for(spec)
    with pytest.raises(SimulatedCrash):
        first.create()
    assert _ledger(first)["resources"][kind]["status"] == "creating"  # the intent was written before the call
    from provision.providers.aws.provider import AwsProvider

    resumed = Aws("us-east-1", endpoint_url=moto_url, policy=FAST, sleep=lambda _: None)
    AwsProvider(spec, first.state, aws=resumed).create()
    assert resumed.calls.get(f"ec2:{operation}") is None
    tag = [{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}]
    assert len(getattr(raw.ec2, describe)(Filters=tag)[key]) == 1
    _down_leaves_nothing(provider_for, spec, raw)


def test_crash_after_run_instances_adopts_the_batch_instead_of_launching_twice(make_spec, provider_for, faults,
                                                                              raw, moto_url):
    faults.crash_after("RunInstances", call=2)  # the gpu batch was launched, its answer never recorded
    spec = make_spec()
    first = provider_for(spec)
    with pytest.raises(SimulatedCrash):
        first.create()
    assert set(_ledger(first)["launches"]) == {"gpu"}
    from provision.providers.aws.provider import AwsProvider

    resumed = Aws("us-east-1", endpoint_url=moto_url, policy=FAST, sleep=lambda _: None)
    lines: list[str] = []
    cluster = AwsProvider(spec, first.state, aws=resumed).create(lines.append)
    assert resumed.calls.get("ec2:RunInstances") is None
    assert "adopted 4 instance(s) of group gpu" in " ".join(lines)
    live = [i for r in raw.ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["running"]}])[
        "Reservations"] for i in r["Instances"]]
    assert len(live) == 5 and {n.provider_id for n in cluster.nodes} == {i["InstanceId"] for i in live}
    _down_leaves_nothing(provider_for, spec, raw)


def test_crash_during_down_is_finished_by_the_next_down(make_spec, provider_for, raw, moto_url):
    spec = make_spec()
    provider_for(spec).create()
    dying = Aws("us-east-1", endpoint_url=moto_url, policy=FAST, sleep=lambda _: None)
    Faults(dying).crash_before("DeleteSubnet")
    from provision.providers.aws.provider import AwsProvider

    with pytest.raises(SimulatedCrash):
        AwsProvider(spec, provider_for(spec).state, aws=dying).destroy()
    _down_leaves_nothing(provider_for, spec, raw)
