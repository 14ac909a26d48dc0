"""Issue 19 end to end: Slurm from a site's APT repository, on one node of the shared sandbox cluster.

The test builds a signed stand-in repository (TEST FIXTURE, tests/fixtures/slurm_repository/build.py) holding two
versions of one tiny package, serves it on the sandbox bridge, and runs the slurm role's own tasks (validate.yml and
repository.yml, through include_role) with the variables the real inventory renders from a spec whose
software.slurm points at that repository and names the stand-in as every role's package. Proven on the node: the
package is installed at the pinned version (not the newest), pinned at 1001 and held; a re-run changes nothing; a
new version goes in over the hold; a repository signed by another key, or a key apt is told another fingerprint
for, is refused with a message about the signature; one that cannot be reached (apt exits 0 there) is refused as
unread. Everything the test added is removed at the end.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from provision import inventory, openpgp
from provision.spec.findings import errors
from provision.spec.loader import load_spec
from provision.spec.model import ClusterSpec
from provision.spec.validators import semantic_findings
from provision.state import ClusterState

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "gpu-provision-test-slurm-site"  # stands in for every role's Slurm package
PINNED, NEWER = "24.11.5-1site", "24.11.6-1site"
URL_PATH = "gpu-provision-test-slurm-site"
KEYRING = "/etc/apt/keyrings/gpu-provision-slurm.asc"
SOURCE = "/etc/apt/sources.list.d/gpu-provision-slurm.sources"
PIN = "/etc/apt/preferences.d/gpu-provision-slurm"
PROXY_BYPASS = "/etc/apt/apt.conf.d/99gpu-provision-test-slurm-site"
# What the node must look like again after the test: its APT configuration, holds and installed packages.
BEFORE_AND_AFTER = ("find /etc/apt -printf '%p %m %s\\n' | sort; apt-mark showhold; "
                    "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'")
PLAYBOOK = """\
- name: Install Slurm's packages from the site repository with the slurm role's own tasks
  hosts: all
  gather_facts: false
  become: true
  tasks:
    - name: Check the role's inputs
      ansible.builtin.include_role: {name: slurm, tasks_from: validate}
    - name: Configure the site repository and install the pinned packages
      ansible.builtin.include_role: {name: slurm, tasks_from: repository}
