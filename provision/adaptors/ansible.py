"""The one place ansible-runner is used: run a playbook, stream events, cancel cleanly on SIGTERM."""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner

from provision.errors import DeployError


@dataclass
class PlaybookRun:
    """Everything needed for one ansible-playbook invocation."""

    private_data_dir: Path
    project_dir: Path
    playbook: str
    inventory: Path
    ansible_cfg: Path
    limit: str | None = None
    tags: str | None = None
    check: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    extra_vars: dict[str, object] = field(default_factory=dict)  # ansible-playbook -e (the tool's own, never a spec's)


@dataclass
class RunOutcome:
    """What ansible-runner reported."""

    rc: int
    status: str
    artifacts_dir: Path
    cancelled: bool


class _Cancel:
    """Turns SIGTERM/SIGINT into a graceful cancel of the running playbook."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "_Cancel":
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._previous[signum] = signal.signal(signum, self._request)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _request(self, signum, frame) -> None:
        self.requested = True

    def __call__(self) -> bool:
        return self.requested


def run_playbook(run: PlaybookRun, event_handler: Callable[[dict], bool]) -> RunOutcome:
    """Run ansible-playbook through ansible-runner; SIGTERM stops it and is reported as cancelled."""
    env = {
        "ANSIBLE_CONFIG": str(run.ansible_cfg),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ANSIBLE_NOCOLOR": "1",
        **run.extra_env,
    }
    cmdline = "--check --diff" if run.check else None
    run.private_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _Cancel() as cancel:
        try:
            runner = ansible_runner.run(
                private_data_dir=str(run.private_data_dir), project_dir=str(run.project_dir),
                playbook=run.playbook, inventory=str(run.inventory), envvars=env, limit=run.limit,
                tags=run.tags, cmdline=cmdline, extravars=run.extra_vars or None,
                event_handler=event_handler, cancel_callback=cancel,
                quiet=True, suppress_env_files=True, rotate_artifacts=0,
            )
        except Exception as exc:  # ansible-runner raises plain exceptions for setup problems
            raise DeployError(f"ansible-runner could not start: {exc}",
                              hint=f"see {run.private_data_dir}") from exc
    return RunOutcome(rc=runner.rc if runner.rc is not None else 1, status=runner.status,
                      artifacts_dir=Path(runner.config.artifact_dir), cancelled=cancel.requested)
