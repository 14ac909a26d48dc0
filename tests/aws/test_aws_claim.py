"""One cluster per name in a region, whichever machine or state root runs `up`; `down` takes only its own cluster.

Issue 31 saw two `provision up` of one spec from two state roots make 10 instances and 2 VPCs for 5 nodes (2 of 3
trials), and the `down` of one terminate both. The name's claim (an SSM parameter only one `up` can create) and the
cluster id on every resource hold against moto here: real CLI processes released at one instant, `down` beside a
cluster of the same name, and crashes around the claim.
"""
from __future__ import annotations

import copy
import json

import pytest
import yaml
from aws_support import BASE, FAST, Faults, SimulatedCrash, creates, run_together, tagged
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from provision.adaptors.aws import Aws
from provision.errors import ClaimError, UsageError
from provision.providers.aws.ledger import Ledger
from provision.providers.aws.provider import AwsProvider
from provision.state import ClusterState

pytestmark = pytest.mark.aws

CLAIM = "/gpu-provision/clusters/moto"
TAG = "gpu-provision:cluster"


def _by_tag(raw, cluster: str = "moto") -> dict[str, int]:
    """How many of each kind carry the cluster's name (instances: not terminated)."""
    tag = [{"Name": f"tag:{TAG}", "Values": [cluster]}]
    instances = [i for r in raw.ec2.describe_instances(Filters=tag)["Reservations"] for i in r["Instances"]
                 if i["State"]["Name"] != "terminated"]
    return {"instances": len(instances), "vpcs": len(raw.ec2.describe_vpcs(Filters=tag)["Vpcs"]),
            "subnets": len(raw.ec2.describe_subnets(Filters=tag)["Subnets"]),
            "gateways": len(raw.ec2.describe_internet_gateways(Filters=tag)["InternetGateways"]),
            "key pairs": len(raw.ec2.describe_key_pairs(Filters=tag)["KeyPairs"]),
            "security groups": len(raw.ec2.describe_security_groups(Filters=tag)["SecurityGroups"])}


def _ids_tagged(raw, cluster: str = "moto") -> set[str]:
    """The cluster ids on everything the tagging API finds carrying the name (the claim included; instances only
    while not terminated: moto lists terminated ones too)."""
    tag = [{"Name": f"tag:{TAG}", "Values": [cluster]}]
    live = {i["InstanceId"] for r in raw.ec2.describe_instances(Filters=tag)["Reservations"] for i in r["Instances"]
            if i["State"]["Name"] != "terminated"}
    mapped = raw.tagging.get_resources(TagFilters=[{"Key": TAG, "Values": [cluster]}],
                                       ResourcesPerPage=100)["ResourceTagMappingList"]
    return {next((t["Value"] for t in m["Tags"] if t["Key"] == "gpu-provision:cluster-id"), None) for m in mapped
            if ":instance/" not in m["ResourceARN"] or m["ResourceARN"].rsplit("/", 1)[1] in live}


def _claim(raw) -> dict | None:
    """The claim's value as stored, or None."""
    try:
        return json.loads(raw.ssm.get_parameter(Name=CLAIM)["Parameter"]["Value"])
    except raw.ssm.exceptions.ParameterNotFound:
        return None


def _elsewhere(make_spec, tmp_path, aws, root: str, change=None) -> AwsProvider:
    """The same spec's provider under another state root (another machine, or another PROVISION_STATE_DIR)."""
    return AwsProvider(make_spec(change), ClusterState(tmp_path / root, "moto"), aws=aws)


def _fresh(moto_url) -> Aws:
    """A new adaptor: a new `provision` process."""
    return Aws("us-east-1", endpoint_url=moto_url, policy=FAST, sleep=lambda _: None)