"""


def _builder():
    spec = importlib.util.spec_from_file_location("slurm_repo_fixture",
                                                  REPO / "tests" / "fixtures" / "slurm_repository" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        """Requests are not logged (they would fill the test's captured output)."""


def _serve(directory: Path, address: str) -> ThreadingHTTPServer:
    """The fixture repository over HTTP on the sandbox bridge address only (never 0.0.0.0)."""
    server = ThreadingHTTPServer((address, 0), partial(_QuietHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class SiteRepository:
    """The served repository, its two keys, and role runs on one node with the inventory a spec renders."""

    def __init__(self, cluster, node: str, work: Path, url: str, keys: dict[str, tuple[Path, str]]) -> None:
        self.cluster, self.node, self.work, self.url, self.keys = cluster, node, work, url, keys
        self.base = load_spec(cluster.spec_path)
        self.state = ClusterState.for_spec(self.base)
        self.before = ""  # BEFORE_AND_AFTER on the node, before the test changed anything

    def spec(self, version: str = PINNED, key: str = "site") -> ClusterSpec:
        """The shared cluster's spec with software.slurm pointing at the site repository."""
        path, fingerprint = self.keys[key]
        data = self.base.model_dump(mode="json", exclude_unset=True)
        data.setdefault("software", {})["slurm"] = {
            "source": "repository", "repository_url": self.url, "repository_key": str(path),
            "repository_key_fingerprint": fingerprint, "version": version, "accounting": True,
            "packages": {role: [PACKAGE] for role in ("client", "controller", "compute", "accounting")}}
        return ClusterSpec.model_validate(data)

    def run(self, spec: ClusterSpec, *extra: str) -> subprocess.CompletedProcess:
        """The role's tasks on the node, with the inventory rendered from the spec (the cluster's own is untouched)."""
        assert errors(semantic_findings(spec)) == []
        directory = self.work / "inventory"
        for relative, text in inventory.render(spec, self.cluster.info).items():
            (directory / relative).parent.mkdir(parents=True, exist_ok=True)
            (directory / relative).write_text(text)
        (self.work / "play.yml").write_text(PLAYBOOK)
        env = {**os.environ, "ANSIBLE_CONFIG": str(self.state.path / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles")}
        return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(directory),
                               str(self.work / "play.yml"), "--limit", self.node, *extra],
                              capture_output=True, text=True, env=env, timeout=600)

    def sh(self, command: str, check: bool = True) -> str:
        return self.cluster.ssh(self.node, command, check=check).stdout


def _recap(result: subprocess.CompletedProcess, node: str) -> dict[str, int]:
    line = next(line for line in result.stdout.splitlines() if line.startswith(f"{node} ") and "ok=" in line)
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", line)}


def _clean(repo: SiteRepository) -> None:
    """Remove what the test added: hold, package, key, source, pin, lists, the proxy bypass."""
    repo.sh(f"apt-mark unhold {PACKAGE} >/dev/null 2>&1; dpkg --purge {PACKAGE} >/dev/null 2>&1; "
            f"rm -f {KEYRING} {SOURCE} {PIN} {PROXY_BYPASS} /var/lib/apt/lists/*{URL_PATH}*", check=False)


@pytest.fixture(scope="module")
def site_repo(slurm_cluster, tmp_path_factory):
    """Two keys, the repository signed with the site's, served on the bridge; the node cleaned up afterwards."""
    builder = _builder()
    missing = [tool for tool in builder.TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the fixture repository needs {', '.join(missing)} (make deps installs them)")
    work = tmp_path_factory.mktemp("slurm-site")
    homes = {name: work / f"gnupg-{name}" for name in ("site", "other")}
    node = slurm_cluster.compute[0]
    server, repo = None, None
    try:
        keys = {}
        for name, home in homes.items():
            fingerprint = builder.make_key(home, name)
            keys[name] = (builder.export_key(home, work / f"{name}.asc"), fingerprint)
        codename = slurm_cluster.ssh(node, ". /etc/os-release; echo $VERSION_CODENAME").stdout.strip()
        arch = slurm_cluster.ssh(node, "dpkg --print-architecture").stdout.strip()
        builder.build(work / "web" / URL_PATH, codename, arch, [(PACKAGE, PINNED), (PACKAGE, NEWER)], homes["site"])
        bridge = slurm_cluster.info.vars["provision_sandbox_bridge_address"]
        server = _serve(work / "web", bridge)
        url = f"http://{bridge}:{server.server_port}/{URL_PATH}"
        repo = SiteRepository(slurm_cluster, node, work, url, keys)
        repo.before = repo.sh(BEFORE_AND_AFTER)
        # TEST FIXTURE: the repository is on the bridge; the nodes' apt proxy is for Debian's archive
        repo.sh(f"echo 'Acquire::http::Proxy::{bridge} \"DIRECT\";' > {PROXY_BYPASS}")
        yield repo
    finally:
        if repo is not None:
            _clean(repo)
        if server is not None:
            server.shutdown()
        for home in homes.values():
            builder.stop_agent(home)


def _snapshot(repo: SiteRepository) -> dict[str, str]:
    probes = {"status": f"dpkg-query -W -f '${{Version}} ${{db:Status-Abbrev}}' {PACKAGE}",
              "holds": "apt-mark showhold",
              "policy": f"apt-cache policy {PACKAGE}", "source": f"cat {SOURCE}", "keyring": f"cat {KEYRING}",
              "pin": f"cat {PIN}"}
    return {name: repo.sh(command, check=False) for name, command in probes.items()}


@pytest.fixture(scope="module")
def installed(site_repo):
    result = site_repo.run(site_repo.spec())
    return result, _snapshot(site_repo)


@pytest.fixture(scope="module")
def second_run(site_repo, installed):
    return site_repo.run(site_repo.spec())


@pytest.fixture(scope="module")
def upgraded(site_repo, second_run):
    """The site publishes a new version and the spec names it."""
    result = site_repo.run(site_repo.spec(version=NEWER))
    return result, _snapshot(site_repo)


@pytest.fixture(scope="module")
def other_key(site_repo, upgraded):
    """The spec names another key (and its fingerprint): the repository is still signed with the site's."""
    result = site_repo.run(site_repo.spec(version=NEWER, key="other"))
    return result, _snapshot(site_repo)


@pytest.fixture(scope="module")
def other_fingerprint(site_repo, other_key):
    """The right key, but apt is told another key's fingerprint (plain Ansible, past `provision validate`)."""
    other = site_repo.keys["other"][1]
    result = site_repo.run(site_repo.spec(version=NEWER), "-e", f"slurm_repository_key_fingerprint={other}")
    return result, _snapshot(site_repo)


@pytest.fixture(scope="module")
def unreachable(site_repo, other_fingerprint):
    """The spec names a repository on a port of the bridge where nothing listens: apt itself exits 0 for that."""
    bridge = site_repo.cluster.info.vars["provision_sandbox_bridge_address"]
    result = site_repo.run(site_repo.spec(version=NEWER), "-e", f"slurm_repository_url=http://{bridge}:1/{URL_PATH}")
    return result, _snapshot(site_repo)


def test_the_pinned_version_is_installed_not_the_newest(site_repo, installed):
    result, snap = installed
    assert result.returncode == 0, result.stdout[-3000:]
    assert _recap(result, site_repo.node)["changed"] > 0
    assert snap["status"].split() == [PINNED, "hi"]  # installed, and held
    assert f"Candidate: {PINNED}" in snap["policy"] and f"*** {PINNED} 1001" in snap["policy"]
    assert NEWER in snap["policy"]  # the repository offers the newer one; the pin keeps it out


def test_the_package_is_held_and_the_pin_names_the_version(installed):
    _, snap = installed
    assert PACKAGE in snap["holds"].split()
    assert f"Pin: version {PINNED}\nPin-Priority: 1001\n" in snap["pin"]
    assert re.search(rf"^Package: slurm\* .*\b{PACKAGE}$", snap["pin"], re.M), snap["pin"]


def test_the_source_trusts_only_its_own_keyring_and_fingerprint(site_repo, installed):
    _, snap = installed
    path, fingerprint = site_repo.keys["site"]
    codename = site_repo.sh(". /etc/os-release; echo $VERSION_CODENAME").strip()
    assert f"URIs: {site_repo.url}\nSuites: {codename}\nComponents: main\nSigned-By: {KEYRING} {fingerprint}\n" \
        in snap["source"]
    assert snap["keyring"] == openpgp.read_public_key(path).armored()  # the one key, as the inventory carried it
    assert openpgp.parse_public_key(snap["keyring"].encode()).fingerprint == fingerprint


def test_a_second_run_changes_nothing(site_repo, second_run):
    assert second_run.returncode == 0, second_run.stdout[-3000:]
    assert _recap(second_run, site_repo.node)["changed"] == 0


def test_a_new_version_goes_in_over_the_hold(upgraded):
    result, snap = upgraded
    assert result.returncode == 0, result.stdout[-3000:]
    assert snap["status"].split() == [NEWER, "hi"] and f"Pin: version {NEWER}" in snap["pin"]


def _refused(result: subprocess.CompletedProcess, node: str) -> str:
    assert result.returncode != 0 and _recap(result, node)["failed"] == 1, result.stdout[-3000:]
    before, fatal = result.stdout.split("fatal: ", 1)
    last_task = before[before.rindex("TASK ["):]
    assert last_task.startswith("TASK [slurm : Stop when the site repository fails its signature check"), last_task
    return json.loads(fatal.splitlines()[0].split(" => ", 1)[1])["msg"]


def test_a_repository_signed_by_another_key_is_refused(site_repo, other_key):
    result, snap = other_key
    message = _refused(result, site_repo.node)
    other = site_repo.keys["other"][1]
    assert f"is not signed by the key in slurm_repository_key (fingerprint {other}): apt refused the signature " \
           "of its Release file" in message, message
    apt_said = message.split("apt said: ", 1)[1]  # apt's own words: gpgv's NO_PUBKEY, or sqv's "signature"
    assert re.search(r"NO_PUBKEY|signature", apt_said) and "is not signed" in apt_said, message
    assert snap["source"] == "" and snap["status"].split() == [NEWER, "hi"]  # nothing installed from it


def test_the_right_key_with_another_fingerprint_is_refused_by_apt(site_repo, other_fingerprint):
    result, snap = other_fingerprint
    message = _refused(result, site_repo.node)
    assert "apt refused the signature of its Release file" in message and "is not signed" in message, message
    assert snap["source"] == "" and snap["status"].split() == [NEWER, "hi"]


def test_a_repository_that_cannot_be_reached_is_refused_as_unread_not_as_unsigned(site_repo, unreachable):
    result, snap = unreachable
    message = _refused(result, site_repo.node)
    assert "could not be read (apt fetched no Release file from it)" in message, message
    assert "signature" not in message.split("apt said: ", 1)[0], message
    assert snap["source"] == "" and snap["status"].split() == [NEWER, "hi"]


def test_the_node_is_left_as_it_was(site_repo, unreachable):
    _clean(site_repo)
    assert site_repo.sh(BEFORE_AND_AFTER) == site_repo.before
