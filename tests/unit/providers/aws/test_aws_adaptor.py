"""The AWS adaptor: error codes to our errors, retries with backoff, call counts (botocore Stubber, no network)."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from provision.adaptors.aws import AlreadyExistsError, Aws, DependencyError, RetryPolicy, UnsupportedError
from provision.errors import (CapacityError, CloudAuthError, CloudError, CloudNotFoundError, QuotaError,
                              ThrottledError)

POLICY = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002)


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    delays: list[float] = []
    adaptor = Aws("us-east-1", endpoint_url="http://127.0.0.1:9", policy=POLICY, sleep=delays.append)  # never reached
    adaptor.delays = delays
    return adaptor


@pytest.mark.parametrize("code, error, retryable", [
    ("InsufficientInstanceCapacity", CapacityError, False),
    ("VcpuLimitExceeded", QuotaError, False),
    ("MaxSpotInstanceCountExceeded", QuotaError, False),
    ("RulesPerSecurityGroupLimitExceeded", QuotaError, False),
    ("RequestLimitExceeded", ThrottledError, True),  # EC2's throttle, despite the name
    ("Throttling", ThrottledError, True),
    ("InternalError", CloudError, True),
    ("UnauthorizedOperation", CloudAuthError, False),
    ("InvalidVpcID.NotFound", CloudNotFoundError, False),
    ("FileSystemNotFound", CloudNotFoundError, False),
    ("DependencyViolation", DependencyError, False),
    ("InvalidPermission.Duplicate", AlreadyExistsError, False),
    ("Resource.AlreadyAssociated", AlreadyExistsError, False),
    ("ParameterAlreadyExists", AlreadyExistsError, False),  # the name's claim is taken
    ("ParameterNotFound", CloudNotFoundError, False),  # the name is free
    ("InvalidParameterValue", CloudError, False),
])
def test_error_codes_become_our_errors(aws, code, error, retryable):
    translated = aws.translate(ClientError({"Error": {"Code": code, "Message": "m"}}, "RunInstances"), "ec2",
                               "run_instances")
    assert type(translated) is error
    assert translated.retryable is retryable and translated.code == code
    assert str(translated).startswith(f"ec2 run_instances: {code}: m")


def test_throttling_is_retried_with_backoff_and_counted(aws):
    with Stubber(aws.client("ec2")) as stub:
        stub.add_client_error("describe_vpcs", "RequestLimitExceeded", http_status_code=503)
        stub.add_client_error("describe_vpcs", "RequestLimitExceeded", http_status_code=503)
        stub.add_response("describe_vpcs", {"Vpcs": []})
        assert aws.ec2.describe_vpcs()["Vpcs"] == []
    assert aws.calls["ec2:DescribeVpcs"] == 3
    first, second = aws.delays  # full jitter within a doubling ceiling
    assert 0.0005 <= first <= 0.001 <= second <= 0.002


def test_throttling_past_the_last_attempt_is_a_throttled_error(aws):
    with Stubber(aws.client("ec2")) as stub:
        for _ in range(POLICY.max_attempts):
            stub.add_client_error("create_vpc", "Throttling", http_status_code=400)
        with pytest.raises(ThrottledError, match="ec2 create_vpc was still throttled after 3 attempts"):
            aws.ec2.create_vpc(CidrBlock="10.0.0.0/16")
    assert aws.calls["ec2:CreateVpc"] == 3


def test_capacity_and_auth_errors_are_not_retried(aws):
    with Stubber(aws.client("ec2")) as stub:
        stub.add_client_error("run_instances", "InsufficientInstanceCapacity")
        with pytest.raises(CapacityError):
            aws.ec2.run_instances(ImageId="ami-1", MinCount=1, MaxCount=1)
        stub.add_client_error("describe_vpcs", "AuthFailure", http_status_code=401)
        with pytest.raises(CloudAuthError, match="check the credentials"):
            aws.ec2.describe_vpcs()
    assert aws.delays == []


@pytest.mark.parametrize("name, parent", [
    ("/aws/service/debian/release/14/latest/amd64", "/aws/service/debian/release/14/latest"),
    ("/golden", "/"),
])
def test_a_missing_parameter_is_named_with_the_way_to_find_the_right_one(aws, name, parent):
    with Stubber(aws.client("ssm")) as stub:
        stub.add_client_error("get_parameter", "ParameterNotFound", service_message="")  # AWS says no more
        with pytest.raises(CloudNotFoundError) as caught:
            aws.ssm.get_parameter(Name=name)
    assert caught.value.code == "ParameterNotFound" and caught.value.retryable is False
    assert caught.value.message == f"ssm get_parameter: ParameterNotFound: SSM parameter {name} does not exist in " \
                                   "us-east-1"
    assert caught.value.hint == "check the name and the region: `aws ssm get-parameters-by-path --region us-east-1 " \
                                f"--path {parent}` lists the parameters published there"
    assert aws.calls == {"ssm:GetParameter": 1} and aws.delays == []


def test_pages_follow_next_token(aws):
    with Stubber(aws.client("ec2")) as stub:
        stub.add_response("describe_subnets", {"Subnets": [{"SubnetId": "subnet-1"}], "NextToken": "t"})
        stub.add_response("describe_subnets", {"Subnets": [{"SubnetId": "subnet-2"}]}, {"NextToken": "t"})
        assert [s["SubnetId"] for s in aws.pages("ec2", "describe_subnets", "Subnets")] == ["subnet-1", "subnet-2"]


def test_a_waiter_that_runs_out_is_a_cloud_error(aws):
    with Stubber(aws.client("ec2")) as stub:
        for _ in range(2):
            stub.add_response("describe_instances", {"Reservations": [{"Instances": [
                {"InstanceId": "i-1", "State": {"Name": "pending", "Code": 0}}]}]})
        with pytest.raises(CloudError, match="instance_running"):
            aws.wait("ec2", "instance_running", delay=0, attempts=2, InstanceIds=["i-1"])


def test_an_emulator_without_the_operation_is_unsupported_not_retried(aws):
    error = aws.translate(ClientError({"Error": {"Code": "500", "Message": "<html>"}}, "CreatePlacementGroup"), "ec2",
                          "create_placement_group")
    assert isinstance(error, UnsupportedError) and error.retryable is False
    assert "does not implement ec2 create_placement_group" in str(error)
