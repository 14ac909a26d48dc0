"""What a pass tells Slurm: drain with a reason naming the failed check, resume what the program drained (its own
reasons, nodehealth.reason), touch nothing else.

Every call is bounded by the pass's deadline, so an unreachable slurmctld ends the pass instead of hanging it.
Slurm's RPCs need a munge credential: when the node's munged is down (the very fault to report), the pass starts a
private munged from the node's key on its own socket for its two calls, and stops it after (`private_munge`).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from provision.certify.probe.nodehealth import reason as own_reason
from provision.certify.probe.nodehealth.config import HealthConfig
from provision.certify.probe.nodehealth.run import Deadline, Done, run

_STATE = re.compile(r"(?:^|\s)State=(?P<state>\S+)")
_REASON = re.compile(r"(?:^|\s)Reason=(?P<reason>.*?)(?:\s+\[[^\]]*@[^\]]*\])?(?:\s+\w+=|$)")
# Slurm ends a reason with [user@time]: up to that, a reason is whole even with "key=value" in it
_REASON_SET = re.compile(r"(?:^|\s)Reason=(?P<reason>.*?)\s\[[^\]\s@]*@[^\]\s]*\](?:\s|$)")


@dataclass(frozen=True)
class NodeState:
    """The node as slurmctld has it: state flags ("IDLE+DRAIN") and the reason ("" when none)."""

    state: str
    reason: str

    @property
    def drained(self) -> bool:
        """Drained or draining (no new job starts)."""
        return any(flag.startswith("DRAIN") for flag in self.state.upper().split("+"))

    @property
    def drained_by_health(self) -> bool:
        """Drained by this program (one of its own reasons)."""
        return self.drained and own_reason.is_own(self.reason)


def parse_node(text: str) -> NodeState | None:
    """State and Reason from `scontrol -o show node` (None when the text has no State=)."""
    state = _STATE.search(text)
    if not state:
        return None
    reason = _REASON_SET.search(text) or _REASON.search(text)
    value = reason["reason"].strip() if reason else ""
    return NodeState(state["state"], "" if value in ("(null)", "none") else value)


class Slurm:
    """scontrol for one node under a deadline (env: where a private munged is used)."""

    def __init__(self, cfg: HealthConfig, deadline: Deadline, env: dict[str, str] | None = None) -> None:
        self.cfg, self.deadline, self.env = cfg, deadline, env

    def _scontrol(self, *args: str) -> Done:
        return run([self.cfg.commands["scontrol"], *args], self.deadline, cap_s=5.0, env=self.env)

    def node(self) -> tuple[NodeState | None, str]:
        """The node's state, or None and why not."""
        done = self._scontrol("-o", "show", "node", self.cfg.node)
        if not done.ok:
            return None, done.first_error()
        found = parse_node(done.stdout)
        return found, "" if found else "scontrol printed no State="

    def drain(self, reason: str) -> Done:
        """Drain the node with this reason."""
        return self._scontrol("update", f"NodeName={self.cfg.node}", "State=DRAIN", f"Reason={reason}")

    def resume(self) -> Done:
        """Return the node to service."""
        return self._scontrol("update", f"NodeName={self.cfg.node}", "State=RESUME")


@contextmanager
def private_munge(cfg: HealthConfig, deadline: Deadline) -> Iterator[dict[str, str] | None]:
    """A munged of our own (the node's key, a private socket) and the env that points scontrol at it (a copy of
    slurm.conf with AuthInfo=socket=...); yields None when it cannot start. Stopped by its pid on leaving."""
    folder = Path(tempfile.mkdtemp(prefix="gpu-provision-health-"))
    try:
        yield _start_munged(cfg, deadline, folder)
    finally:
        _stop(folder / "munged.pid")
        shutil.rmtree(folder, ignore_errors=True)


def _start_munged(cfg: HealthConfig, deadline: Deadline, folder: Path) -> dict[str, str] | None:
    """Start the private munged in `folder` (owned by munge, as munged requires); the env for scontrol, or None."""
    try:
        folder.chmod(0o755)
        shutil.chown(folder, user="munge")
        conf = folder / "slurm.conf"
        lines = [ln for ln in cfg.slurm_conf.read_text().splitlines() if not ln.startswith("AuthInfo=")]
        conf.write_text("\n".join([*lines, f"AuthInfo=socket={folder}/munge.socket", ""]))
    except (OSError, LookupError):
        return None
    started = run([cfg.commands["runuser"], "-u", "munge", "--", cfg.commands["munged"],
                   f"--socket={folder}/munge.socket", f"--pid-file={folder}/munged.pid", f"--seed-file={folder}/seed",
                   f"--log-file={folder}/munged.log", f"--key-file={cfg.munge_key}"], deadline, cap_s=3.0)
    return {**os.environ, "SLURM_CONF": str(conf)} if started.ok else None


def _stop(pid_file: Path, wait_s: float = 1.0) -> None:
    """Stop the private munged by the pid it wrote, and give it a moment to write its seed and go."""
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, IndexError):
        return
    end = time.monotonic() + wait_s
    while time.monotonic() < end and Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
