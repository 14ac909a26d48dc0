"""The one place ansible-runner is used: run a playbook, stream events, cancel cleanly on SIGTERM.

ansible-playbook gets an allow-listed environment, never ours whole: ansible-runner writes the child's environment
into the run folder (artifacts/<id>/command), and ours may hold cloud credentials. Of the runner's own defaults,
ANSIBLE_HOST_KEY_CHECKING=False is overridden: host keys stay checked.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ansible_runner.interface import init_runner
from ansible_runner.utils import get_callback_dir

from provision.errors import DeployError
from provision.remote.ssh_options import CONFIG_ENV

# From our environment, only what ansible-playbook and ssh need to run as this user, in this locale.
_SESSION_ENV = frozenset({"HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "SSH_AUTH_SOCK",
                          CONFIG_ENV})
# What ansible-runner sets for itself (its event callback, fact cache, artifact folder).
_RUNNER_ENV = frozenset({"ANSIBLE_STDOUT_CALLBACK", "ANSIBLE_RETRY_FILES_ENABLED", "AWX_ISOLATED_DATA_DIR",
                         "ANSIBLE_CACHE_PLUGIN", "ANSIBLE_CACHE_PLUGIN_CONNECTION", "RUNNER_OMIT_EVENTS",
                         "RUNNER_ONLY_FAILED_EVENTS"})


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
    ours = _our_env(run)
    run.private_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _Cancel() as cancel:
        try:
            runner = init_runner(
                private_data_dir=str(run.private_data_dir), project_dir=str(run.project_dir),
                playbook=run.playbook, inventory=str(run.inventory), envvars=ours, limit=run.limit,
                tags=run.tags, cmdline="--check --diff" if run.check else None, extravars=run.extra_vars or None,
                event_handler=event_handler, cancel_callback=cancel,
                quiet=True, suppress_env_files=True, rotate_artifacts=0,
            )
            runner.config.env = child_env(runner.config.env, ours)  # the command file and the child both read it
            runner.run()
        except Exception as exc:  # ansible-runner raises plain exceptions for setup problems
            raise DeployError(f"ansible-runner could not start: {exc}",
                              hint=f"see {run.private_data_dir}") from exc
    return RunOutcome(rc=runner.rc if runner.rc is not None else 1, status=runner.status,
                      artifacts_dir=Path(runner.config.artifact_dir), cancelled=cancel.requested)


def _our_env(run: PlaybookRun) -> dict[str, str]:
    """The settings this tool gives ansible-playbook (they win over anything of the same name)."""
    return {
        "ANSIBLE_CONFIG": str(run.ansible_cfg),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOST_KEY_CHECKING": "True",  # ansible-runner sets False unless told
        "ANSIBLE_CALLBACK_PLUGINS": get_callback_dir(),  # the runner's event callback, without a user's path
        **run.extra_env,
    }


def child_env(prepared: dict[str, str], ours: dict[str, str]) -> dict[str, str]:
    """The environment ansible-playbook runs with: from what ansible-runner prepared (our whole environment and its
    own settings), the session variables, LC_*, and the runner's own settings; then ours. Nothing else: no cloud
    credential, token or user ANSIBLE_* setting reaches the child or the run folder."""
    kept = {name: value for name, value in prepared.items()
            if name in _SESSION_ENV or name in _RUNNER_ENV or name.startswith("LC_")}
    return {**kept, **ours}
