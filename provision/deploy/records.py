"""Typed options and results of an Ansible run: what to run, then per host and for the whole run."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

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

    def as_dict(self) -> dict:
        """JSON form for --json."""
        return {"ok": self.ok, "rc": self.rc, "check_mode": self.check_mode, "cancelled": self.cancelled,
                "changed_hosts": self.changed_hosts,
                "artifacts_dir": str(self.artifacts_dir), "failed_hosts": self.failed_hosts,
                "hosts": [{**asdict(h), "status": h.status} for h in self.hosts]}
