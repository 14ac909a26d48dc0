"""The sandbox reads this machine's Debian mirror from its apt sources instead of hard-coding one."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import SandboxError
from provision.providers.sandbox import mirror

DEBIAN_SOURCES = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example.org/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://mirror.example.org/debian-security
Suites: bookworm-security
Components: main
"""

DISABLED = """\
Types: deb
URIs: http://other.example.org/debian
Suites: bookworm
Components: main
Enabled: no
"""


def apt_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_deb822_archive_and_security(tmp_path):
    found = mirror.resolve(None, apt_dir(tmp_path, {"sources.list.d/debian.sources": DEBIAN_SOURCES}))
    assert found == mirror.Mirrors("http://mirror.example.org/debian", "http://mirror.example.org/debian-security",
                                   ("main", "contrib"))


def test_one_line_sources_list_with_options(tmp_path):
    text = ("# comment\ndeb-src http://src.example.org/debian bookworm main\n"
            "deb [arch=amd64 signed-by=/k.gpg] http://one.example.org/debian/ bookworm main non-free-firmware\n"
            "deb http://one.example.org/debian-security bookworm-security main\n")
    found = mirror.resolve(None, apt_dir(tmp_path, {"sources.list": text}))
    assert found.archive == "http://one.example.org/debian"
    assert found.security == "http://one.example.org/debian-security"
    assert found.components == ("main", "non-free-firmware")


def test_disabled_entries_and_renamed_files_are_ignored(tmp_path):
    files = {"sources.list.d/a.sources": DISABLED,
             "sources.list.d/nodesource.sources.disabled-by-farm": DISABLED.replace("Enabled: no\n", ""),
             "sources.list.d/z.sources": DEBIAN_SOURCES}
    assert mirror.resolve(None, apt_dir(tmp_path, files)).archive == "http://mirror.example.org/debian"


def test_third_party_repositories_are_not_taken_for_debian(tmp_path):
    text = ("deb https://deb.nodesource.com/node_20.x nodistro main\n"
            "deb http://packages.example.com/apt cloud-sdk-bookworm main\n"
            "deb http://deb.example.net/debian trixie main\n")
    assert mirror.resolve(None, apt_dir(tmp_path, {"sources.list": text})).archive == "http://deb.example.net/debian"


def test_no_debian_mirror_is_a_clear_error(tmp_path):
    with pytest.raises(SandboxError, match="no Debian mirror found") as caught:
        mirror.resolve(None, apt_dir(tmp_path, {"sources.list": "deb http://x.example/ubuntu-ish nodistro main\n"}))
    assert "provider.mirror" in caught.value.hint


def test_https_mirror_is_refused_because_the_proxy_caches_http(tmp_path):
    files = {"sources.list": "deb https://secure.example.org/debian bookworm main\n"}
    with pytest.raises(SandboxError, match="not an http:// URL"):
        mirror.resolve(None, apt_dir(tmp_path, files))


def test_configured_mirror_wins_over_the_host(tmp_path):
    found = mirror.resolve("http://local.example/debian/", apt_dir(tmp_path, {"sources.list.d/d.sources":
                                                                              DEBIAN_SOURCES}))
    assert found.archive == "http://local.example/debian"
    assert found.security is None
