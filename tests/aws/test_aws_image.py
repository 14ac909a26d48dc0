"""The image named by a public SSM parameter (Debian's, as `provision init` writes it): read once, at the cluster's
first `up`, launched on every node, recorded, and kept by later runs; a parameter that does not exist stops `up` before
anything is made."""
from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from aws_support import BASE, REGION, creates, publish, tagged

from provision.errors import EXIT_BAD_INPUT, SpecError
from provision.providers.aws.config import DEBIAN_12_AMD64
from provision.providers.aws.ledger import Ledger

pytestmark = pytest.mark.aws

AMAZON_LINUX = BASE["provider"]["ami"]["ssm_parameter"]  # one of moto's own public parameters
ABSENT = "/aws/service/debian/release/14/latest/amd64"
CLAIM = "/gpu-provision/clusters/moto"


def _debian_image(raw, name: str) -> str:
    """A new x86_64 image in moto named as Debian names its AMIs (moto ships none of Debian's)."""
    source = raw.ssm.get_parameter(Name=AMAZON_LINUX)["Parameter"]["Value"]
    return raw.ec2.copy_image(SourceImageId=source, SourceRegion=REGION, Name=name)["ImageId"]


def _on_debian(data, count: int = 4) -> None:
    data["provider"]["ami"] = {"ssm_parameter": DEBIAN_12_AMD64}
    data["ssh"]["user"] = "admin"
    data["node_groups"][1]["count"] = count


def _booted(raw) -> dict[str, str]:
    """Instance id -> the image it runs, for the cluster's live instances."""
    tag = [{"Name": "tag:gpu-provision:cluster", "Values": ["moto"]}]
    return {i["InstanceId"]: i["ImageId"] for r in raw.ec2.describe_instances(Filters=tag)["Reservations"]
            for i in r["Instances"] if i["State"]["Name"] != "terminated"}


def test_up_launches_the_image_the_parameter_names_and_the_cluster_keeps_it(make_spec, provider_for, faults, raw):
    bookworm = _debian_image(raw, "debian-12-amd64-20250610-2137")
    publish(raw, DEBIAN_12_AMD64, bookworm)
    reads = faults.spy("GetParameter", service="ssm")
    first = provider_for(make_spec(_on_debian))
    first.check_environment()
    first.create()
    assert [r["Name"] for r in reads].count(DEBIAN_12_AMD64) == 1
    assert set(_booted(raw).values()) == {bookworm} and len(_booted(raw)) == 5
    recorded = Ledger(first.state).facts["image"]
    assert (recorded["id"], recorded["name"]) == (bookworm, "debian-12-amd64-20250610-2137")

    # Debian publishes a newer image, then the cluster grows: the new node boots the cluster's image, unread again.
    publish(raw, DEBIAN_12_AMD64, _debian_image(raw, "debian-12-amd64-20250710-2200"))
    reads.clear()
    grown = provider_for(make_spec(lambda data: _on_debian(data, count=5)))
    grown.check_environment()
    grown.create()
    assert DEBIAN_12_AMD64 not in [r["Name"] for r in reads]
    assert set(_booted(raw).values()) == {bookworm} and len(_booted(raw)) == 6
    assert grown.destroy().leftovers == [] and tagged(raw, "moto") == []


def test_a_parameter_that_does_not_exist_stops_up_before_anything_is_made(make_spec, provider_for, aws, raw):
    provider = provider_for(make_spec(lambda data: data["provider"].update(ami={"ssm_parameter": ABSENT})))
    with pytest.raises(SpecError) as caught:
        provider.create()
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert [f.render() for f in caught.value.findings] == [
        f"error: provider.ami.ssm_parameter: '{ABSENT}' is not a parameter in us-east-1 (ParameterNotFound); check "
        "the name and the region: `aws ssm get-parameters-by-path --region us-east-1 --path "
        "/aws/service/debian/release/14/latest` lists the parameters published there; or set provider.ami.id"]
    assert creates(aws.calls) == {} and tagged(raw, "moto") == []
    with pytest.raises(raw.ssm.exceptions.ParameterNotFound):
        raw.ssm.get_parameter(Name=CLAIM)  # the name was not even claimed
    assert not provider.state.exists()


def test_provision_up_with_a_missing_parameter_exits_2_naming_it(tmp_path, raw):
    data = {**BASE, "provider": {**BASE["provider"], "ami": {"ssm_parameter": ABSENT}},
            "state_dir": str(tmp_path / "state")}
    spec = tmp_path / "moto.yaml"
    spec.write_text(yaml.safe_dump(data))
    result = subprocess.run([sys.executable, "-m", "provision", "up", str(spec), "--quiet"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    assert f"provider.ami.ssm_parameter: '{ABSENT}' is not a parameter in us-east-1 (ParameterNotFound)" \
        in result.stderr
    assert "Traceback" not in result.stderr
    assert tagged(raw, "moto") == []


def test_a_parameter_that_holds_no_image_id_is_refused(make_spec, provider_for, aws, raw):
    publish(raw, DEBIAN_12_AMD64, "debian-12-amd64")
    provider = provider_for(make_spec(_on_debian))
    with pytest.raises(SpecError) as caught:
        provider.check_environment()
    assert [f.render() for f in caught.value.findings] == [
        f"error: provider.ami.ssm_parameter: '{DEBIAN_12_AMD64}' holds 'debian-12-amd64', not an image id; name a "
        f"parameter that holds an AMI id (ami-...), such as {DEBIAN_12_AMD64}, or set provider.ami.id"]
    assert creates(aws.calls) == {}