@pytest.mark.parametrize("trial", range(5))
def test_two_concurrent_up_from_two_state_roots_make_one_cluster(tmp_path, raw, trial):
    roots, specs = [tmp_path / "a", tmp_path / "b"], []
    for root in roots:
        data = copy.deepcopy(BASE)
        data["state_dir"] = str(root)
        specs.append(root.with_suffix(".yaml"))
        specs[-1].write_text(yaml.safe_dump(data))
        # preflight, deploy and certify need real nodes: mark them done so `up` is the nodes and the inventory
        ClusterState(root, "moto").write("stages", {"done": ["certify", "deploy", "preflight"]})
    outcomes = run_together(tmp_path / "go", [["up", str(spec), "--quiet"] for spec in specs])

    assert sorted(code for *_, code in outcomes) == [0, 3], outcomes
    winner, loser = (roots[0], roots[1]) if outcomes[0][3] == 0 else (roots[1], roots[0])
    holder = Ledger(ClusterState(winner, "moto")).cluster_id
    refused = next(stderr for _, _, stderr, code in outcomes if code == 3)
    assert f"error: cluster 'moto' is claimed in us-east-1 by cluster id {holder}, claimed " in refused
    assert f":{winner}/clusters/moto ({CLAIM}); nothing was created" in refused and "Traceback" not in refused

    assert _by_tag(raw) == {"instances": 5, "vpcs": 1, "subnets": 1, "gateways": 1, "key pairs": 1,
                            "security groups": 1}
    assert _ids_tagged(raw) == {holder}  # every resource, and the claim, is the winner's: the loser made nothing
    assert _claim(raw)["id"] == holder
    assert Ledger(ClusterState(winner, "moto")).claim_held
    assert not (loser / "clusters" / "moto" / "aws.json").exists()


def test_down_of_one_of_two_clusters_leaves_the_other_whole(make_spec, provider_for, raw):
    other = provider_for(make_spec(name="other"))
    other.create()
    before = (_by_tag(raw, "other"), sorted(tagged(raw, "other")))
    moto = provider_for(make_spec())
    moto.create()
    assert moto.destroy().leftovers == []
    assert tagged(raw, "moto") == []
    assert (_by_tag(raw, "other"), sorted(tagged(raw, "other"))) == before
    assert {n.state for n in other.describe().nodes} == {"running"}
    assert other.destroy().leftovers == [] and tagged(raw, "other") == []


def test_down_from_a_state_root_without_the_claim_removes_nothing(make_spec, provider_for, raw, tmp_path, aws):
    provider_for(make_spec()).create()
    before = sorted(tagged(raw, "moto"))
    with pytest.raises(UsageError) as refused:  # nothing recorded there: the tagged resources may be another's
        _elsewhere(make_spec, tmp_path, aws, "elsewhere").destroy()
    assert "--orphans" in refused.value.hint
    assert sorted(tagged(raw, "moto")) == before


def _shared_key(tmp_path):
    """One SSH key both state roots use (spec ssh.key_path): the key pair names differ only by the cluster id."""
    path = tmp_path / "key" / "id_ed25519"
    path.parent.mkdir(mode=0o700)
    key = Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    path.with_suffix(".pub").write_bytes(public + b" shared\n")
    return lambda data: data["ssh"].update(key_path=str(path))


def test_a_state_whose_claim_was_taken_over_touches_nothing_of_the_new_holder(make_spec, raw, tmp_path, moto_url):
    key = _shared_key(tmp_path)
    stale = _elsewhere(make_spec, tmp_path, _fresh(moto_url), "b", key)
    stale.create()
    stale_id = Ledger(stale.state).cluster_id
    recorded = {r["id"] for r in Ledger(stale.state).resources.values() if r.get("id")}
    lines: list[str] = []  # another machine, its state lost, removes "its" cluster by name
    swept = _elsewhere(make_spec, tmp_path, _fresh(moto_url), "a", key).destroy(lines.append, orphans=True)
    assert swept.leftovers == [] and tagged(raw, "moto") == []
    assert any(line.startswith(f"released the claim on 'moto' (cluster id {stale_id}, claimed ") for line in lines)
    holder = _elsewhere(make_spec, tmp_path, _fresh(moto_url), "a", key)
    holder.create()  # and builds it again: a new cluster, a new id
    holder_id = Ledger(holder.state).cluster_id
    before = sorted(tagged(raw, "moto"))
    assert holder_id != stale_id and _ids_tagged(raw) == {holder_id}

    aws = _fresh(moto_url)
    with pytest.raises(ClaimError) as refused:  # the stale state's `up` is refused before it makes anything
        AwsProvider(make_spec(key), stale.state, aws=aws).create()
    assert f"by cluster id {holder_id}" in refused.value.message
    assert f"but this state records cluster id {stale_id}" in refused.value.message
    assert creates(aws.calls) == {}
    lines = []
    teardown = AwsProvider(make_spec(key), stale.state, aws=aws).destroy(lines.append)  # and its `down` takes nothing
    assert teardown.leftovers == [] and {r.split()[1] for r in teardown.removed} <= recorded  # its own, gone already
    assert aws.calls["ec2:TerminateInstances"] == 0 and aws.calls["ssm:DeleteParameter"] == 0
    assert any("claimed by cluster id " + holder_id in line and "left as it is" in line for line in lines)
    assert sorted(tagged(raw, "moto")) == before and _claim(raw)["id"] == holder_id
    assert {n.state for n in holder.describe().nodes} == {"running"}
    assert holder.destroy().leftovers == [] and tagged(raw, "moto") == []


