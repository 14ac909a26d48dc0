"""The Debian mirror this machine already uses, read from its apt sources (never a hard-coded host)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from provision.errors import SandboxError

APT_DIR = Path("/etc/apt")
DEBIAN_SUITES = frozenset({"buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
                           "oldoldstable", "oldstable", "stable", "testing", "unstable"})


@dataclass(frozen=True)
class Source:
    """One apt repository entry: a URI with its suites and components."""

    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]


@dataclass(frozen=True)
class Mirrors:
    """Where nodes and the apt proxy get Debian packages."""

    archive: str  # e.g. http://deb.debian.org/debian
    security: str | None  # e.g. http://deb.debian.org/debian-security
    components: tuple[str, ...] = ("main",)


def parse_deb822(text: str) -> list[Source]:
    """Entries of a .sources file (deb822 stanzas) with Types: deb and not Enabled: no."""
    sources = []
    for stanza in _stanzas(text):
        if "deb" not in stanza.get("types", "").split() or stanza.get("enabled", "yes").lower() == "no":
            continue
        for uri in stanza.get("uris", "").split():
            sources.append(Source(uri, tuple(stanza.get("suites", "").split()),
                                  tuple(stanza.get("components", "").split())))
    return sources


def _stanzas(text: str) -> list[dict[str, str]]:
    """Split deb822 text into field dictionaries (keys lower-cased, continuation lines joined)."""
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                stanzas.append(current)
            current, key = {}, None
        elif line[0] in " \t" and key:
            current[key] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            current[key] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


def parse_one_line(text: str) -> list[Source]:
    """`deb [options] URI SUITE COMPONENT...` lines of a sources.list file."""
    sources = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2:
            sources.append(Source(words[0], (words[1],), tuple(words[2:])))
    return sources


def host_sources(apt_dir: Path = APT_DIR) -> list[Source]:
    """Every enabled deb entry of this machine: sources.list, then sources.list.d/*.list and *.sources."""
    sources: list[Source] = []
    main = apt_dir / "sources.list"
    if main.is_file():
        sources += parse_one_line(main.read_text())
    parts = apt_dir / "sources.list.d"
    for path in sorted(parts.glob("*")) if parts.is_dir() else []:
        if path.suffix == ".list":
            sources += parse_one_line(path.read_text())
        elif path.suffix == ".sources":
            sources += parse_deb822(path.read_text())
    return sources


def choose(sources: list[Source]) -> Mirrors:
    """The Debian archive (an entry serving a plain release suite) and its security archive, if any."""
    web = [s for s in sources if s.uri.startswith(("http://", "https://"))]
    archive = next((s for s in web if _is_archive(s)), None)
    if archive is None:
        raise SandboxError("no Debian mirror found in this machine's apt sources "
                           "(/etc/apt/sources.list, /etc/apt/sources.list.d/)",
                           hint="set provider.mirror in the spec, e.g. mirror: http://deb.debian.org/debian")
    security = next((s for s in web if any(x.endswith("-security") for x in s.suites)), None)
    return Mirrors(_strip(archive.uri), _strip(security.uri) if security else None,
                   archive.components or ("main",))


def _is_archive(source: Source) -> bool:
    """A Debian archive serves a release suite by its code name or alias (bookworm, stable, sid, ...)."""
    return any(suite in DEBIAN_SUITES for suite in source.suites)


def _strip(uri: str) -> str:
    """A mirror URL without its trailing slash."""
    return uri.rstrip("/")


def resolve(configured: str | None, apt_dir: Path = APT_DIR) -> Mirrors:
    """The spec's mirror if set, else the host's; it must be plain http so the apt proxy can cache it."""
    mirrors = choose(host_sources(apt_dir)) if configured is None else Mirrors(_strip(configured), None)
    if not mirrors.archive.startswith("http://"):
        where = "provider.mirror" if configured else "the Debian mirror in this machine's apt sources"
        raise SandboxError(f"{where}: '{mirrors.archive}' is not an http:// URL; the sandbox's apt proxy "
                           "caches plain http only", hint="set provider.mirror to an http:// mirror, "
                           "e.g. http://deb.debian.org/debian")
    return mirrors

