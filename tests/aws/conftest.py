"""A moto server on loopback for the aws provider tests; real AWS is never reachable from here."""
from __future__ import annotations

import copy
import logging
import os
import socket
import urllib.request
from types import SimpleNamespace

import boto3
import pytest
from aws_support import BASE, FAST, REGION, Faults, require_loopback

from provision.adaptors.aws import Aws
from provision.providers.aws.provider import AwsProvider
from provision.spec.model import ClusterSpec
from provision.state import ClusterState


@pytest.fixture(scope="session")
def moto_url(tmp_path_factory):
    """Start moto's server on a free loopback port with fake credentials; stop it at the end."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # moto logs every unimplemented call with a traceback
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    patch = pytest.MonkeyPatch()
    for name in [n for n in os.environ if n.startswith("AWS_ENDPOINT_URL_") or n in ("AWS_PROFILE",)]:
        patch.delenv(name)
    nowhere = tmp_path_factory.mktemp("aws-config") / "none"
    patch.setenv("AWS_CONFIG_FILE", str(nowhere))
    patch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(nowhere))
    patch.setenv("AWS_ENDPOINT_URL", url)
    patch.setenv("AWS_ACCESS_KEY_ID", "testing")
    patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    patch.setenv("AWS_SESSION_TOKEN", "testing")
    patch.setenv("AWS_DEFAULT_REGION", REGION)
    yield require_loopback(url)
    server.stop()
    patch.undo()


@pytest.fixture(autouse=True)
def _fresh_moto(moto_url):
    """Every test starts from an empty account, and checks again that the endpoint is loopback."""
    require_loopback(os.environ.get("AWS_ENDPOINT_URL"))
    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=10)


@pytest.fixture
def aws(moto_url) -> Aws:
    """The adaptor under test, pointed explicitly at moto, with fast retries."""
    return Aws(REGION, endpoint_url=moto_url, policy=FAST, sleep=lambda _: None)


@pytest.fixture
def raw(moto_url):
    """Plain boto3 clients for checking what exists, independent of the code under test."""
    return SimpleNamespace(**{name: boto3.client(service, region_name=REGION, endpoint_url=moto_url)
                              for name, service in (("ec2", "ec2"), ("fsx", "fsx"), ("ssm", "ssm"), ("sts", "sts"),
                                                    ("tagging", "resourcegroupstaggingapi"))})


@pytest.fixture
def make_spec(tmp_path):
    """A ClusterSpec from BASE with changes applied to a deep copy of its data."""
    def make(change=None, **top) -> ClusterSpec:
        data = copy.deepcopy(BASE)
        data.update(top)
        if change:
            change(data)
        data["state_dir"] = str(tmp_path / "state")
        return ClusterSpec.model_validate(data)
    return make


@pytest.fixture
def provider_for(aws, tmp_path):
    """A fresh AwsProvider for a spec, sharing the adaptor (as a new `up` process would share the account)."""
    def make(spec: ClusterSpec) -> AwsProvider:
        return AwsProvider(spec, ClusterState(tmp_path / "state", spec.name), aws=aws)
    return make


@pytest.fixture
def faults(aws) -> Faults:
    """The fault injector for the test's adaptor."""
    return Faults(aws)