def test_up_interrupted_after_the_claim_resumes_as_the_same_cluster(make_spec, provider_for, raw, tmp_path,
                                                                     moto_url, aws):
    faults = Faults(aws)
    faults.crash_after("PutParameter", service="ssm")  # the claim was made, its answer never seen
    spec = make_spec()
    first = provider_for(spec)
    with pytest.raises(SimulatedCrash):
        first.create()
    cluster_id = Ledger(first.state).cluster_id
    assert _claim(raw)["id"] == cluster_id and not Ledger(first.state).claim_held
    with pytest.raises(ClaimError):  # meanwhile the name is held: another state root is refused
        _elsewhere(make_spec, tmp_path, _fresh(moto_url), "elsewhere").create()

    resumed = _fresh(moto_url)
    provider = AwsProvider(spec, first.state, aws=resumed)
    provider.check_environment()
    cluster = provider.create()
    assert {n.state for n in cluster.nodes} == {"running"}
    assert Ledger(first.state).cluster_id == cluster_id and Ledger(first.state).claim_held
    assert _ids_tagged(raw) == {cluster_id} and _by_tag(raw)["instances"] == 5
    assert provider.destroy().leftovers == [] and tagged(raw, "moto") == [] and _claim(raw) is None


def test_a_crash_in_down_keeps_the_claim_until_the_next_down_finishes(make_spec, provider_for, raw, tmp_path,
                                                                     moto_url):
    spec = make_spec()
    provider_for(spec).create()
    dying = _fresh(moto_url)
    Faults(dying).crash_before("DeleteVpc")
    with pytest.raises(SimulatedCrash):
        AwsProvider(spec, provider_for(spec).state, aws=dying).destroy()
    assert _claim(raw)["id"] == Ledger(provider_for(spec).state).cluster_id  # released last: the name is still held
    with pytest.raises(ClaimError):
        _elsewhere(make_spec, tmp_path, _fresh(moto_url), "elsewhere").check_environment()
    lines: list[str] = []
    assert provider_for(spec).destroy(lines.append).leftovers == []
    assert _claim(raw) is None and tagged(raw, "moto") == []
    assert lines[-2].startswith("released the claim on 'moto'") and lines[-1].startswith("audit: 0 resources left")


def test_a_cluster_made_before_ids_is_claimed_at_its_next_up_and_removed_by_name(make_spec, provider_for, raw, aws):
    spec = make_spec()
    provider = provider_for(spec)
    provider.create()
    path = provider.state.path / "aws.json"
    document = json.loads(path.read_text())
    del document["cluster"]  # as an earlier version wrote it
    path.write_text(json.dumps(document))
    raw.ssm.delete_parameter(Name=CLAIM)
    aws.calls.clear()
    again = provider_for(spec)
    again.check_environment()
    again.create()
    assert creates(aws.calls) == {"ssm:PutParameter": 1}  # claimed; nothing else made again
    assert _claim(raw)["id"] == Ledger(again.state).cluster_id
    assert again.destroy().leftovers == [] and tagged(raw, "moto") == []


def test_a_retried_create_sends_the_same_client_token(make_spec, provider_for, faults, raw):
    faults.fail("CreateRouteTable", "InternalError")
    faults.fail("RunInstances", "InternalError")
    tables, launches = faults.spy("CreateRouteTable"), faults.spy("RunInstances")
    provider = provider_for(make_spec())
    provider.create()
    assert len(tables) == 2 and tables[0]["ClientToken"] == tables[1]["ClientToken"]
    assert launches[0]["ClientToken"] == launches[1]["ClientToken"] != launches[2]["ClientToken"]
    tag = [{"Name": f"tag:{TAG}", "Values": ["moto"]}]
    assert len(raw.ec2.describe_route_tables(Filters=tag)["RouteTables"]) == 1
    assert provider.destroy().leftovers == []
