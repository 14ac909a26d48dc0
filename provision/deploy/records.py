"""Typed options and results of an Ansible run: what to run, then per host and for the whole run."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from provision.deploy.diffs import DiffBlock, FileDiff, fold
from provision.errors import EXIT_CHANGES, EXIT_FAILED, EXIT_OK

SITE_PLAYBOOK = "site.yml"
KEEP_RUNS = 20  # run folders kept under runs/ (about 5 MB per 4-node deploy)


@dataclass
class DeployOptions:
    """The knobs of `provision deploy`."""

    tags: str | None = None
    limit: str | None = None
    check: bool = False
    retry_failed: bool = False
    playbook: str = SITE_PLAYBOOK
    render_inventory: bool = True  # False: the caller rendered it for this cluster just before (`up`)
    rolling_batch: bool = False  # a batch of `deploy --rolling`: held and drained of jobs, so it may reboot
    keep_runs: int = KEEP_RUNS  # run artifact folders kept under the state's runs/ (the newest; this run included)


@dataclass
class HostResult:
    """One host's recap, plus the first task that failed on it and why."""

    host: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    failed_task: str | None = None
    message: str | None = None
    changed_tasks: list[str] = field(default_factory=list)
    diffs: list[FileDiff] = field(default_factory=list)  # check mode: what the changed tasks would write

    @property
    def status(self) -> str:
        """unreachable, failed, changed or ok: the word shown in the recap."""
        if self.unreachable:
            return "unreachable"
        if self.failed:
            return "failed"
        return "changed" if self.changed or self.changed_tasks else "ok"


@dataclass
class DeployResult:
    """A whole run: every host, where its artifacts are, and whether it was a check-mode plan."""

    hosts: list[HostResult]
    artifacts_dir: Path
    rc: int
    check_mode: bool = False
    cancelled: bool = False
    notes: list[str] = field(default_factory=list)  # what went wrong beside the run (its metrics not written)

    @property
    def failed_hosts(self) -> list[str]:
        """Hosts that failed or could not be reached (for --retry-failed)."""
        return [h.host for h in self.hosts if h.status in ("failed", "unreachable")]

    @property
    def changed_hosts(self) -> list[str]:
        """Hosts where a task changed something (in check mode: would change it, commands included)."""
        return [h.host for h in self.hosts if h.changed or h.changed_tasks]

    @property
    def ok(self) -> bool:
        """True when Ansible finished and no host failed."""
        return self.rc == 0 and not self.failed_hosts and not self.cancelled

    @property
    def exit_code(self) -> int:
        """What `provision deploy` exits with: 1 when a host failed, 4 when --check found drift, else 0."""
        if not self.ok:
            return EXIT_FAILED
        return EXIT_CHANGES if self.check_mode and self.changed_hosts else EXIT_OK

    @property
    def diffs(self) -> list[DiffBlock]:
        """Check mode: each task's file diff once, with the hosts that share it."""
        return fold((h.host, h.diffs) for h in self.hosts)

    def as_dict(self) -> dict:
        """JSON form for --json: `rc` is the command's exit code (`ansible_rc` is ansible-playbook's); the diffs
        folded across hosts, so a diff many hosts share is there once."""
        return {"ok": self.ok, "rc": self.exit_code, "ansible_rc": self.rc, "check_mode": self.check_mode,
                "cancelled": self.cancelled, "changed_hosts": self.changed_hosts,
                "artifacts_dir": str(self.artifacts_dir), "failed_hosts": self.failed_hosts,
                "hosts": [{**_host_dict(h), "status": h.status} for h in self.hosts],
                "diffs": [block.as_dict() for block in self.diffs], "notes": list(self.notes)}


def _host_dict(host: HostResult) -> dict:
    """A host's recap for --json; its diffs are in the result's folded `diffs`."""
    data = asdict(host)
    del data["diffs"]
    return data
