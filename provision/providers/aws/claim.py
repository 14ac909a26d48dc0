"""The cluster's claim on its name in a region: an SSM parameter that only one `up` can create.

`/gpu-provision/clusters/<name>` is created by PutParameter without Overwrite, which AWS refuses with
ParameterAlreadyExists when the name exists, whoever sends it: of two `up`s started together from two state roots
exactly one creates it, and the other stops before it made anything. The value names the holder: the cluster's id
(drawn here at the first `up`, kept in aws.json, tagged on every resource), when, and from which host and state
directory. The id is written to aws.json before the claim is sent, so a retried call, or an `up` resumed after a
crash, that finds the parameter holding its own id knows the claim is its own. `down` releases the claim last, after
its audit found nothing left, so an unfinished `down` keeps the name until it is finished.
"""
from __future__ import annotations

import json
import secrets
import socket
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from provision.adaptors.aws import AlreadyExistsError, Aws
from provision.errors import ClaimError, CloudError, CloudNotFoundError
from provision.providers.aws import tags
from provision.providers.aws.ledger import Ledger
from provision.records import Progress

PREFIX = "/gpu-provision/clusters/"
_TAKE_ATTEMPTS = 2  # a claim released between our refused create and the read that follows it: create once more


@dataclass(frozen=True)
class Claim:
    """Who holds a cluster name in the region."""

    cluster: str
    id: str
    since: str = "?"
    host: str = "?"
    state: str = "?"

    def holder(self) -> str:
        """How the holder is named in messages."""
        return f"cluster id {self.id}, claimed {self.since} from {self.host}:{self.state}"


def parameter(cluster: str) -> str:
    """The SSM parameter that holds a cluster name."""
    return f"{PREFIX}{cluster}"


def is_claim(service: str, resource: str) -> bool:
    """Whether a Resource Groups Tagging API resource (service, `type/name`) is a claim (the audit leaves it)."""
    return service == "ssm" and resource.startswith(f"parameter{PREFIX}")


def new_id() -> str:
    """A fresh cluster id: 16 hex digits (64 random bits)."""
    return secrets.token_hex(8)


def read(aws: Aws, cluster: str) -> Claim | None:
    """The name's claim, or None when nobody holds it."""
    try:
        found = aws.ssm.get_parameter(Name=parameter(cluster))["Parameter"]
    except CloudNotFoundError:
        return None
    try:
        value = json.loads(found.get("Value", ""))
    except ValueError:
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):  # not written by this tool
        return Claim(cluster, id="(not a gpu-provision claim)", since=str(found.get("LastModifiedDate", "?")))
    fields = ("since", "host", "state")
    return Claim(cluster, id=value["id"], **{k: str(value[k]) for k in fields if k in value})


def refuse_taken(aws: Aws, cluster: str, region: str, own: str | None) -> None:
    """ClaimError, naming the holder, when another cluster holds the name (read-only: a check before `up` creates
    anything; `hold` is what makes the name ours)."""
    found = read(aws, cluster)
    if found is not None and found.id != own:
        raise _taken(found, region)


def hold(aws: Aws, ledger: Ledger, region: str, progress: Progress) -> str:
    """Make the name ours before anything is created: take the claim at the first `up` (a fresh id written down
    first), confirm it at every later one; returns the cluster id."""
    cluster = ledger.state.cluster
    if ledger.cluster_id is None:
        ledger.claiming(new_id())
    own = ledger.cluster_id
    found = read(aws, cluster) if ledger.claim_held else None  # not held yet: create first, read if refused
    for _ in range(_TAKE_ATTEMPTS):
        if found is not None:
            break
        found = _take(aws, ledger, own)
    if found is None:
        raise CloudError(f"the claim on '{cluster}' ({parameter(cluster)}) was released as it was being taken",
                         hint="nothing was created; run `provision up` again")
    if found.id != own:
        _refuse(ledger, found, region)
    if not ledger.claim_held:
        progress(f"claimed the name '{cluster}' in {region} as cluster id {own} ({parameter(cluster)})")
        ledger.claimed()
    return own


def release(aws: Aws, cluster: str, own: str | None, progress: Progress, *, any_holder: bool = False) -> None:
    """Delete the claim if it is this cluster's (or, for `--orphans`, whoever's); another holder's stays."""
    found = read(aws, cluster)
    if found is None:
        return
    if found.id != own and not any_holder:
        progress(f"note: the name '{cluster}' is claimed by {found.holder()}, not by this state's cluster; "
                 "its claim is left as it is")
        return
    try:
        aws.ssm.delete_parameter(Name=parameter(cluster))
    except CloudNotFoundError:
        return
    progress(f"released the claim on '{cluster}' ({found.holder()})")


def _take(aws: Aws, ledger: Ledger, own: str) -> Claim | None:
    """Create the claim; if the name exists (another `up` was first, or our own retried call landed), read it."""
    cluster = ledger.state.cluster
    claim = Claim(cluster, own, since=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  host=socket.gethostname(), state=str(ledger.state.path))
    value = {k: v for k, v in asdict(claim).items() if k != "cluster"}
    try:
        aws.ssm.put_parameter(Name=parameter(cluster), Value=json.dumps(value), Type="String",
                              Description=f"gpu-provision: the name of cluster {cluster} is taken",
                              Tags=tags.as_list(tags.Owner(cluster, own).tags("claim")))
    except AlreadyExistsError:
        return read(aws, cluster)
    return claim


def _refuse(ledger: Ledger, found: Claim, region: str) -> None:
    """The ClaimError for a name another cluster holds; an id only intended here is forgotten with its document."""
    if not ledger.claim_held and ledger.is_empty():
        ledger.remove()
        raise _taken(found, region)
    cluster = ledger.state.cluster
    raise ClaimError(f"cluster '{cluster}' is claimed in {region} by {found.holder()} ({parameter(cluster)}), but "
                     f"this state records cluster id {ledger.cluster_id}",
                     hint="this cluster's claim was released elsewhere (`down --orphans`?); nothing was created; "
                          f"`provision down SPEC` here removes only what carries id {ledger.cluster_id}")


def _taken(found: Claim, region: str) -> ClaimError:
    """The ClaimError for an `up` that made nothing yet."""
    return ClaimError(f"cluster '{found.cluster}' is claimed in {region} by {found.holder()} "
                      f"({parameter(found.cluster)}); nothing was created",
                      hint="run `provision up` in that state root, or choose another cluster name; if that cluster's "
                           "state directory is lost, `provision down SPEC --orphans` removes what carries the name, "
                           "and its claim")
