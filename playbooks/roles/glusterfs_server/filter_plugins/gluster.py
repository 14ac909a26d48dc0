"""Filters that read the gluster CLI's XML answers (`gluster --xml ...`) into data, so the role decides from fields,
never from matching the CLI's text. Tested against answers recorded from glusterfs 11.1 (tests/fixtures/gluster/).

    gluster_peers(xml)          the trusted pool as this node sees it: [{hostname, hostnames, uuid, connected}]
    gluster_volume(xml, name)   the named volume ({name, started, status, type, replica, bricks, options}, options
                                the volume's reconfigured options {name: value}), or None when the CLI says it does
                                not exist
    gluster_settled(reads, name, peers, connected, options)
                                whether the probe's reads ({pool: XML, volume: XML}, null where glusterd did not
                                answer) show nothing to do: those peers in the pool, at least `connected` peers
                                connected (this node counts), the volume there and started, and every wanted option
                                ({name: value}) set to its value (compared as strings; one the volume does not list
                                differs)
    gluster_options_to_set(volume, options)
                                the wanted options whose value differs from the volume's (gluster_volume's answer,
                                None before the volume exists): [{name, value}], for `gluster volume set` one by one
A text that is not the CLI's XML answer, or an answer reporting another error, fails the task with what it said.
"""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from ansible.errors import AnsibleFilterError

_MISSING_VOLUME = "Volume does not exist"


def _answer(text: str, what: str) -> ElementTree.Element:
    """The <cliOutput> element of an answer; an error naming what was asked when there is none."""
    start = text.find("<?xml") if isinstance(text, str) else -1
    try:
        root = ElementTree.fromstring(text[start:]) if start >= 0 else None
    except ElementTree.ParseError as error:
        raise AnsibleFilterError(f"gluster {what}: the answer is not the CLI's XML ({error})") from None
    if root is None or root.tag != "cliOutput" or root.findtext("opRet") is None:
        raise AnsibleFilterError(f"gluster {what}: no <cliOutput> answer in {str(text)[-300:]!r}")
    return root


def _failed(root: ElementTree.Element) -> str | None:
    return None if root.findtext("opRet", "").strip() == "0" else (root.findtext("opErrstr") or "unknown error")


def gluster_peers(text: str) -> list[dict]:
    """The peers of `gluster --xml pool list` (this node itself as "localhost"), each connected or not."""
    root = _answer(text, "pool list")
    error = _failed(root)
    if error:
        raise AnsibleFilterError(f"gluster pool list: {error}")
    return [{"hostname": peer.findtext("hostname", ""),
             "hostnames": sorted({peer.findtext("hostname", "")}
                                 | {name.text or "" for name in peer.findall("hostnames/hostname")} - {""}),
             "uuid": peer.findtext("uuid", ""),
             "connected": peer.findtext("connected", "0").strip() == "1"}
            for peer in root.findall("peerStatus/peer")]


def gluster_volume(text: str, name: str) -> dict | None:
    """The volume `name` of `gluster --xml volume info NAME`; None when gluster says it does not exist."""
    root = _answer(text, f"volume info {name}")
    error = _failed(root)
    if error:
        if error.strip() == _MISSING_VOLUME:
            return None
        raise AnsibleFilterError(f"gluster volume info {name}: {error}")
    volume = next((v for v in root.findall("volInfo/volumes/volume") if v.findtext("name") == name), None)
    if volume is None:
        return None
    return {"name": name, "status": volume.findtext("statusStr", ""),
            "started": volume.findtext("status", "0").strip() == "1",
            "type": volume.findtext("typeStr", ""), "replica": int(volume.findtext("replicaCount", "1") or 1),
            "bricks": [brick.findtext("name", "") for brick in volume.findall("bricks/brick")],
            "options": _options(volume)}


def _options(volume: ElementTree.Element) -> dict[str, str]:
    """The options set on a <volume> ({name: value}, as gluster wrote them); gluster lists only those reconfigured."""
    return {option.findtext("name", ""): option.findtext("value", "") for option in volume.findall("options/option")
            if option.findtext("name")}


def gluster_options_to_set(volume: dict | None, options: dict | None) -> list[dict]:
    """The wanted options ([{name, value}], strings) whose value is not the volume's, in the order given: an option
    the volume does not list differs, and all of them do when there is no volume yet (None)."""
    have = (volume or {}).get("options") or {}
    return [{"name": str(name), "value": str(value)} for name, value in (options or {}).items()
            if have.get(str(name)) != str(value)]


def gluster_settled(reads: dict | None, name: str, peers: list, connected: int, options: dict | None = None) -> bool:
    """Whether the first storage node has nothing to form: every peer named is in the pool, at least `connected` of
    the pool's entries are connected, the volume exists and is started, and each of the wanted `options` has its
    value on it. False when either read is missing."""
    pool, info = (reads or {}).get("pool"), (reads or {}).get("volume")
    if pool is None or info is None:
        return False
    found = gluster_peers(pool)
    known = {hostname for peer in found for hostname in peer["hostnames"]}
    volume = gluster_volume(info, name)
    return (set(peers) <= known and sum(peer["connected"] for peer in found) >= int(connected)
            and volume is not None and volume["started"] and not gluster_options_to_set(volume, options))


class FilterModule:
    """The role's filters."""

    def filters(self):
        return {"gluster_peers": gluster_peers, "gluster_volume": gluster_volume, "gluster_settled": gluster_settled,
                "gluster_options_to_set": gluster_options_to_set}
