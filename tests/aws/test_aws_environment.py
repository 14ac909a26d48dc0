"""Checks before anything is created: offerings, EFA, image, key pair, subnet, reservations, vCPU quota."""
from __future__ import annotations

import pytest
from aws_support import creates, tagged

from provision.errors import QuotaError, SpecError

pytestmark = pytest.mark.aws


def _findings(provider) -> list[str]:
    with pytest.raises(SpecError) as caught:
        provider.check_environment()
    assert caught.value.hint == "fix the findings above; nothing was created"
    return [f.render() for f in caught.value.findings]


def test_type_not_offered_in_the_zone_names_the_zones_that_have_it(make_spec, provider_for, aws, raw):
    def elsewhere(data):
        data["provider"]["availability_zone"] = "us-east-1b"
        data["node_groups"][1].update(instance_type="p5en.48xlarge", gpu={"model": "H200-SXM", "count": 8},
                                      interconnect={"type": "efa", "nics": 16})

    provider = provider_for(make_spec(elsewhere))
    assert _findings(provider) == ["error: node_groups[1].instance_type: p5en.48xlarge is not offered in us-east-1b; "
                                   "use availability_zone us-east-1a or us-east-1c"]
    assert creates(aws.calls) == {} and tagged(raw, "moto") == []
    assert not provider.state.exists()


def test_efa_on_a_type_without_efa_is_refused_before_creating(make_spec, provider_for, aws):
    def cpu_efa(data):
        data["node_groups"][0]["interconnect"] = {"type": "efa", "nics": 1}
        data["node_groups"][0]["instance_type"] = "c6i.xlarge"

    assert _findings(provider_for(make_spec(cpu_efa))) == [
        "error: node_groups[0].interconnect.type: efa, but c6i.xlarge does not support EFA; use an EFA-capable type "
        "(p5, p4d, g5.8xlarge and up) or type: none"]
    assert creates(aws.calls) == {}


def test_image_key_pair_and_subnet_problems_come_back_together(make_spec, provider_for, raw):
    vpc = raw.ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = raw.ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24", AvailabilityZone="us-east-1b")["Subnet"]

    def wrong(data):
        data["provider"].update(ami={"ssm_parameter": "/aws/service/no/such/parameter"}, key_pair_name="absent",
                                vpc_id=vpc, subnet_id=subnet["SubnetId"])
        data["ssh"]["key_path"] = "/dev/null"

    found = _findings(provider_for(make_spec(wrong)))
    assert any(f.startswith("error: provider.ami.ssm_parameter: '/aws/service/no/such/parameter' is not a parameter "
                            "in us-east-1 (ParameterNotFound)") for f in found)
    assert "error: provider.key_pair_name: 'absent' does not exist in us-east-1; create or import it, or remove " \
           "key_pair_name to import the cluster key" in found
    assert f"error: provider.availability_zone: 'us-east-1a' is not the zone of {subnet['SubnetId']} (us-east-1b); " \
           "set availability_zone: us-east-1b" in found


def test_image_by_name_filter_takes_the_newest_match(make_spec, provider_for, aws):
    def by_name(data):
        data["provider"]["ami"] = {"name_filter": "Deep Learning AMI Ubuntu*", "owner": "898082745236"}

    provider = provider_for(make_spec(by_name))
    provider.check_environment()
    assert provider._facts.image.id.startswith("ami-") and "Deep Learning" in provider._facts.image.name


def test_vcpu_quota_shortfall_stops_before_anything_is_created(make_spec, provider_for, faults, aws, raw):
    # moto has no EC2 quotas; the Service Quotas answer is given at the SDK boundary.
    faults.answer("GetServiceQuota", {"Quota": {"QuotaCode": "L-417A185B", "Value": 384.0}}, service="service-quotas")
    with pytest.raises(QuotaError) as caught:
        provider_for(make_spec()).check_environment()
    assert str(caught.value).startswith("the on-demand P vCPU quota (L-417A185B) is 384 in us-east-1; 0 are in use "
                                        "and the cluster needs 768 more")
    assert "request an increase to at least 768" in caught.value.hint
    assert creates(aws.calls) == {} and tagged(raw, "moto") == []


def test_quota_counts_running_instances_of_the_same_class(make_spec, provider_for, faults, raw):
    image = raw.ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    raw.ec2.run_instances(ImageId=image, InstanceType="p4d.24xlarge", MinCount=1, MaxCount=1)  # 96 vCPUs in use
    faults.answer("GetServiceQuota", {"Quota": {"QuotaCode": "L-417A185B", "Value": 800.0}}, service="service-quotas")
    with pytest.raises(QuotaError, match="96 are in use and the cluster needs 768 more"):
        provider_for(make_spec()).check_environment()


def test_reservation_group_launches_into_its_reservation(make_spec, provider_for, faults, raw):
    def reserved(data):
        data["node_groups"][1].update(capacity="reservation", capacity_reservation_id="cr-0123456789abcdef0")

    sent = faults.spy("RunInstances")
    lines: list[str] = []
    spec = make_spec(reserved)
    provider = provider_for(spec)
    provider.create(lines.append)
    assert any(line.startswith("note: capacity reservations not checked: the endpoint") for line in lines)
    assert sent[1]["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}}
    assert "GroupName" not in sent[1]["Placement"]  # the reservation decides placement
    provider.destroy()


def test_root_volume_smaller_than_the_image_is_refused(make_spec, provider_for):
    found = _findings(provider_for(make_spec(lambda d: d["provider"].update(root_volume_gib=8))))
    assert len(found) == 1 and found[0].startswith("error: provider.root_volume_gib: 8 is smaller than the root "
                                                   "snapshot of image ami-")
    assert found[0].endswith("(15 GiB); set root_volume_gib: 15 or more")
