"""The name's claim decided by AWS's answer to one PutParameter (botocore Stubber, no network): a refused create is
ours only when the parameter holds our own id, written down before the call."""
from __future__ import annotations

import json

import pytest
from botocore.stub import Stubber

from provision.adaptors.aws import Aws, RetryPolicy
from provision.errors import ClaimError
from provision.providers.aws import claim
from provision.providers.aws.ledger import Ledger
from provision.state import ClusterState

OURS, THEIRS = "0123456789abcdef", "fedcba9876543210"
NAME = "/gpu-provision/clusters/demo"


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return Aws("us-east-1", endpoint_url="http://127.0.0.1:9", sleep=lambda _: None,  # never reached
               policy=RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002))


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    ledger = Ledger(ClusterState(tmp_path, "demo"))
    ledger.claiming(OURS)  # as `hold` does before its first call
    return ledger


def _held_by(cluster_id: str) -> dict:
    value = {"id": cluster_id, "since": "2030-01-02T03:04:05+00:00", "host": "ctl", "state": "/s/clusters/demo"}
    return {"Parameter": {"Name": NAME, "Type": "String", "Value": json.dumps(value)}}


def test_a_retried_claim_whose_first_attempt_landed_is_ours(aws, ledger):
    with Stubber(aws.client("ssm")) as stub:
        stub.add_client_error("put_parameter", "InternalServerError", http_status_code=500)  # it landed; answer lost
        stub.add_client_error("put_parameter", "ParameterAlreadyExists")
        stub.add_response("get_parameter", _held_by(OURS), {"Name": NAME})
        lines: list[str] = []
        assert claim.hold(aws, ledger, "us-east-1", lines.append) == OURS
    assert Ledger(ledger.state).claim_held
    assert lines == [f"claimed the name 'demo' in us-east-1 as cluster id {OURS} ({NAME})"]


def test_a_name_another_state_root_claimed_first_is_refused_and_nothing_kept(aws, ledger):
    with Stubber(aws.client("ssm")) as stub:
        stub.add_client_error("put_parameter", "ParameterAlreadyExists")
        stub.add_response("get_parameter", _held_by(THEIRS), {"Name": NAME})
        with pytest.raises(ClaimError) as refused:
            claim.hold(aws, ledger, "us-east-1", lambda _: None)
    assert str(refused.value).startswith(
        f"cluster 'demo' is claimed in us-east-1 by cluster id {THEIRS}, claimed 2030-01-02T03:04:05+00:00 from "
        f"ctl:/s/clusters/demo ({NAME}); nothing was created; run `provision up` in that state root")
    assert refused.value.exit_code == 3
    assert not (ledger.state.path / "aws.json").exists()  # the id only intended here is forgotten


def test_a_claim_released_between_the_refusal_and_the_read_is_taken_again(aws, ledger):
    with Stubber(aws.client("ssm")) as stub:
        stub.add_client_error("put_parameter", "ParameterAlreadyExists")
        stub.add_client_error("get_parameter", "ParameterNotFound")
        stub.add_response("put_parameter", {"Version": 1})
        assert claim.hold(aws, ledger, "us-east-1", lambda _: None) == OURS


def test_a_held_claim_is_confirmed_with_one_read(aws, ledger):
    ledger.claimed()
    with Stubber(aws.client("ssm")) as stub:
        stub.add_response("get_parameter", _held_by(OURS), {"Name": NAME})
        assert claim.hold(aws, ledger, "us-east-1", lambda _: None) == OURS
    assert aws.calls == {"ssm:GetParameter": 1}


@pytest.mark.parametrize("value", ["not json", json.dumps({"holder": "someone"}), json.dumps([OURS])])
def test_a_parameter_this_tool_did_not_write_is_never_ours(aws, ledger, value):
    ledger.claimed()
    with Stubber(aws.client("ssm")) as stub:
        stub.add_response("get_parameter", {"Parameter": {"Name": NAME, "Value": value}}, {"Name": NAME})
        with pytest.raises(ClaimError, match=r"by cluster id \(not a gpu-provision claim\)"):
            claim.hold(aws, ledger, "us-east-1", lambda _: None)


def test_release_deletes_only_our_own_claim_unless_orphans(aws):
    lines: list[str] = []
    with Stubber(aws.client("ssm")) as stub:
        stub.add_response("get_parameter", _held_by(THEIRS), {"Name": NAME})
        claim.release(aws, "demo", OURS, lines.append)
        stub.add_response("get_parameter", _held_by(THEIRS), {"Name": NAME})
        stub.add_response("delete_parameter", {}, {"Name": NAME})
        claim.release(aws, "demo", None, lines.append, any_holder=True)
    assert "left as it is" in lines[0] and lines[1].startswith(f"released the claim on 'demo' (cluster id {THEIRS}")
    assert aws.calls["ssm:DeleteParameter"] == 1
